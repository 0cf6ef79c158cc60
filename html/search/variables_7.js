var searchData=
[
  ['has_5fcompute_5fcopy_0',['has_compute_copy',['../classmpx_1_1nn_1_1Parameter.html#a0c334ca0051ea1465cc17fabea06b3a3',1,'mpx::nn::Parameter']]],
  ['has_5fhalf_5fcompute_1',['has_half_compute',['../structmpx_1_1experiment_1_1LayerPrecisions.html#a2f00d260221a57898e8d22cd8cfe1eca',1,'mpx::experiment::LayerPrecisions::has_half_compute()'],['../classmpx_1_1nn_1_1Sequential.html#ab28ad1cc7e31de92edf5b57a849e57b0',1,'mpx::nn::Sequential::has_half_compute()']]],
  ['has_5fmaster_5fcopy_2',['has_master_copy',['../structmpx_1_1Precision.html#a2de8130bef82ef86c78340e9a7c136b3',1,'mpx::Precision']]],
  ['hysteresis_3',['hysteresis',['../structmpx_1_1DynamicLossScaling_1_1Options.html#a48200b7dfba1a059a4ba7d521be61434',1,'mpx::DynamicLossScaling::Options']]],
  ['hysteresis_5ftracker_4',['hysteresis_tracker',['../structmpx_1_1LossScalerState.html#ae9166ce997d6f1d09ef8e129987099ad',1,'mpx::LossScalerState']]]
];
