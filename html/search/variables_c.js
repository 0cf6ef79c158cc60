var searchData=
[
  ['n_0',['n',['../structmpx_1_1GemmShape.html#a044c82f953016c79bd5b74646557e096',1,'mpx::GemmShape']]],
  ['name_1',['name',['../structmpx_1_1io_1_1TensorToWrite.html#a097ffda362fffd3e77aec6b6d960eca3',1,'mpx::io::TensorToWrite::name()'],['../structmpx_1_1DynamicLossScaling.html#a8d25c50f4448af81644e46c2c5052f20',1,'mpx::DynamicLossScaling::name()'],['../structmpx_1_1StaticLossScaling.html#ab84247bf6d2f5cdd331bd6e9bc1500b2',1,'mpx::StaticLossScaling::name()'],['../structmpx_1_1NoLossScaling.html#a67214543a06f85df4b0ed69ea35dfb2d',1,'mpx::NoLossScaling::name()'],['../structmpx_1_1AllowFp16Underflow.html#a09547f3d0ed59b668dba9a28a1613e43',1,'mpx::AllowFp16Underflow::name()'],['../structmpx_1_1Precision.html#a04e08bf70b405f7c5e97e813123ef969',1,'mpx::Precision::name()'],['../structmpx_1_1Host.html#adf5a5ebdac4865ff9702bb6f13ab3aea',1,'mpx::Host::name()'],['../structmpx_1_1Cuda.html#ae2787b4a0b847c9cc7ab7eb02b3f198d',1,'mpx::Cuda::name()']]],
  ['nesterov_2',['nesterov',['../structmpx_1_1SgdSettings.html#a1209d08bc973c0530ed0876ea26c0612',1,'mpx::SgdSettings']]],
  ['numerator_3',['numerator',['../structmpx_1_1cuda_1_1LossSeed.html#a7011e3699f49843edd8514c862d3e448',1,'mpx::cuda::LossSeed']]]
];
