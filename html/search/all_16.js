var searchData=
[
  ['warning_0',['Warning',['../log_8hpp.html#abc3c7776a9294e2d2a080c83445870f9a0eaadb4fcb48a0a0ed7bc9868be9fbaa',1,'mpx']]],
  ['weight_1',['weight',['../classmpx_1_1nn_1_1Linear.html#a69c35f3f8b41d96479e49bc609de998c',1,'mpx::nn::Linear']]],
  ['weight_5fdecay_2',['weight_decay',['../structmpx_1_1SgdSettings.html#a3772cc2e4b21ea5b44cc8b735352e96e',1,'mpx::SgdSettings::weight_decay()'],['../structmpx_1_1AdamWSettings.html#a75058c777f65e095be77e2f65d9e3ef8',1,'mpx::AdamWSettings::weight_decay()']]],
  ['weights_3',['weights',['../structmpx_1_1nn_1_1Parameter_1_1Memory.html#ab51c6f22dfe869d30d448eac03b0e222',1,'mpx::nn::Parameter::Memory::weights()'],['../structmpx_1_1StepMemory.html#a5334c742928b6428ecdd6e70b04bf27c',1,'mpx::StepMemory::weights()']]],
  ['workspace_4',['workspace',['../classmpx_1_1CudaContext.html#ae45d4d5e2b715d8a95e1e74354f99a0c',1,'mpx::CudaContext']]],
  ['workspace_5fbytes_5',['workspace_bytes',['../structmpx_1_1CudaContextOptions.html#a8bb6236dd145fc1ab4ffc18567936c0c',1,'mpx::CudaContextOptions::workspace_bytes()'],['../classmpx_1_1CudaContext.html#a62cd904667b8a84754c86fc6119bd5e2',1,'mpx::CudaContext::workspace_bytes()']]],
  ['write_5fcsv_6',['write_csv',['../records_8hpp.html#adbb4328db2984c4f7849820411e3d4c1',1,'mpx::experiment']]],
  ['write_5ffile_5fatomically_7',['write_file_atomically',['../atomic__file_8hpp.html#a4072b480ec5a7f86919a4ba389155b54',1,'mpx::io']]],
  ['write_5fjson_8',['write_json',['../records_8hpp.html#a5abf5d3801cb300fb71431aec20e059f',1,'mpx::experiment']]],
  ['writes_5faux_9',['writes_aux',['../gemm__spec_8hpp.html#adaa4249edbbcaf942161afcbdd83e8b4',1,'mpx']]],
  ['writes_5fbias_5fgrad_10',['writes_bias_grad',['../gemm__spec_8hpp.html#af79007dc0ce47b918279965d91a01716',1,'mpx']]]
];
