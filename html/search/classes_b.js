var searchData=
[
  ['nolossscaling_0',['NoLossScaling',['../structmpx_1_1NoLossScaling.html',1,'mpx']]],
  ['normstatistics_1',['NormStatistics',['../structmpx_1_1op_1_1NormStatistics.html',1,'mpx::op']]],
  ['numeric_5ftraits_2',['numeric_traits',['../structmpx_1_1numeric__traits.html',1,'mpx']]]
];
