var searchData=
[
  ['gelu_5fbackward_0',['gelu_backward',['../activation_8cuh.html#aaec921a0bf93ea36bc23b62bdc20954e',1,'mpx::cuda::gelu_backward()'],['../backend_2cpu_2activation_8hpp.html#a33305b54c7b2a16a6a5fc893a87a42c8',1,'mpx::cpu::gelu_backward()']]],
  ['gelu_5fforward_1',['gelu_forward',['../activation_8cuh.html#a8abef31420a9d192ea2c275770479ac8',1,'mpx::cuda::gelu_forward()'],['../backend_2cpu_2activation_8hpp.html#a409ca8794f1fa904fbab5ead078d762e',1,'mpx::cpu::gelu_forward()']]],
  ['gelu_5ftanh_2',['gelu_tanh',['../gemm__spec_8hpp.html#a878d9217629624d21a2c64ce00db1bee',1,'mpx']]],
  ['gelu_5ftanh_5fderivative_3',['gelu_tanh_derivative',['../gemm__spec_8hpp.html#ac7e051977f12c3ab7046db3a26f580dd',1,'mpx']]],
  ['gemm_4',['gemm',['../structmpx_1_1Backend_3_01Cuda_01_4.html#a3dabc28e20c744ebc3179f5b44d80036',1,'mpx::Backend&lt; Cuda &gt;::gemm()'],['../cuda_2gemm_8hpp.html#a07a0760b0a061ae808732f632315d4d0',1,'mpx::cuda::gemm()'],['../cpu_2gemm_8hpp.html#ac1f6ce0513f4aebdfa14669d1a6a4739',1,'mpx::cpu::gemm()'],['../structmpx_1_1Backend_3_01Host_01_4.html#a8310e72d97c8b97cc9b0b36c3d3130bb',1,'mpx::Backend&lt; Host &gt;::gemm()']]],
  ['gemm_5fcache_5fsize_5',['gemm_cache_size',['../cuda_2gemm_8hpp.html#a7d8c4b4a4d2edd7b47afbe475d9d47c7',1,'mpx::cuda']]],
  ['get_6',['get',['../classmpx_1_1nn_1_1SavedPointer.html#a2fec6e60e82e9892ac1e5ef302551a2b',1,'mpx::nn::SavedPointer']]],
  ['grad_7',['grad',['../classmpx_1_1nn_1_1Parameter.html#abbc80131ff2146dd577dac36c9fd3b3e',1,'mpx::nn::Parameter']]],
  ['grad_5ffor_5fupdate_8',['grad_for_update',['../classmpx_1_1nn_1_1Parameter.html#ae20b70fd2d7919deefe784a342dea18c',1,'mpx::nn::Parameter']]],
  ['gradient_9',['gradient',['../classmpx_1_1nn_1_1MSELoss.html#a03d776d5606696a9a03260226f05a10e',1,'mpx::nn::MSELoss::gradient()'],['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html#a53767a26c219a44cb1076ff093438754',1,'mpx::nn::SoftmaxCrossEntropy::gradient()']]],
  ['graph_10',['Graph',['../classmpx_1_1cuda_1_1Graph.html#ad1e205b2313a1a3f2f32385e257c9d86',1,'mpx::cuda::Graph']]]
];
