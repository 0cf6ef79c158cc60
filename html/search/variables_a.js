var searchData=
[
  ['label_5fsmoothing_0',['label_smoothing',['../structmpx_1_1nn_1_1SoftmaxCrossEntropy_1_1Options.html#aa2a7d1e7f3bb40f4d2e83d2d6b5e6c59',1,'mpx::nn::SoftmaxCrossEntropy::Options']]],
  ['last_5fbatch_1',['last_batch',['../structmpx_1_1data_1_1Batcher_1_1Options.html#a88d8e38757c3d8d2b36adb589baddf59',1,'mpx::data::Batcher::Options']]],
  ['loss_2',['loss',['../structmpx_1_1experiment_1_1Evaluation.html#a6149e77381e534483c4374dc96335f40',1,'mpx::experiment::Evaluation::loss()'],['../structmpx_1_1experiment_1_1EpochSummary.html#a6bcc2c3a951f8d27bcd7d4f04f91a141',1,'mpx::experiment::EpochSummary::loss()'],['../structmpx_1_1StepResult.html#ae357a8e1849550f74756eebb1f5f8e48',1,'mpx::StepResult::loss()']]],
  ['loss_5ffinite_3',['loss_finite',['../structmpx_1_1StepResult.html#afb4424a6cabab6c111f17753bd5cff49',1,'mpx::StepResult']]],
  ['loss_5fscale_4',['loss_scale',['../structmpx_1_1cuda_1_1StepScalars.html#ae1929c0ac4466e6fafaa0b5cabf3542b',1,'mpx::cuda::StepScalars::loss_scale()'],['../structmpx_1_1experiment_1_1EpochSummary.html#ad908358c48d1bf4de524908255b099ce',1,'mpx::experiment::EpochSummary::loss_scale()'],['../structmpx_1_1StepResult.html#aae4ee37c38e9d655427573c918475a7f',1,'mpx::StepResult::loss_scale()']]],
  ['loss_5fsum_5',['loss_sum',['../structmpx_1_1cuda_1_1StepScalars.html#a4999f6398139a09ee7367f2f56898f5f',1,'mpx::cuda::StepScalars']]],
  ['lr_6',['lr',['../structmpx_1_1cuda_1_1StepScalars.html#a0fb20e454e0bb8dc0b0edb9a0d7940e0',1,'mpx::cuda::StepScalars::lr()'],['../structmpx_1_1SgdSettings.html#ac94e261b1f027633afd313e8bbc03482',1,'mpx::SgdSettings::lr()'],['../structmpx_1_1AdamWSettings.html#a3876bae27e988ac0eecb5a1ad58c4432',1,'mpx::AdamWSettings::lr()']]]
];
