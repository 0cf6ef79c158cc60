var searchData=
[
  ['master_0',['master',['../classmpx_1_1nn_1_1Parameter.html#ae88db5ab99741af92605328c91111cc6',1,'mpx::nn::Parameter::master() noexcept'],['../classmpx_1_1nn_1_1Parameter.html#a7bad1c776b2119cea836b0f2325df587',1,'mpx::nn::Parameter::master() const noexcept']]],
  ['matrix_1',['matrix',['../classmpx_1_1Tensor.html#a6aeaa60735a542299696b85f1d393fad',1,'mpx::Tensor::matrix() noexcept'],['../classmpx_1_1Tensor.html#a2523a07dd0c80657397740bb7d73f0b0',1,'mpx::Tensor::matrix() const noexcept']]],
  ['memory_2',['memory',['../classmpx_1_1nn_1_1Parameter.html#a3d050cfbbddcfe32e2fafb7ca978a585',1,'mpx::nn::Parameter']]],
  ['memory_5fstats_3',['memory_stats',['../memory__stats_8hpp.html#a1c919de3e708a61d41291a5f5979f5f0',1,'mpx']]],
  ['metadata_4',['metadata',['../classmpx_1_1io_1_1SafetensorsFile.html#a37d45e8e6687c329b64d75b90569b577',1,'mpx::io::SafetensorsFile']]],
  ['mlp3_5',['mlp3',['../models_8hpp.html#ad6c1e544120ded4f0593429f74ad6e17',1,'mpx::experiment']]],
  ['mlp3_5flayer_5fnorm_6',['mlp3_layer_norm',['../models_8hpp.html#ad0a87ecb64aeb9700567bc28e8b64465',1,'mpx::experiment']]],
  ['model_7',['model',['../classmpx_1_1Trainer.html#aafce510d7b52554794e507ec56698735',1,'mpx::Trainer']]],
  ['mse_5floss_8',['mse_loss',['../mse__loss_8hpp.html#a713d98c87501500be3276db3d579ad20',1,'mpx::cpu::mse_loss()'],['../mse__loss_8cuh.html#ae01657913e1d348c48ed9dc2164c0d7a',1,'mpx::cuda::mse_loss(const Tensor&lt; T, Cuda &gt; &amp;prediction, const Tensor&lt; U, Cuda &gt; &amp;target, LossSeed seed, std::type_identity_t&lt; Tensor&lt; T, Cuda &gt; &gt; *dprediction, Tensor&lt; math_t&lt; tag_of_t&lt; T &gt; &gt;, Cuda &gt; &amp;partials, double *loss_sum)'],['../mse__loss_8cuh.html#a68763bba93cbf812edaed300a4ec6029',1,'mpx::cuda::mse_loss(const Tensor&lt; T, Cuda &gt; &amp;prediction, const Tensor&lt; U, Cuda &gt; &amp;target, float grad_seed, std::type_identity_t&lt; Tensor&lt; T, Cuda &gt; &gt; *dprediction)']]]
];
