var searchData=
[
  ['half_0',['Half',['../structmpx_1_1Half.html',1,'mpx']]],
  ['has_5fcompute_5fcopy_1',['has_compute_copy',['../classmpx_1_1nn_1_1Parameter.html#a0c334ca0051ea1465cc17fabea06b3a3',1,'mpx::nn::Parameter']]],
  ['has_5fhalf_5fcompute_2',['has_half_compute',['../structmpx_1_1experiment_1_1LayerPrecisions.html#a2f00d260221a57898e8d22cd8cfe1eca',1,'mpx::experiment::LayerPrecisions::has_half_compute()'],['../classmpx_1_1nn_1_1Sequential.html#ab28ad1cc7e31de92edf5b57a849e57b0',1,'mpx::nn::Sequential::has_half_compute()']]],
  ['has_5fmaster_5fcopy_3',['has_master_copy',['../structmpx_1_1Precision.html#a2de8130bef82ef86c78340e9a7c136b3',1,'mpx::Precision']]],
  ['has_5fstate_4',['has_state',['../classmpx_1_1nn_1_1Parameter.html#a4934c7414136368811fe1bf1e83ff8e3',1,'mpx::nn::Parameter']]],
  ['head_5',['head',['../structmpx_1_1experiment_1_1LayerPrecisions.html#a65701298dad50400ee6c321d01441922',1,'mpx::experiment::LayerPrecisions']]],
  ['host_6',['Host',['../structmpx_1_1Host.html',1,'mpx']]],
  ['host_5fmemory_2ehpp_7',['host_memory.hpp',['../host__memory_8hpp.html',1,'']]],
  ['hysteresis_8',['hysteresis',['../structmpx_1_1DynamicLossScaling_1_1Options.html#a48200b7dfba1a059a4ba7d521be61434',1,'mpx::DynamicLossScaling::Options']]],
  ['hysteresis_5ftracker_9',['hysteresis_tracker',['../structmpx_1_1LossScalerState.html#ae9166ce997d6f1d09ef8e129987099ad',1,'mpx::LossScalerState']]]
];
