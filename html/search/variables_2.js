var searchData=
[
  ['c_0',['c',['../structmpx_1_1GemmOperands.html#a17baa410f0de3a12226d916f52965255',1,'mpx::GemmOperands']]],
  ['checkpoint_5fformat_1',['checkpoint_format',['../checkpoint_8hpp.html#a41a5c4828bc4919d598c1e14098fa6d4',1,'mpx::io']]],
  ['checkpoint_5fformat_5fversion_2',['checkpoint_format_version',['../checkpoint_8hpp.html#a1bec40e1da5ef2f239e2f8ecd94d2d0a',1,'mpx::io']]],
  ['clip_5fcoefficient_3',['clip_coefficient',['../structmpx_1_1cuda_1_1StepScalars.html#acb5c0a6bc916b4b0a1c6cda43b40812a',1,'mpx::cuda::StepScalars']]],
  ['clipped_4',['clipped',['../structmpx_1_1cuda_1_1StepScalars.html#acd1a020868d5b8e44e5ab8b86dc30d0e',1,'mpx::cuda::StepScalars::clipped()'],['../structmpx_1_1StepResult.html#ab9bb94db18f6684b40b9f3754e3ba90f',1,'mpx::StepResult::clipped()']]]
];
