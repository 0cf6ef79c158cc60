var searchData=
[
  ['optimizer_0',['optimizer',['../structmpx_1_1io_1_1optimizer__state__names_3_01optim_1_1SGD_3_01Model_01_4_01_4.html#ad7c350a96e2335f30da70c267ad9b3e8',1,'mpx::io::optimizer_state_names&lt; optim::SGD&lt; Model &gt; &gt;::optimizer()'],['../structmpx_1_1io_1_1optimizer__state__names_3_01optim_1_1AdamW_3_01Model_01_4_01_4.html#a776276cf2b14f4ed4b6e4d2bb4a2ae5f',1,'mpx::io::optimizer_state_names&lt; optim::AdamW&lt; Model &gt; &gt;::optimizer()']]],
  ['optimizer_5fstate_1',['optimizer_state',['../structmpx_1_1nn_1_1Parameter_1_1Memory.html#accd35aa75d15eb7aa7cda32f945e8497',1,'mpx::nn::Parameter::Memory::optimizer_state()'],['../structmpx_1_1StepMemory.html#a655db44a871d78b673ddbb45b50db759',1,'mpx::StepMemory::optimizer_state()']]],
  ['optimizer_5fstep_2',['optimizer_step',['../structmpx_1_1cuda_1_1StepScalars.html#ad3bc71a5f3c6972f7c321f74ca6a1128',1,'mpx::cuda::StepScalars']]],
  ['overwrite_3',['overwrite',['../structmpx_1_1nn_1_1Parameter_1_1GradientTarget.html#a5db628b103dfa45c5db65106f1182c89',1,'mpx::nn::Parameter::GradientTarget']]]
];
