var searchData=
[
  ['relubias_0',['ReluBias',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bba669964c7e704b1e615c684d0cb9d17c5',1,'mpx']]]
];
