var searchData=
[
  ['host_5fmemory_2ehpp_0',['host_memory.hpp',['../host__memory_8hpp.html',1,'']]]
];
