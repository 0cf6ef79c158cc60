var searchData=
[
  ['json_2ehpp_0',['json.hpp',['../json_8hpp.html',1,'']]]
];
