var searchData=
[
  ['cast_2ehpp_0',['cast.hpp',['../cast_8hpp.html',1,'']]],
  ['check_2ehpp_1',['check.hpp',['../check_8hpp.html',1,'']]],
  ['checkpoint_2ehpp_2',['checkpoint.hpp',['../checkpoint_8hpp.html',1,'']]],
  ['classification_2ehpp_3',['classification.hpp',['../classification_8hpp.html',1,'']]],
  ['clipping_2ehpp_4',['clipping.hpp',['../clipping_8hpp.html',1,'']]],
  ['config_2ehpp_5',['config.hpp',['../config_8hpp.html',1,'']]],
  ['context_2ehpp_6',['context.hpp',['../context_8hpp.html',1,'']]],
  ['convert_2ehpp_7',['convert.hpp',['../convert_8hpp.html',1,'']]],
  ['cuda_2ehpp_8',['cuda.hpp',['../cuda_8hpp.html',1,'']]]
];
