var searchData=
[
  ['k_0',['k',['../structmpx_1_1GemmShape.html#a7f941e0341c2f4bec901cc0bed2df3f8',1,'mpx::GemmShape']]],
  ['keys_1',['keys',['../structmpx_1_1io_1_1json_1_1Value.html#a602d2213829c1ea69a20bd85c5eb3ba1',1,'mpx::io::json::Value']]],
  ['kind_2',['kind',['../structmpx_1_1io_1_1json_1_1Value.html#acbcc2b3e8a92026bb1c0a84213c3d666',1,'mpx::io::json::Value::kind()'],['../classmpx_1_1nn_1_1ReLU.html#a9561b221696973f8c1917dc52b17756e',1,'mpx::nn::ReLU::kind()'],['../classmpx_1_1nn_1_1GELU.html#a178c4e6004a24cf6626c963df5c10f67',1,'mpx::nn::GELU::kind()'],['../classmpx_1_1nn_1_1Cast.html#a4894cfc6f775aacd04db0c136372ea34',1,'mpx::nn::Cast::kind()'],['../classmpx_1_1nn_1_1LayerNorm.html#a076b651feabb153c08af4c48677d39a0',1,'mpx::nn::LayerNorm::kind()'],['../classmpx_1_1nn_1_1Linear.html#a466b14632c26abe93075d0da1b96bd67',1,'mpx::nn::Linear::kind()'],['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html#ab1c677e14951a12ce7ac95d39ec94911',1,'mpx::nn::SoftmaxCrossEntropy::kind()'],['../classmpx_1_1nn_1_1MSELoss.html#a67948d3512ad51d8fbe26c7458d80ad3',1,'mpx::nn::MSELoss::kind()']]]
];
