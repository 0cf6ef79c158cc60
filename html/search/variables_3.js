var searchData=
[
  ['dampening_0',['dampening',['../structmpx_1_1SgdSettings.html#a996f2bd3eb5d3d6eba7a8235da0648d5',1,'mpx::SgdSettings']]],
  ['device_1',['device',['../structmpx_1_1CudaContextOptions.html#a6f5f1c807b8cc2e1118127788dcdfb03',1,'mpx::CudaContextOptions']]],
  ['dims_2',['dims',['../structmpx_1_1data_1_1IdxArray.html#a98599c836c3d08e173b45c3bbd40de87',1,'mpx::data::IdxArray']]],
  ['diverged_5fat_5fstep_3',['diverged_at_step',['../structmpx_1_1experiment_1_1EpochSummary.html#a4b087b568eccbe18ce2ba93e53dc958f',1,'mpx::experiment::EpochSummary']]],
  ['divisor_4',['divisor',['../structmpx_1_1cuda_1_1LossSeed.html#afd74d985de885b38153803fe5a876dd1',1,'mpx::cuda::LossSeed']]],
  ['dtype_5',['dtype',['../structmpx_1_1io_1_1TensorToWrite.html#aae57c367ca9c722c9deb139e32b62de8',1,'mpx::io::TensorToWrite::dtype()'],['../structmpx_1_1io_1_1TensorEntry.html#a42760c75faa7f84c772bdb1ea9fd5d50',1,'mpx::io::TensorEntry::dtype()']]]
];
