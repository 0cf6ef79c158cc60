var searchData=
[
  ['weight_5fdecay_0',['weight_decay',['../structmpx_1_1SgdSettings.html#a3772cc2e4b21ea5b44cc8b735352e96e',1,'mpx::SgdSettings::weight_decay()'],['../structmpx_1_1AdamWSettings.html#a75058c777f65e095be77e2f65d9e3ef8',1,'mpx::AdamWSettings::weight_decay()']]],
  ['weights_1',['weights',['../structmpx_1_1nn_1_1Parameter_1_1Memory.html#ab51c6f22dfe869d30d448eac03b0e222',1,'mpx::nn::Parameter::Memory::weights()'],['../structmpx_1_1StepMemory.html#a5334c742928b6428ecdd6e70b04bf27c',1,'mpx::StepMemory::weights()']]],
  ['workspace_5fbytes_2',['workspace_bytes',['../structmpx_1_1CudaContextOptions.html#a8bb6236dd145fc1ab4ffc18567936c0c',1,'mpx::CudaContextOptions']]]
];
