var searchData=
[
  ['grad_5fnorm_0',['grad_norm',['../structmpx_1_1StepResult.html#aee3b48c9ff3b4cab8e0bd11d9e691f7d',1,'mpx::StepResult']]],
  ['gradient_1',['gradient',['../structmpx_1_1nn_1_1Parameter_1_1Memory.html#a53477d8058803bb9b133dd1c1f4f5cb1',1,'mpx::nn::Parameter::Memory']]],
  ['gradients_2',['gradients',['../structmpx_1_1StepMemory.html#addf81f9314fb13e50e99b16083d8aa83',1,'mpx::StepMemory']]],
  ['gradients_5fnonfinite_3',['gradients_nonfinite',['../structmpx_1_1cuda_1_1StepScalars.html#a412230eb2344be5dccd475810d52ae9e',1,'mpx::cuda::StepScalars']]],
  ['growth_5ffactor_4',['growth_factor',['../structmpx_1_1LossScalerState.html#aeb808067eb8c8850250f6431accbce8d',1,'mpx::LossScalerState::growth_factor()'],['../structmpx_1_1DynamicLossScaling_1_1Options.html#ab1a6d0c87685505e67c238b5bb23281e',1,'mpx::DynamicLossScaling::Options::growth_factor()']]],
  ['growth_5finterval_5',['growth_interval',['../structmpx_1_1LossScalerState.html#a7f8d4096ca501165993ed941a979b5b1',1,'mpx::LossScalerState::growth_interval()'],['../structmpx_1_1DynamicLossScaling_1_1Options.html#a9d0239e6dc3af7eda535348d9e3f694b',1,'mpx::DynamicLossScaling::Options::growth_interval()']]],
  ['growth_5ftracker_6',['growth_tracker',['../structmpx_1_1LossScalerState.html#af951ea97917d97c39bdbd4559e9dbf65',1,'mpx::LossScalerState']]]
];
