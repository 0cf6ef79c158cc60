var searchData=
[
  ['tag_5fof_5ft_0',['tag_of_t',['../traits_8hpp.html#a8bafde4383a5f7bf3bde56ff47021113',1,'mpx']]],
  ['target_5ftype_1',['target_type',['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html#a145af4b1379feb51d769e40bdb9654b7',1,'mpx::nn::SoftmaxCrossEntropy::target_type()'],['../classmpx_1_1nn_1_1MSELoss.html#a12b89f0a89386968011c77a98592f016',1,'mpx::nn::MSELoss::target_type()'],['../classmpx_1_1Trainer.html#accd5a4ecbbcbb982f801411bff460b96',1,'mpx::Trainer::target_type()']]],
  ['tf32_2',['tf32',['../precision_8hpp.html#a3893ebfb9c8e48117cdbe329ee0b3865',1,'mpx']]]
];
