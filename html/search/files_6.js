var searchData=
[
  ['gemm_2ehpp_0',['gemm.hpp',['../cpu_2gemm_8hpp.html',1,'(Global Namespace)'],['../cuda_2gemm_8hpp.html',1,'(Global Namespace)']]],
  ['gemm_5fepilogue_2ecuh_1',['gemm_epilogue.cuh',['../gemm__epilogue_8cuh.html',1,'']]],
  ['gemm_5fspec_2ehpp_2',['gemm_spec.hpp',['../gemm__spec_8hpp.html',1,'']]],
  ['gradient_2ehpp_3',['gradient.hpp',['../gradient_8hpp.html',1,'']]],
  ['graph_2ehpp_4',['graph.hpp',['../graph_8hpp.html',1,'']]]
];
