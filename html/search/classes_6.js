var searchData=
[
  ['gelu_0',['GELU',['../classmpx_1_1nn_1_1GELU.html',1,'mpx::nn']]],
  ['gemmconfig_1',['GemmConfig',['../structmpx_1_1GemmConfig.html',1,'mpx']]],
  ['gemmoperands_2',['GemmOperands',['../structmpx_1_1GemmOperands.html',1,'mpx']]],
  ['gemmshape_3',['GemmShape',['../structmpx_1_1GemmShape.html',1,'mpx']]],
  ['gradientstats_4',['GradientStats',['../structmpx_1_1cpu_1_1GradientStats.html',1,'mpx::cpu']]],
  ['gradienttarget_5',['GradientTarget',['../structmpx_1_1nn_1_1Parameter_1_1GradientTarget.html',1,'mpx::nn::Parameter']]],
  ['graph_6',['Graph',['../classmpx_1_1cuda_1_1Graph.html',1,'mpx::cuda']]]
];
