var searchData=
[
  ['accumulate_5fforward_5fbackward_0',['accumulate_forward_backward',['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html#adb9c942d5bcce7b52b2d970c0ffaccdd',1,'mpx::nn::SoftmaxCrossEntropy::accumulate_forward_backward()'],['../classmpx_1_1nn_1_1MSELoss.html#a330e04eb3b10ceed41f1a40b06f92c78',1,'mpx::nn::MSELoss::accumulate_forward_backward()']]],
  ['accumulate_5ft_1',['accumulate_t',['../precision_8hpp.html#aa4894f8291cf0267644e48c41f4d7272',1,'mpx']]],
  ['accumulate_5ftype_2',['accumulate_type',['../structmpx_1_1Precision.html#a218a9586625c1f826b41f69b5ca480cf',1,'mpx::Precision']]],
  ['accuracy_3',['accuracy',['../structmpx_1_1experiment_1_1Evaluation.html#a80f11a4ce0f87c04642500123738e8cc',1,'mpx::experiment::Evaluation::accuracy()'],['../structmpx_1_1experiment_1_1EpochSummary.html#ab050dd594e21a7bb2597edf745fe08b2',1,'mpx::experiment::EpochSummary::accuracy()']]],
  ['activation_4',['Activation',['../layer_8hpp.html#a306190f3c7dff43f42fc5a9478ecef57',1,'mpx::nn']]],
  ['activation_5',['activation',['../classmpx_1_1nn_1_1Linear.html#ad4da039dd7953ef9c4b500a02c58b3c6',1,'mpx::nn::Linear']]],
  ['activation_6',['Activation',['../structmpx_1_1op_1_1Activation.html',1,'mpx::op']]],
  ['activation_2ecuh_7',['activation.cuh',['../activation_8cuh.html',1,'']]],
  ['activation_2ehpp_8',['activation.hpp',['../backend_2cpu_2activation_8hpp.html',1,'(Global Namespace)'],['../nn_2activation_8hpp.html',1,'(Global Namespace)']]],
  ['activations_9',['activations',['../structmpx_1_1StepMemory.html#a478769448905cd94a44384f352732090',1,'mpx::StepMemory']]],
  ['adamw_10',['AdamW',['../classmpx_1_1optim_1_1AdamW.html#a87a7b42bfa9ca2c2b739ec7717f69b5b',1,'mpx::optim::AdamW::AdamW()'],['../classmpx_1_1optim_1_1AdamW.html',1,'mpx::optim::AdamW&lt; Model &gt;']]],
  ['adamw_2ehpp_11',['adamw.hpp',['../adamw_8hpp.html',1,'']]],
  ['adamw_5fupdate_12',['adamw_update',['../optimizer_8hpp.html#a85d0e85393f8cf13757dd85e4fdf7c24',1,'mpx::cpu']]],
  ['adamwsettings_13',['AdamWSettings',['../structmpx_1_1AdamWSettings.html',1,'mpx']]],
  ['add_5finto_14',['add_into',['../structmpx_1_1Backend_3_01Host_01_4.html#ae6ac4600284935c1a0701b76980faf2a',1,'mpx::Backend&lt; Host &gt;::add_into()'],['../tensor__ops_8cuh.html#a91323a3014fd21b122fd60ed7704f3e5',1,'mpx::cuda::add_into()']]],
  ['allocation_5fcount_15',['allocation_count',['../classmpx_1_1MemoryStats.html#ad5e05ddd518cf06149d06f034a8703d0',1,'mpx::MemoryStats']]],
  ['allowfp16underflow_16',['AllowFp16Underflow',['../structmpx_1_1AllowFp16Underflow.html',1,'mpx']]],
  ['allows_5ffp16_5funderflow_17',['allows_fp16_underflow',['../structmpx_1_1AllowFp16Underflow.html#aa3e52f88dde55b0f75bfda6adcba22be',1,'mpx::AllowFp16Underflow']]],
  ['alpha_18',['alpha',['../structmpx_1_1GemmConfig.html#a38bb7958eb263140eeda34d6cc754c31',1,'mpx::GemmConfig']]],
  ['atomic_5ffile_2ehpp_19',['atomic_file.hpp',['../atomic__file_8hpp.html',1,'']]],
  ['aux_20',['aux',['../structmpx_1_1GemmOperands.html#a2a8b66fb3e8f8a328cad9c638f5f6c51',1,'mpx::GemmOperands']]]
];
