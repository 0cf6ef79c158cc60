var searchData=
[
  ['tags_2ehpp_0',['tags.hpp',['../tags_8hpp.html',1,'']]],
  ['tensor_2ehpp_1',['tensor.hpp',['../tensor_8hpp.html',1,'']]],
  ['tensor_5fops_2ecuh_2',['tensor_ops.cuh',['../tensor__ops_8cuh.html',1,'']]],
  ['trainer_2ehpp_3',['trainer.hpp',['../trainer_8hpp.html',1,'']]],
  ['training_5fstate_2ecuh_4',['training_state.cuh',['../training__state_8cuh.html',1,'']]],
  ['traits_2ehpp_5',['traits.hpp',['../traits_8hpp.html',1,'']]]
];
