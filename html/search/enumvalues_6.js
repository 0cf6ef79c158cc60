var searchData=
[
  ['warning_0',['Warning',['../log_8hpp.html#abc3c7776a9294e2d2a080c83445870f9a0eaadb4fcb48a0a0ed7bc9868be9fbaa',1,'mpx']]]
];
