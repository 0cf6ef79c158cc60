var searchData=
[
  ['fp16_5fmixed_0',['fp16_mixed',['../precision_8hpp.html#a8ee258c385ad38f9c1ca9700c1937a98',1,'mpx']]],
  ['fp32_1',['fp32',['../precision_8hpp.html#a40ca575a9dfa2cb6b1f2a27eb0e2e676',1,'mpx']]],
  ['fp64_2',['fp64',['../precision_8hpp.html#ac733498e4ea7db7e235b261f5397878a',1,'mpx']]]
];
