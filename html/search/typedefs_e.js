var searchData=
[
  ['scaling_0',['scaling',['../structmpx_1_1experiment_1_1Config.html#a36644cbcc9a8fdeb643e4316d26bb225',1,'mpx::experiment::Config']]],
  ['storage_1',['storage',['../structmpx_1_1op__precision.html#a6be843f21fe43717712c38196ea917a5',1,'mpx::op_precision']]],
  ['storage_5ft_2',['storage_t',['../traits_8hpp.html#a4aa5b1f5094445e764cf4e6d2dad94a8',1,'mpx']]]
];
