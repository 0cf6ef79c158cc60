var searchData=
[
  ['accumulate_5ft_0',['accumulate_t',['../precision_8hpp.html#aa4894f8291cf0267644e48c41f4d7272',1,'mpx']]],
  ['accumulate_5ftype_1',['accumulate_type',['../structmpx_1_1Precision.html#a218a9586625c1f826b41f69b5ca480cf',1,'mpx::Precision']]]
];
