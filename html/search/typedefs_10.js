var searchData=
[
  ['update_5frounding_0',['update_rounding',['../structmpx_1_1Precision.html#a986fe5ccebca0eda325a9d5b714d54b9',1,'mpx::Precision']]]
];
