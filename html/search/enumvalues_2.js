var searchData=
[
  ['geluauxbias_0',['GeluAuxBias',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bbaae95b965893766a8d745009a53c4b79c',1,'mpx']]],
  ['gelubias_1',['GeluBias',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bbafe6f6eff9fd54dbc82ede7f3371f29b7',1,'mpx']]]
];
