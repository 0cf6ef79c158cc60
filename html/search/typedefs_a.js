var searchData=
[
  ['norm_0',['norm',['../structmpx_1_1experiment_1_1LayerPrecisions.html#ad85ffcda7a78a81c96bcf1eac2b7ada8',1,'mpx::experiment::LayerPrecisions']]]
];
