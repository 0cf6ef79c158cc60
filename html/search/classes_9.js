var searchData=
[
  ['layernorm_0',['LayerNorm',['../classmpx_1_1nn_1_1LayerNorm.html',1,'mpx::nn']]],
  ['layerprecisions_1',['LayerPrecisions',['../structmpx_1_1experiment_1_1LayerPrecisions.html',1,'mpx::experiment']]],
  ['linear_2',['Linear',['../classmpx_1_1nn_1_1Linear.html',1,'mpx::nn']]],
  ['logsoftmax_3',['LogSoftmax',['../structmpx_1_1op_1_1LogSoftmax.html',1,'mpx::op']]],
  ['loss_4',['Loss',['../structmpx_1_1op_1_1Loss.html',1,'mpx::op']]],
  ['lossscaler_5',['LossScaler',['../classmpx_1_1LossScaler.html',1,'mpx']]],
  ['lossscaler_3c_20model_5fdefault_5fscaler_5ft_3c_20model_20_3e_20_3e_6',['LossScaler&lt; model_default_scaler_t&lt; Model &gt; &gt;',['../classmpx_1_1LossScaler.html',1,'mpx']]],
  ['lossscalerstate_7',['LossScalerState',['../structmpx_1_1LossScalerState.html',1,'mpx']]],
  ['lossseed_8',['LossSeed',['../structmpx_1_1cuda_1_1LossSeed.html',1,'mpx::cuda']]]
];
