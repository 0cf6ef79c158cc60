var searchData=
[
  ['capture_0',['capture',['../classmpx_1_1TrainingState_3_01Cuda_00_01Grad_01_4.html#a1c8c024f1ef830c81dbe64124d65950e',1,'mpx::TrainingState&lt; Cuda, Grad &gt;::capture()'],['../classmpx_1_1cuda_1_1Graph.html#ae17cc88a28678f9bd7596488c477f05b',1,'mpx::cuda::Graph::capture()']]],
  ['capture_5fstep_1',['capture_step',['../classmpx_1_1Trainer.html#a03afb95a4dc097dd4b1136d2c4c0d62c',1,'mpx::Trainer']]],
  ['classes_2',['classes',['../classmpx_1_1data_1_1Dataset.html#ada470a6f965d6d8f8889bccabeae4e00',1,'mpx::data::Dataset']]],
  ['clear_5fgemm_5fcache_3',['clear_gemm_cache',['../cuda_2gemm_8hpp.html#a82a16d55d0a38869838fc5d937e0d41d',1,'mpx::cuda']]],
  ['clip_5fcoefficient_4',['clip_coefficient',['../clipping_8hpp.html#a3ff208294c682542217caeecb7455f6c',1,'mpx']]],
  ['clone_5',['clone',['../classmpx_1_1Tensor.html#a09362443d04058903dadfe127e282e74',1,'mpx::Tensor']]],
  ['cols_6',['cols',['../classmpx_1_1Shape.html#a6fdf269065bbac9f27dc31daacfccbc2',1,'mpx::Shape']]],
  ['compute_7',['compute',['../classmpx_1_1nn_1_1Parameter.html#a60d1b2c698a65f00c9319e2ab19c834f',1,'mpx::nn::Parameter']]],
  ['compute_5fcopy_8',['compute_copy',['../classmpx_1_1nn_1_1Parameter.html#aa03d46f8acb139de3e752408894ce787',1,'mpx::nn::Parameter']]],
  ['convert_9',['convert',['../convert_8hpp.html#a0ebafc2364c59778d2bd288ed3636025',1,'mpx']]],
  ['copy_10',['copy',['../memory_8hpp.html#a5951bd31453d26bbb1d84b87c0bcfb49',1,'mpx']]],
  ['count_5fcorrect_11',['count_correct',['../softmax__cross__entropy_8hpp.html#afbfa3b402200b876c1d20ac5a608ba3d',1,'mpx::cpu::count_correct()'],['../softmax__cross__entropy_8cuh.html#a78c52ebd42312076a8ead33666923414',1,'mpx::cuda::count_correct(const Tensor&lt; T, Cuda &gt; &amp;logits, const std::int32_t *labels, std::int64_t *correct)'],['../softmax__cross__entropy_8cuh.html#a25d3947a16c34d7664571c273561afb5',1,'mpx::cuda::count_correct(const Tensor&lt; T, Cuda &gt; &amp;logits, std::span&lt; const std::int32_t &gt; labels)']]],
  ['cublaslt_12',['cublaslt',['../classmpx_1_1CudaContext.html#a603dcae9ca93c41835f69f5e6a2d6b77',1,'mpx::CudaContext']]],
  ['cuda_5fcontext_13',['cuda_context',['../context_8hpp.html#a0dd42b7190ec6a8bdc13ad9a85b5fc61',1,'mpx']]],
  ['cuda_5fdevice_5fcount_14',['cuda_device_count',['../context_8hpp.html#aedc3f06bc1cda4e2428ccc33a09beb44',1,'mpx']]],
  ['cudacontext_15',['CudaContext',['../classmpx_1_1CudaContext.html#a7f1682ef4a1b3fedf79cfb9a8da9aedd',1,'mpx::CudaContext']]]
];
