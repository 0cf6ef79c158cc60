var searchData=
[
  ['matmul_0',['Matmul',['../structmpx_1_1op_1_1Matmul.html',1,'mpx::op']]],
  ['memory_1',['Memory',['../structmpx_1_1nn_1_1Parameter_1_1Memory.html',1,'mpx::nn::Parameter']]],
  ['memorystats_2',['MemoryStats',['../classmpx_1_1MemoryStats.html',1,'mpx']]],
  ['mseloss_3',['MSELoss',['../classmpx_1_1nn_1_1MSELoss.html',1,'mpx::nn']]]
];
