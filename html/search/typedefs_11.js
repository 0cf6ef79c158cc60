var searchData=
[
  ['value_5ftype_0',['value_type',['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html#a4664278076d83afb7f6934c03d72e6a1',1,'mpx::nn::SoftmaxCrossEntropy::value_type()'],['../classmpx_1_1nn_1_1MSELoss.html#af31625c54fc292264306879f99c08fab',1,'mpx::nn::MSELoss::value_type()'],['../classmpx_1_1Tensor.html#aabc3799dc785c47c2c84fcbf7384bdda',1,'mpx::Tensor::value_type()']]],
  ['vectormap_1',['VectorMap',['../classmpx_1_1Tensor.html#afa773ad7072319b81941f422d6d85bab',1,'mpx::Tensor']]]
];
