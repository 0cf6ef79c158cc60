var searchData=
[
  ['backward_0',['backward',['../classmpx_1_1nn_1_1Cast.html#a0c6dba668852399768517af9263a7121',1,'mpx::nn::Cast::backward()'],['../classmpx_1_1nn_1_1LayerNorm.html#ab8e9c043626570844c481bbd129f891d',1,'mpx::nn::LayerNorm::backward()'],['../classmpx_1_1nn_1_1Linear.html#a2260a98a28a83e52228877c4035c64e9',1,'mpx::nn::Linear::backward()'],['../classmpx_1_1nn_1_1Sequential.html#af28ff15d49d14dd84d47c214326631d2',1,'mpx::nn::Sequential::backward()']]],
  ['backward_5fkernel_1',['backward_kernel',['../classmpx_1_1nn_1_1ReLU.html#a080b364cafaa8dec9fcc883b9306b5c4',1,'mpx::nn::ReLU::backward_kernel()'],['../classmpx_1_1nn_1_1GELU.html#abaf77eecbf8b69c197dd14f4002197ad',1,'mpx::nn::GELU::backward_kernel()']]],
  ['batcher_2',['Batcher',['../classmpx_1_1data_1_1Batcher.html#a8bff2099a1171f189554f7e7462042a2',1,'mpx::data::Batcher::Batcher(const Dataset &amp;dataset, const Options &amp;options)'],['../classmpx_1_1data_1_1Batcher.html#a27c26dc45fcca4da2a4ab269044d7c7e',1,'mpx::data::Batcher::Batcher(const Dataset &amp;&amp;, const Options &amp;)=delete']]],
  ['batcher_5fstate_3',['batcher_state',['../checkpoint_8hpp.html#a7b569e9387fca806cbd8019a0bce37f8',1,'mpx::io']]],
  ['batches_5fper_5fepoch_4',['batches_per_epoch',['../classmpx_1_1data_1_1Batcher.html#a4925ce77bf2a9d8e8542b873852706b8',1,'mpx::data::Batcher']]],
  ['begin_5fstep_5',['begin_step',['../classmpx_1_1TrainingState_3_01Cuda_00_01Grad_01_4.html#a81ddeaf3d23b58f784475fda0f70608a',1,'mpx::TrainingState&lt; Cuda, Grad &gt;']]],
  ['bias_6',['bias',['../classmpx_1_1nn_1_1Linear.html#a55015c9b656276f9bcd49c7f79c3a979',1,'mpx::nn::Linear']]],
  ['bits_5fof_7',['bits_of',['../rounding_8hpp.html#ae5e0723e5b315936147e52cdaf09a199',1,'mpx']]],
  ['bytes_5fper_5fparameter_8',['bytes_per_parameter',['../structmpx_1_1StepMemory.html#ae1266b20fa13576574af623ebb6e2fb3',1,'mpx::StepMemory']]]
];
