var searchData=
[
  ['plan_5fdefault_5fscaler_5ft_0',['plan_default_scaler_t',['../sweep_8hpp.html#aa8846fa69697131b1dedc0aa0e21c959',1,'mpx::experiment']]],
  ['policy_1',['policy',['../classmpx_1_1LossScaler.html#ac73c5335c8e297a1be51e49c9b8d1f3a',1,'mpx::LossScaler']]],
  ['precision_2',['precision',['../structmpx_1_1experiment_1_1Config.html#a499813e3caaea873ded342b53d136f4e',1,'mpx::experiment::Config::precision()'],['../classmpx_1_1nn_1_1LayerNorm.html#a61c0790c758226cfc775d26dc451dc52',1,'mpx::nn::LayerNorm::precision()'],['../classmpx_1_1nn_1_1Linear.html#a3bb491cc634bfb846b95a0c176753721',1,'mpx::nn::Linear::precision()'],['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html#abaa493264324fe7a017f5764e697c8ff',1,'mpx::nn::SoftmaxCrossEntropy::precision()'],['../classmpx_1_1nn_1_1MSELoss.html#a9c389a3ddd9fecbc5ef9dd185b043609',1,'mpx::nn::MSELoss::precision()'],['../classmpx_1_1nn_1_1Parameter.html#aab2396f68e72abb92647292d1e7fcdb0',1,'mpx::nn::Parameter::precision()'],['../classmpx_1_1nn_1_1Sequential.html#a55a7f3ea80da89c549d909c4f117f4f8',1,'mpx::nn::Sequential::precision()']]]
];
