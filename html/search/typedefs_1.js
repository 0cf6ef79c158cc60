var searchData=
[
  ['bf16_5fmixed_0',['bf16_mixed',['../precision_8hpp.html#a0563eeaef35fcff0c30fcbbd4a8f1e23',1,'mpx']]],
  ['bf16_5fpure_1',['bf16_pure',['../precision_8hpp.html#aa01195cb8d912c5146ca7a310c82b447',1,'mpx']]],
  ['bf16_5fpure_5fnearest_2',['bf16_pure_nearest',['../precision_8hpp.html#a2eaaf7d3e63d573ffe7231a67b841fe4',1,'mpx']]],
  ['body_3',['body',['../structmpx_1_1experiment_1_1LayerPrecisions.html#a095876aa0697777008e5421652d9c138',1,'mpx::experiment::LayerPrecisions']]]
];
