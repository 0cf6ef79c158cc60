var searchData=
[
  ['n_0',['n',['../structmpx_1_1GemmShape.html#a044c82f953016c79bd5b74646557e096',1,'mpx::GemmShape']]],
  ['name_1',['name',['../classmpx_1_1nn_1_1Parameter.html#a0e1498bebac0a7756b10f4085bc51cc0',1,'mpx::nn::Parameter::name()'],['../structmpx_1_1io_1_1TensorToWrite.html#a097ffda362fffd3e77aec6b6d960eca3',1,'mpx::io::TensorToWrite::name()'],['../structmpx_1_1DynamicLossScaling.html#a8d25c50f4448af81644e46c2c5052f20',1,'mpx::DynamicLossScaling::name()'],['../structmpx_1_1StaticLossScaling.html#ab84247bf6d2f5cdd331bd6e9bc1500b2',1,'mpx::StaticLossScaling::name()'],['../structmpx_1_1NoLossScaling.html#a67214543a06f85df4b0ed69ea35dfb2d',1,'mpx::NoLossScaling::name()'],['../structmpx_1_1AllowFp16Underflow.html#a09547f3d0ed59b668dba9a28a1613e43',1,'mpx::AllowFp16Underflow::name()'],['../structmpx_1_1Precision.html#a04e08bf70b405f7c5e97e813123ef969',1,'mpx::Precision::name()'],['../structmpx_1_1Host.html#adf5a5ebdac4865ff9702bb6f13ab3aea',1,'mpx::Host::name()'],['../structmpx_1_1Cuda.html#ae2787b4a0b847c9cc7ab7eb02b3f198d',1,'mpx::Cuda::name()'],['../structmpx_1_1experiment_1_1LayerPrecisions.html#a5b3b72d6083e668cd256e4203f04c653',1,'mpx::experiment::LayerPrecisions::name()'],['../structmpx_1_1experiment_1_1Config.html#ada3bc580b6e3eeee6789f284adda7a30',1,'mpx::experiment::Config::name()']]],
  ['nesterov_2',['nesterov',['../structmpx_1_1SgdSettings.html#a1209d08bc973c0530ed0876ea26c0612',1,'mpx::SgdSettings']]],
  ['next_3',['next',['../classmpx_1_1data_1_1Batcher.html#a59f5918a66ece7a042faf46c0ac2d409',1,'mpx::data::Batcher']]],
  ['nolossscaling_4',['NoLossScaling',['../structmpx_1_1NoLossScaling.html',1,'mpx']]],
  ['norm_5',['norm',['../structmpx_1_1experiment_1_1LayerPrecisions.html#ad85ffcda7a78a81c96bcf1eac2b7ada8',1,'mpx::experiment::LayerPrecisions']]],
  ['normstatistics_6',['NormStatistics',['../structmpx_1_1op_1_1NormStatistics.html',1,'mpx::op']]],
  ['numel_7',['numel',['../structmpx_1_1data_1_1IdxArray.html#a4fede01c024a34631f158c27cf7df484',1,'mpx::data::IdxArray::numel()'],['../structmpx_1_1io_1_1TensorEntry.html#afaf699ab2766c194cf251c26855abbb0',1,'mpx::io::TensorEntry::numel()'],['../classmpx_1_1Shape.html#a506a904c3e9103e7859f2b8e526cabe1',1,'mpx::Shape::numel()'],['../classmpx_1_1Tensor.html#afca78e35c7cf5a15fa6a6dc5ba087d55',1,'mpx::Tensor::numel()']]],
  ['numerator_8',['numerator',['../structmpx_1_1cuda_1_1LossSeed.html#a7011e3699f49843edd8514c862d3e448',1,'mpx::cuda::LossSeed']]],
  ['numeric_5ftraits_9',['numeric_traits',['../structmpx_1_1numeric__traits.html',1,'mpx']]]
];
