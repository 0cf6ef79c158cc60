var searchData=
[
  ['reduction_0',['Reduction',['../structmpx_1_1op_1_1Reduction.html',1,'mpx::op']]],
  ['relu_1',['ReLU',['../classmpx_1_1nn_1_1ReLU.html',1,'mpx::nn']]],
  ['roundnearest_2',['RoundNearest',['../structmpx_1_1RoundNearest.html',1,'mpx']]],
  ['roundstochastic_3',['RoundStochastic',['../structmpx_1_1RoundStochastic.html',1,'mpx']]]
];
