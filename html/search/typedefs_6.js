var searchData=
[
  ['head_0',['head',['../structmpx_1_1experiment_1_1LayerPrecisions.html#a65701298dad50400ee6c321d01441922',1,'mpx::experiment::LayerPrecisions']]]
];
