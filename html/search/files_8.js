var searchData=
[
  ['idx_2ehpp_0',['idx.hpp',['../idx_8hpp.html',1,'']]]
];
