var searchData=
[
  ['cast_0',['Cast',['../classmpx_1_1nn_1_1Cast.html',1,'mpx::nn']]],
  ['config_1',['Config',['../structmpx_1_1experiment_1_1Config.html',1,'mpx::experiment']]],
  ['cuda_2',['Cuda',['../structmpx_1_1Cuda.html',1,'mpx']]],
  ['cuda_5ferror_3',['cuda_error',['../classmpx_1_1cuda__error.html',1,'mpx']]],
  ['cuda_5ftraits_4',['cuda_traits',['../structmpx_1_1cuda__traits.html',1,'mpx']]],
  ['cudacontext_5',['CudaContext',['../classmpx_1_1CudaContext.html',1,'mpx']]],
  ['cudacontextoptions_6',['CudaContextOptions',['../structmpx_1_1CudaContextOptions.html',1,'mpx']]]
];
