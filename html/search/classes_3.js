var searchData=
[
  ['dataset_0',['Dataset',['../classmpx_1_1data_1_1Dataset.html',1,'mpx::data']]],
  ['devicearray_1',['DeviceArray',['../classmpx_1_1cuda_1_1DeviceArray.html',1,'mpx::cuda']]],
  ['devicearray_3c_20mpx_3a_3acuda_3a_3astepscalars_20_3e_2',['DeviceArray&lt; mpx::cuda::StepScalars &gt;',['../classmpx_1_1cuda_1_1DeviceArray.html',1,'mpx::cuda']]],
  ['devicememory_3',['DeviceMemory',['../structmpx_1_1DeviceMemory.html',1,'mpx']]],
  ['double_4',['Double',['../structmpx_1_1Double.html',1,'mpx']]],
  ['dynamiclossscaling_5',['DynamicLossScaling',['../structmpx_1_1DynamicLossScaling.html',1,'mpx']]]
];
