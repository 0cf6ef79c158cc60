var searchData=
[
  ['backend_2ecuh_0',['backend.cuh',['../backend_8cuh.html',1,'']]],
  ['backend_2ehpp_1',['backend.hpp',['../backend_8hpp.html',1,'(Global Namespace)'],['../cpu_2backend_8hpp.html',1,'(Global Namespace)']]],
  ['batcher_2ehpp_2',['batcher.hpp',['../batcher_8hpp.html',1,'']]]
];
