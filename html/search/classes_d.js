var searchData=
[
  ['parameter_0',['Parameter',['../classmpx_1_1nn_1_1Parameter.html',1,'mpx::nn']]],
  ['parameter_3c_20p_2c_20host_20_3e_1',['Parameter&lt; P, Host &gt;',['../classmpx_1_1nn_1_1Parameter.html',1,'mpx::nn']]],
  ['parameter_3c_20precision_3c_20typename_20p_3a_3amaster_5ftype_2c_20typename_20p_3a_3amaster_5ftype_2c_20typename_20p_3a_3aupdate_5frounding_20_3e_2c_20host_20_3e_2',['Parameter&lt; Precision&lt; typename P::master_type, typename P::master_type, typename P::update_rounding &gt;, Host &gt;',['../classmpx_1_1nn_1_1Parameter.html',1,'mpx::nn']]],
  ['peakwindow_3',['PeakWindow',['../classmpx_1_1PeakWindow.html',1,'mpx']]],
  ['precision_4',['Precision',['../structmpx_1_1Precision.html',1,'mpx']]],
  ['progressbar_5',['ProgressBar',['../classmpx_1_1experiment_1_1ProgressBar.html',1,'mpx::experiment']]]
];
