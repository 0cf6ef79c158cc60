var searchData=
[
  ['uniform_0',['uniform',['../structmpx_1_1experiment_1_1LayerPrecisions.html#ad1bc70d6817b1a4ca204530ff1885f39',1,'mpx::experiment::LayerPrecisions']]]
];
