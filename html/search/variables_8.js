var searchData=
[
  ['idx_5ftype_5funsigned_5fbyte_0',['idx_type_unsigned_byte',['../idx_8hpp.html#a0d3f6210f0966f71615b6d4e13064ba9',1,'mpx::data']]],
  ['init_1',['init',['../structmpx_1_1nn_1_1Linear_1_1Options.html#a30c6853c6a824f7c29bec296b641a878',1,'mpx::nn::Linear::Options']]],
  ['init_5fscale_2',['init_scale',['../structmpx_1_1DynamicLossScaling_1_1Options.html#a651bd1e8034bcce3e538e1d17b1be7d6',1,'mpx::DynamicLossScaling::Options']]],
  ['inputs_3',['inputs',['../structmpx_1_1Trainer_1_1Batch.html#ace6be61075e93461499cdda171258c60',1,'mpx::Trainer::Batch']]],
  ['inputs_5ffinite_4',['inputs_finite',['../structmpx_1_1StepResult.html#a94775b5cf297160fa842c1d6d5f1444f',1,'mpx::StepResult']]],
  ['inputs_5fnonfinite_5',['inputs_nonfinite',['../structmpx_1_1cuda_1_1StepScalars.html#a3781184b32a9db677a6f7fbbcf006c81',1,'mpx::cuda::StepScalars']]],
  ['is_5fdynamic_6',['is_dynamic',['../structmpx_1_1DynamicLossScaling.html#a76f273136dfbf6e790e47d3a5dfe729e',1,'mpx::DynamicLossScaling::is_dynamic()'],['../structmpx_1_1StaticLossScaling.html#a36c703a399753f1be0cdfed8feea0515',1,'mpx::StaticLossScaling::is_dynamic()'],['../structmpx_1_1NoLossScaling.html#ab054d9be3af5e6e203199e8330cdeae5',1,'mpx::NoLossScaling::is_dynamic()']]],
  ['items_7',['items',['../structmpx_1_1io_1_1json_1_1Value.html#a5bfb69a4b60dd6986bae9073cef817d3',1,'mpx::io::json::Value']]]
];
