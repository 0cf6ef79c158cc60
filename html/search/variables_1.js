var searchData=
[
  ['backoff_5ffactor_0',['backoff_factor',['../structmpx_1_1LossScalerState.html#ad2b0be9843b19b0a9d299c963050380c',1,'mpx::LossScalerState::backoff_factor()'],['../structmpx_1_1DynamicLossScaling_1_1Options.html#abde63c2cd9e67baa6ed838bc75daaa5f',1,'mpx::DynamicLossScaling::Options::backoff_factor()']]],
  ['backoffs_1',['backoffs',['../structmpx_1_1LossScalerState.html#a9d5547cf5f59c8b13b6ab5e34882e84f',1,'mpx::LossScalerState']]],
  ['batch_5fsize_2',['batch_size',['../structmpx_1_1data_1_1Batcher_1_1Options.html#a87406c2f230ba7da62140b49ed06c02f',1,'mpx::data::Batcher::Options']]],
  ['begin_3',['begin',['../structmpx_1_1io_1_1TensorEntry.html#ad2a8201eb8fdc103f74fea08f66dae8c',1,'mpx::io::TensorEntry']]],
  ['beta_4',['beta',['../structmpx_1_1GemmConfig.html#a370c1d427bbbf74bc4d75143cb6acf0f',1,'mpx::GemmConfig']]],
  ['beta1_5',['beta1',['../structmpx_1_1AdamWSettings.html#a636f31f9736325a8c0b11b57077504c0',1,'mpx::AdamWSettings']]],
  ['beta2_6',['beta2',['../structmpx_1_1AdamWSettings.html#a3b863ca8c95f6223a265fe44738d01e6',1,'mpx::AdamWSettings']]],
  ['bias_7',['bias',['../structmpx_1_1GemmOperands.html#a686a29040afe912a786a5dcb33768930',1,'mpx::GemmOperands::bias()'],['../structmpx_1_1nn_1_1Linear_1_1Options.html#a3b2b43eecf5af546e63bf95f98ed0083',1,'mpx::nn::Linear::Options::bias()']]],
  ['bias_5fgrad_8',['bias_grad',['../structmpx_1_1GemmOperands.html#aee61c503623eef34023ece8b45515376',1,'mpx::GemmOperands']]],
  ['boolean_9',['boolean',['../structmpx_1_1io_1_1json_1_1Value.html#ab9abac3f216214aad4d76fa0dbf76f9e',1,'mpx::io::json::Value']]],
  ['bytes_10',['bytes',['../structmpx_1_1data_1_1IdxArray.html#a3e2edc852ca4037575fb370730c9c2e0',1,'mpx::data::IdxArray::bytes()'],['../structmpx_1_1io_1_1TensorToWrite.html#a616dbde3464d5c492ef447ba67144306',1,'mpx::io::TensorToWrite::bytes()']]]
];
