var searchData=
[
  ['activation_2ecuh_0',['activation.cuh',['../activation_8cuh.html',1,'']]],
  ['activation_2ehpp_1',['activation.hpp',['../backend_2cpu_2activation_8hpp.html',1,'(Global Namespace)'],['../nn_2activation_8hpp.html',1,'(Global Namespace)']]],
  ['adamw_2ehpp_2',['adamw.hpp',['../adamw_8hpp.html',1,'']]],
  ['atomic_5ffile_2ehpp_3',['atomic_file.hpp',['../atomic__file_8hpp.html',1,'']]]
];
