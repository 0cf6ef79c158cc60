var searchData=
[
  ['validate_0',['validate',['../structmpx_1_1data_1_1Batcher_1_1Options.html#afae1bcb287a1ff3d90da7c45ea3be4ae',1,'mpx::data::Batcher::Options::validate()'],['../classmpx_1_1optim_1_1AdamW.html#a88bdaf6ec09ed99877ecf99644d5c979',1,'mpx::optim::AdamW::validate()'],['../classmpx_1_1optim_1_1SGD.html#ac22b2e6baf1e6243a313a420e70a07f8',1,'mpx::optim::SGD::validate()'],['../structmpx_1_1DynamicLossScaling_1_1Options.html#a664a02881b1c1ca80d8e3007b8dd5285',1,'mpx::DynamicLossScaling::Options::validate()'],['../structmpx_1_1StaticLossScaling_1_1Options.html#a8833706ed4934fc96f6a4acd9303773b',1,'mpx::StaticLossScaling::Options::validate()'],['../structmpx_1_1NoLossScaling_1_1Options.html#a895d403f28e450564f3f68da542030a2',1,'mpx::NoLossScaling::Options::validate()']]],
  ['validate_5fgemm_1',['validate_gemm',['../gemm__spec_8hpp.html#aca23c0db89c693e3f0c905e041a6fa7a',1,'mpx']]],
  ['validate_5fgemm_5fshapes_2',['validate_gemm_shapes',['../gemm__spec_8hpp.html#aa9870d92bf32d08bd59f6594b0b4c549',1,'mpx']]],
  ['value_3',['Value',['../structmpx_1_1io_1_1json_1_1Value.html',1,'mpx::io::json']]],
  ['value_4',['value',['../structmpx_1_1cuda_1_1LossSeed.html#ac33831a09118f41b4ff6a4a339e1cb14',1,'mpx::cuda::LossSeed']]],
  ['value_5ftype_5',['value_type',['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html#a4664278076d83afb7f6934c03d72e6a1',1,'mpx::nn::SoftmaxCrossEntropy::value_type()'],['../classmpx_1_1Tensor.html#aabc3799dc785c47c2c84fcbf7384bdda',1,'mpx::Tensor::value_type()'],['../classmpx_1_1nn_1_1MSELoss.html#af31625c54fc292264306879f99c08fab',1,'mpx::nn::MSELoss::value_type()']]],
  ['values_6',['values',['../classmpx_1_1Tensor.html#a5820d4224e712907ca067bd75a84abcd',1,'mpx::Tensor::values() noexcept'],['../classmpx_1_1Tensor.html#a5b703fa8e27876f9debbbbb0dfcdf5a1',1,'mpx::Tensor::values() const noexcept']]],
  ['vector_7',['vector',['../classmpx_1_1Tensor.html#af2d627ba1c40cff403065801c490c470',1,'mpx::Tensor::vector() noexcept'],['../classmpx_1_1Tensor.html#a73f4b4b75663307d8e8cda83422f2454',1,'mpx::Tensor::vector() const noexcept']]],
  ['vectormap_8',['VectorMap',['../classmpx_1_1Tensor.html#afa773ad7072319b81941f422d6d85bab',1,'mpx::Tensor']]],
  ['version_9',['Version',['../structmpx_1_1Version.html',1,'mpx']]]
];
