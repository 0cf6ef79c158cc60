var searchData=
[
  ['op_5fmath_5ft_0',['op_math_t',['../op__precision_8hpp.html#a4c86698c813ccc9701ce5fb85af78e26',1,'mpx']]],
  ['op_5fstorage_5ft_1',['op_storage_t',['../op__precision_8hpp.html#ab8e5db681868c0da3fd89662a4514010',1,'mpx']]],
  ['options_2',['Options',['../classmpx_1_1LossScaler.html#ad93cf23c9576d3b9c02505d8e7c9d49b',1,'mpx::LossScaler']]],
  ['output_5ftype_3',['output_type',['../classmpx_1_1nn_1_1Cast.html#abf1a836e75b60fa7a6c939f6a318558b',1,'mpx::nn::Cast::output_type()'],['../classmpx_1_1nn_1_1LayerNorm.html#a1d90dc5f99f1e916283f05103e85b4a1',1,'mpx::nn::LayerNorm::output_type()'],['../classmpx_1_1nn_1_1Linear.html#ac5bac73d4629f9f16e666b8e862c6251',1,'mpx::nn::Linear::output_type()'],['../classmpx_1_1nn_1_1Sequential.html#a61e33e4d5c40dc5dd9f384865bf6ec16',1,'mpx::nn::Sequential::output_type()']]]
];
