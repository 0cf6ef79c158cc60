var searchData=
[
  ['default_5fscaler_5ffor_5ft_0',['default_scaler_for_t',['../loss__scaling_8hpp.html#a0820f64309a86b5e0b7c79fb953bb307',1,'mpx']]],
  ['default_5fscaler_5ft_1',['default_scaler_t',['../loss__scaling_8hpp.html#a1ba74da338a691f27c1115312a8c5f37',1,'mpx']]],
  ['default_5fupdate_5frounding_5ft_2',['default_update_rounding_t',['../precision_8hpp.html#adee837c12543be6a36cc2f48286bf573',1,'mpx']]],
  ['device_5ftype_3',['device_type',['../classmpx_1_1nn_1_1Cast.html#a152ada306269c784eb472b7e8e827fab',1,'mpx::nn::Cast::device_type()'],['../classmpx_1_1nn_1_1LayerNorm.html#a6449c07994643cb6972e86727f736e21',1,'mpx::nn::LayerNorm::device_type()'],['../classmpx_1_1nn_1_1Linear.html#a2d6c15ec0d36c65234d7014118aa2247',1,'mpx::nn::Linear::device_type()'],['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html#a1f7e8533a216f7ed0ad0bb86551a83a0',1,'mpx::nn::SoftmaxCrossEntropy::device_type()'],['../classmpx_1_1nn_1_1MSELoss.html#a7704372f93a6dfb8ee606dd9ee395b8c',1,'mpx::nn::MSELoss::device_type()'],['../classmpx_1_1nn_1_1Sequential.html#ac0065aa385e823c2648b3f5e3becc872',1,'mpx::nn::Sequential::device_type()'],['../classmpx_1_1Tensor.html#adaa633def8089c53db4e083e8b4e46ef',1,'mpx::Tensor::device_type()']]]
];
