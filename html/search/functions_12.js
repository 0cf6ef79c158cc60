var searchData=
[
  ['uniform_5fbetween_0',['uniform_between',['../random_8hpp.html#a5f770ccf68e576e6fdc8773cfa07d7ab',1,'mpx']]],
  ['uniform_5ffrom_5fbits_1',['uniform_from_bits',['../random_8hpp.html#af18c4d2e65312a360016d77eac6c1bbd',1,'mpx']]],
  ['uninitialized_2',['uninitialized',['../classmpx_1_1Tensor.html#a3e69fd097b0a737dddde63718413adab',1,'mpx::Tensor']]],
  ['unscale_5fand_5finspect_3',['unscale_and_inspect',['../structmpx_1_1Backend_3_01Host_01_4.html#a2c39cfd4bdbe7886d67e88f1d967faef',1,'mpx::Backend&lt; Host &gt;::unscale_and_inspect()'],['../structmpx_1_1Backend_3_01Cuda_01_4.html#a7b576b2b5fecd2a8e73c7e714e5b695d',1,'mpx::Backend&lt; Cuda &gt;::unscale_and_inspect()'],['../classmpx_1_1TrainingState_3_01Cuda_00_01Grad_01_4.html#a499660fb3b046cbf1cb993379d2601f4',1,'mpx::TrainingState&lt; Cuda, Grad &gt;::unscale_and_inspect()'],['../gradient_8hpp.html#a56f838e1f0753c3f44169a0ed7160d23',1,'mpx::cpu::unscale_and_inspect()']]],
  ['update_4',['update',['../classmpx_1_1experiment_1_1ProgressBar.html#a28bc8c49c6cbb13e0ecab1e0bc30ee52',1,'mpx::experiment::ProgressBar::update()'],['../classmpx_1_1LossScaler.html#ae4f10418ec3b363b6d41d5087b7b95da',1,'mpx::LossScaler::update()']]],
  ['update_5floss_5fscale_5',['update_loss_scale',['../loss__scale__update_8hpp.html#a576e5e704a3cc186e99e63903d101b04',1,'mpx']]],
  ['upload_6',['upload',['../classmpx_1_1cuda_1_1DeviceArray.html#ae3e12ffc04f2d74c47804ce77d6be880',1,'mpx::cuda::DeviceArray']]]
];
