var searchData=
[
  ['epochsummary_0',['EpochSummary',['../structmpx_1_1experiment_1_1EpochSummary.html',1,'mpx::experiment']]],
  ['error_1',['error',['../classmpx_1_1error.html',1,'mpx']]],
  ['evaluation_2',['Evaluation',['../structmpx_1_1experiment_1_1Evaluation.html',1,'mpx::experiment']]]
];
