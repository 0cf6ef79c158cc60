var searchData=
[
  ['accuracy_0',['accuracy',['../structmpx_1_1experiment_1_1Evaluation.html#a80f11a4ce0f87c04642500123738e8cc',1,'mpx::experiment::Evaluation::accuracy()'],['../structmpx_1_1experiment_1_1EpochSummary.html#ab050dd594e21a7bb2597edf745fe08b2',1,'mpx::experiment::EpochSummary::accuracy()']]],
  ['activation_1',['activation',['../classmpx_1_1nn_1_1Linear.html#ad4da039dd7953ef9c4b500a02c58b3c6',1,'mpx::nn::Linear']]],
  ['activations_2',['activations',['../structmpx_1_1StepMemory.html#a478769448905cd94a44384f352732090',1,'mpx::StepMemory']]],
  ['allows_5ffp16_5funderflow_3',['allows_fp16_underflow',['../structmpx_1_1AllowFp16Underflow.html#aa3e52f88dde55b0f75bfda6adcba22be',1,'mpx::AllowFp16Underflow']]],
  ['alpha_4',['alpha',['../structmpx_1_1GemmConfig.html#a38bb7958eb263140eeda34d6cc754c31',1,'mpx::GemmConfig']]],
  ['aux_5',['aux',['../structmpx_1_1GemmOperands.html#a2a8b66fb3e8f8a328cad9c638f5f6c51',1,'mpx::GemmOperands']]]
];
