var searchData=
[
  ['activation_0',['Activation',['../structmpx_1_1op_1_1Activation.html',1,'mpx::op']]],
  ['adamw_1',['AdamW',['../classmpx_1_1optim_1_1AdamW.html',1,'mpx::optim']]],
  ['adamwsettings_2',['AdamWSettings',['../structmpx_1_1AdamWSettings.html',1,'mpx']]],
  ['allowfp16underflow_3',['AllowFp16Underflow',['../structmpx_1_1AllowFp16Underflow.html',1,'mpx']]]
];
