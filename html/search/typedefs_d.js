var searchData=
[
  ['rowmajormatrix_0',['RowMajorMatrix',['../tensor_8hpp.html#ac0315c8e39a955230c663a4510ae0393',1,'mpx']]]
];
