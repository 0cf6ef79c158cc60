var searchData=
[
  ['backend_0',['Backend',['../structmpx_1_1Backend.html',1,'mpx']]],
  ['backend_3c_20cuda_20_3e_1',['Backend&lt; Cuda &gt;',['../structmpx_1_1Backend_3_01Cuda_01_4.html',1,'mpx']]],
  ['backend_3c_20host_20_3e_2',['Backend&lt; Host &gt;',['../structmpx_1_1Backend_3_01Host_01_4.html',1,'mpx']]],
  ['batch_3',['Batch',['../structmpx_1_1Trainer_1_1Batch.html',1,'mpx::Trainer']]],
  ['batcher_4',['Batcher',['../classmpx_1_1data_1_1Batcher.html',1,'mpx::data']]],
  ['bfloat16_5',['BFloat16',['../structmpx_1_1BFloat16.html',1,'mpx']]]
];
