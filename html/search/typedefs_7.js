var searchData=
[
  ['input_5felement_0',['input_element',['../classmpx_1_1Trainer.html#a60953949d5b4131f637418f8c54b6f51',1,'mpx::Trainer']]],
  ['input_5ftype_1',['input_type',['../classmpx_1_1nn_1_1Cast.html#aaadd5336a03cb6d2825d253abdaf7e36',1,'mpx::nn::Cast::input_type()'],['../classmpx_1_1nn_1_1LayerNorm.html#abd4fe101fc6fe70c60f4dbb4fb8ec5e2',1,'mpx::nn::LayerNorm::input_type()'],['../classmpx_1_1nn_1_1Linear.html#a7b30458471b1feac8eababde14ad6293',1,'mpx::nn::Linear::input_type()'],['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html#a877c702c41d5351dbc0a197b2bbf48a7',1,'mpx::nn::SoftmaxCrossEntropy::input_type()'],['../classmpx_1_1nn_1_1MSELoss.html#ae1255e11778bee1dcb59d7d798861396',1,'mpx::nn::MSELoss::input_type()'],['../classmpx_1_1nn_1_1Sequential.html#a3f52dc6f9c4cdec8d56780241011732f',1,'mpx::nn::Sequential::input_type()']]]
];
