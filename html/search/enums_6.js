var searchData=
[
  ['transpose_0',['Transpose',['../gemm__spec_8hpp.html#aa68751ed948eb3b772089d1dd1678f72',1,'mpx']]]
];
