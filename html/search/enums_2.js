var searchData=
[
  ['epilogue_0',['Epilogue',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bb',1,'mpx']]]
];
