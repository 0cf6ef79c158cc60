var searchData=
[
  ['default_0',['Default',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bba7a1920d61156abc05a60135aefe8bc67',1,'mpx']]],
  ['dgelu_1',['DGelu',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bba98089fe6fe9059fa9f39973f58de7552',1,'mpx']]],
  ['dgelubgrad_2',['DGeluBGrad',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bbaad2af904fb87a28676f7c25d4e8b347f',1,'mpx']]],
  ['drelu_3',['DRelu',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bbacc34dc132e70c1bbc0a27ff543f6f752',1,'mpx']]],
  ['drelubgrad_4',['DReluBGrad',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bba0f2e7355f7eca67d8569230d0c6c9646',1,'mpx']]],
  ['drop_5',['Drop',['../batcher_8hpp.html#a52509f97f6fde3a39dbceaecab6894f8a3e679cff5b3a6f6f8f32aead541a0a12',1,'mpx::data']]]
];
