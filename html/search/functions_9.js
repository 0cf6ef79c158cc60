var searchData=
[
  ['labels_0',['labels',['../classmpx_1_1data_1_1Dataset.html#a23aff5a36af4d97cf3fdc6186908ed1b',1,'mpx::data::Dataset']]],
  ['last_5foutput_1',['last_output',['../classmpx_1_1nn_1_1Sequential.html#a818fe6825a95fa83e1f9a5b3d4fb3127',1,'mpx::nn::Sequential']]],
  ['last_5fresult_2',['last_result',['../classmpx_1_1Trainer.html#af3db064af565716f7706aec254361969',1,'mpx::Trainer']]],
  ['launch_3',['launch',['../classmpx_1_1cuda_1_1Graph.html#af32c051a7031a6d8574c2df9bde6b7d9',1,'mpx::cuda::Graph']]],
  ['layer_4',['layer',['../classmpx_1_1nn_1_1Sequential.html#a3e53e739b2b436a88c1f3a13a914f5b7',1,'mpx::nn::Sequential']]],
  ['layer_5fnorm_5fbackward_5',['layer_norm_backward',['../layer__norm_8cuh.html#a60ef62eee37f8f0153b179813b73c00f',1,'mpx::cuda::layer_norm_backward()'],['../backend_2cpu_2layer__norm_8hpp.html#aa5876c2d6a2efb03a68ad0e3a2c1bb95',1,'mpx::cpu::layer_norm_backward()']]],
  ['layer_5fnorm_5fforward_6',['layer_norm_forward',['../layer__norm_8cuh.html#a7e5b482d7b269d344b6740ffb9c6e6e5',1,'mpx::cuda::layer_norm_forward()'],['../backend_2cpu_2layer__norm_8hpp.html#aa7d10012a4fafb215f20b50e725e3a78',1,'mpx::cpu::layer_norm_forward()']]],
  ['layernorm_7',['LayerNorm',['../classmpx_1_1nn_1_1LayerNorm.html#a63ca714aa9cab683f5e6f1208b279bf1',1,'mpx::nn::LayerNorm']]],
  ['linear_8',['Linear',['../classmpx_1_1nn_1_1Linear.html#a3c1b054991977dc5eecd3bffcea0daec',1,'mpx::nn::Linear']]],
  ['live_5fat_5fstart_9',['live_at_start',['../classmpx_1_1PeakWindow.html#a016f34fe9d7a2c67e7c182cabdd04901',1,'mpx::PeakWindow']]],
  ['live_5fbytes_10',['live_bytes',['../classmpx_1_1MemoryStats.html#a1ae36663974f3e436bb43d325a1bc071',1,'mpx::MemoryStats']]],
  ['load_5fcheckpoint_11',['load_checkpoint',['../checkpoint_8hpp.html#ab5a88026ba6826bb81d3800cdb7bccd6',1,'mpx::io']]],
  ['load_5ffashion_5fmnist_12',['load_fashion_mnist',['../fashion__mnist_8hpp.html#a7dc7ecf8f3c7c04e1f03022b1642b907',1,'mpx::data']]],
  ['load_5fsafetensors_13',['load_safetensors',['../safetensors_8hpp.html#afd5b86c2c3523313886e52eaea2ac019',1,'mpx::io']]],
  ['load_5fstate_14',['load_state',['../classmpx_1_1LossScaler.html#ae9e71a1747befdb0e0a53cdd8da3c252',1,'mpx::LossScaler']]],
  ['log_15',['log',['../log_8hpp.html#a34e0ff6f6c0dd0ffaf24aff06093f995',1,'mpx']]],
  ['loss_5fseed_16',['loss_seed',['../classmpx_1_1TrainingState_3_01Cuda_00_01Grad_01_4.html#a5d873747b4b11faf7adf2e646bf48438',1,'mpx::TrainingState&lt; Cuda, Grad &gt;']]],
  ['loss_5fsum_17',['loss_sum',['../classmpx_1_1TrainingState_3_01Cuda_00_01Grad_01_4.html#a2381a3e9beb7b205968fb1e0de1069d5',1,'mpx::TrainingState&lt; Cuda, Grad &gt;']]],
  ['lossscaler_18',['LossScaler',['../classmpx_1_1LossScaler.html#a4aaa486b3d619c80f96d282554463f74',1,'mpx::LossScaler']]]
];
