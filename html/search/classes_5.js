var searchData=
[
  ['fashionmnist_0',['FashionMnist',['../structmpx_1_1data_1_1FashionMnist.html',1,'mpx::data']]],
  ['float_1',['Float',['../structmpx_1_1Float.html',1,'mpx']]]
];
