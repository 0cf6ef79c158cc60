var searchData=
[
  ['init_0',['Init',['../layer_8hpp.html#a1e08017081bcc3970eba3e64001f03d3',1,'mpx::nn']]]
];
