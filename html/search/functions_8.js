var searchData=
[
  ['image_0',['image',['../classmpx_1_1data_1_1Dataset.html#a269e9e016babebdde3f9b49eb2476237',1,'mpx::data::Dataset']]],
  ['images_1',['images',['../classmpx_1_1data_1_1Dataset.html#a83ba499e69477fa29d1fef33f9d8df95',1,'mpx::data::Dataset']]],
  ['in_5ffeatures_2',['in_features',['../classmpx_1_1nn_1_1Linear.html#a7a99751c2c6fd38242f73cc175aa623c',1,'mpx::nn::Linear']]],
  ['initialize_3',['initialize',['../classmpx_1_1nn_1_1Cast.html#ab397692493ddd96e1e20a54ea8a4cbad',1,'mpx::nn::Cast::initialize()'],['../classmpx_1_1nn_1_1LayerNorm.html#a867c4364d290a7e54e061775efd762b5',1,'mpx::nn::LayerNorm::initialize()'],['../classmpx_1_1nn_1_1Linear.html#acc1a4cf817109150a7ca73827d074b0f',1,'mpx::nn::Linear::initialize()'],['../classmpx_1_1nn_1_1Sequential.html#a9a00d03213b6cd834ef2cadd2ad4e5dc',1,'mpx::nn::Sequential::initialize()'],['../layer_8hpp.html#aee2914b14e9f3ec5a3877fac5a199218',1,'mpx::nn::initialize()']]],
  ['inverse_5fscale_4',['inverse_scale',['../classmpx_1_1LossScaler.html#a080ccedb9ddbc14f14baa7173a8f2893',1,'mpx::LossScaler']]],
  ['is_5fdevice_5fpointer_5',['is_device_pointer',['../device__array_8hpp.html#a063d62672eeb05c163ed16db6980cbb0',1,'mpx::cuda']]]
];
