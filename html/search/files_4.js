var searchData=
[
  ['error_2ehpp_0',['error.hpp',['../error_8hpp.html',1,'']]]
];
