var searchData=
[
  ['targets_0',['targets',['../structmpx_1_1Trainer_1_1Batch.html#acb54cd762e304cf72ee36ff2c885cdb5',1,'mpx::Trainer::Batch']]],
  ['tensor_1',['tensor',['../structmpx_1_1nn_1_1Parameter_1_1GradientTarget.html#a0da1b92f7ae3a6b532788d954f992692',1,'mpx::nn::Parameter::GradientTarget']]],
  ['test_2',['test',['../structmpx_1_1data_1_1FashionMnist.html#a841a86d27ad7ff31c0347309c8fd1d76',1,'mpx::data::FashionMnist']]],
  ['text_3',['text',['../structmpx_1_1io_1_1json_1_1Value.html#aa46c042515f6d8c47d808b224c9fef95',1,'mpx::io::json::Value']]],
  ['train_4',['train',['../structmpx_1_1data_1_1FashionMnist.html#adebee89e003ee9beee44ddb7cdb9d106',1,'mpx::data::FashionMnist']]],
  ['transpose_5fa_5',['transpose_a',['../structmpx_1_1GemmConfig.html#a3ee4d12fed3d00ee051a17bf8e5d1b37',1,'mpx::GemmConfig']]],
  ['transpose_5fb_6',['transpose_b',['../structmpx_1_1GemmConfig.html#a8fb9845ab5ebfdcc109e779703f153b4',1,'mpx::GemmConfig']]]
];
