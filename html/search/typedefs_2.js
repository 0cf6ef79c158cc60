var searchData=
[
  ['checked_5fscaler_5ft_0',['checked_scaler_t',['../loss__scaling_8hpp.html#a1166124498e549a03c003b72b0f2ccd1',1,'mpx']]],
  ['compute_5felement_1',['compute_element',['../classmpx_1_1nn_1_1Parameter.html#a67c5ba7a754f6ce722110732d24ad6d0',1,'mpx::nn::Parameter']]],
  ['compute_5ft_2',['compute_t',['../precision_8hpp.html#adc1b56ce3ab7f8c460069d1e926140b8',1,'mpx']]],
  ['compute_5ftype_3',['compute_type',['../structmpx_1_1Precision.html#a359d8caaadaafe6e04436b8326318050',1,'mpx::Precision']]],
  ['constmatrixmap_4',['ConstMatrixMap',['../classmpx_1_1Tensor.html#aa62e330927785de6625eca588dd45eab',1,'mpx::Tensor']]],
  ['constvectormap_5',['ConstVectorMap',['../classmpx_1_1Tensor.html#ae3c6a0908c1ca4abdf9c8e063f92bc7d',1,'mpx::Tensor']]]
];
