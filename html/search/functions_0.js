var searchData=
[
  ['accumulate_5fforward_5fbackward_0',['accumulate_forward_backward',['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html#adb9c942d5bcce7b52b2d970c0ffaccdd',1,'mpx::nn::SoftmaxCrossEntropy::accumulate_forward_backward()'],['../classmpx_1_1nn_1_1MSELoss.html#a330e04eb3b10ceed41f1a40b06f92c78',1,'mpx::nn::MSELoss::accumulate_forward_backward()']]],
  ['adamw_1',['AdamW',['../classmpx_1_1optim_1_1AdamW.html#a87a7b42bfa9ca2c2b739ec7717f69b5b',1,'mpx::optim::AdamW']]],
  ['adamw_5fupdate_2',['adamw_update',['../optimizer_8hpp.html#a85d0e85393f8cf13757dd85e4fdf7c24',1,'mpx::cpu']]],
  ['add_5finto_3',['add_into',['../structmpx_1_1Backend_3_01Host_01_4.html#ae6ac4600284935c1a0701b76980faf2a',1,'mpx::Backend&lt; Host &gt;::add_into()'],['../tensor__ops_8cuh.html#a91323a3014fd21b122fd60ed7704f3e5',1,'mpx::cuda::add_into()']]],
  ['allocation_5fcount_4',['allocation_count',['../classmpx_1_1MemoryStats.html#ad5e05ddd518cf06149d06f034a8703d0',1,'mpx::MemoryStats']]]
];
