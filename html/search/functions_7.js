var searchData=
[
  ['has_5fstate_0',['has_state',['../classmpx_1_1nn_1_1Parameter.html#a4934c7414136368811fe1bf1e83ff8e3',1,'mpx::nn::Parameter']]]
];
