var searchData=
[
  ['half_0',['Half',['../structmpx_1_1Half.html',1,'mpx']]],
  ['host_1',['Host',['../structmpx_1_1Host.html',1,'mpx']]]
];
