var searchData=
[
  ['zero_5fgrad_0',['zero_grad',['../classmpx_1_1nn_1_1Parameter.html#ae350546f530c52bac56f00f953234bfc',1,'mpx::nn::Parameter::zero_grad()'],['../classmpx_1_1nn_1_1Sequential.html#ab01238d516fc01d1b7cdc45afb05219c',1,'mpx::nn::Sequential::zero_grad()']]]
];
