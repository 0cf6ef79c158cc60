var searchData=
[
  ['parallel_2ehpp_0',['parallel.hpp',['../parallel_8hpp.html',1,'']]],
  ['parameter_2ehpp_1',['parameter.hpp',['../parameter_8hpp.html',1,'']]],
  ['precision_2ehpp_2',['precision.hpp',['../precision_8hpp.html',1,'']]],
  ['progress_2ehpp_3',['progress.hpp',['../progress_8hpp.html',1,'']]]
];
