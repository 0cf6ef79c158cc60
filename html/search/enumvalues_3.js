var searchData=
[
  ['info_0',['Info',['../log_8hpp.html#abc3c7776a9294e2d2a080c83445870f9a4059b0251f66a18cb56f544728796875',1,'mpx']]]
];
