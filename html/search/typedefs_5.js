var searchData=
[
  ['gemm_5faccumulate_5ft_0',['gemm_accumulate_t',['../gemm__spec_8hpp.html#adfd5a3f59563f31d32ec4f3da2f32148',1,'mpx']]],
  ['gemmoperands_1',['GemmOperands',['../cpu_2gemm_8hpp.html#aaeba18d90b7fc95eed1fab1bd55ea40d',1,'mpx::cpu::GemmOperands()'],['../cuda_2gemm_8hpp.html#ae7717ff1609f8dd5ea1a866c97b8aa8c',1,'mpx::cuda::GemmOperands()']]],
  ['grad_5felement_2',['grad_element',['../classmpx_1_1nn_1_1Parameter.html#a3c38f8994f47370bf667bd3cc3b79aca',1,'mpx::nn::Parameter']]]
];
