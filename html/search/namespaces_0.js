var searchData=
[
  ['op_0',['op',['../namespacempx_1_1op.html',1,'mpx']]]
];
