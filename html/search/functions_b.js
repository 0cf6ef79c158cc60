var searchData=
[
  ['name_0',['name',['../structmpx_1_1experiment_1_1LayerPrecisions.html#a5b3b72d6083e668cd256e4203f04c653',1,'mpx::experiment::LayerPrecisions::name()'],['../structmpx_1_1experiment_1_1Config.html#ada3bc580b6e3eeee6789f284adda7a30',1,'mpx::experiment::Config::name()'],['../classmpx_1_1nn_1_1Parameter.html#a0e1498bebac0a7756b10f4085bc51cc0',1,'mpx::nn::Parameter::name()']]],
  ['next_1',['next',['../classmpx_1_1data_1_1Batcher.html#a59f5918a66ece7a042faf46c0ac2d409',1,'mpx::data::Batcher']]],
  ['numel_2',['numel',['../structmpx_1_1data_1_1IdxArray.html#a4fede01c024a34631f158c27cf7df484',1,'mpx::data::IdxArray::numel()'],['../structmpx_1_1io_1_1TensorEntry.html#afaf699ab2766c194cf251c26855abbb0',1,'mpx::io::TensorEntry::numel()'],['../classmpx_1_1Shape.html#a506a904c3e9103e7859f2b8e526cabe1',1,'mpx::Shape::numel()'],['../classmpx_1_1Tensor.html#afca78e35c7cf5a15fa6a6dc5ba087d55',1,'mpx::Tensor::numel()']]]
];
