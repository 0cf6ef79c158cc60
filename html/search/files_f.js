var searchData=
[
  ['safetensors_2ehpp_0',['safetensors.hpp',['../safetensors_8hpp.html',1,'']]],
  ['sequential_2ehpp_1',['sequential.hpp',['../sequential_8hpp.html',1,'']]],
  ['sgd_2ehpp_2',['sgd.hpp',['../sgd_8hpp.html',1,'']]],
  ['shape_2ehpp_3',['shape.hpp',['../shape_8hpp.html',1,'']]],
  ['softmax_5fcross_5fentropy_2ecuh_4',['softmax_cross_entropy.cuh',['../softmax__cross__entropy_8cuh.html',1,'']]],
  ['softmax_5fcross_5fentropy_2ehpp_5',['softmax_cross_entropy.hpp',['../softmax__cross__entropy_8hpp.html',1,'']]],
  ['step_5fstate_2ehpp_6',['step_state.hpp',['../step__state_8hpp.html',1,'']]],
  ['sweep_2ehpp_7',['sweep.hpp',['../sweep_8hpp.html',1,'']]]
];
