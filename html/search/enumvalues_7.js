var searchData=
[
  ['xavieruniform_0',['XavierUniform',['../layer_8hpp.html#a1e08017081bcc3970eba3e64001f03d3ad5668a364a778bdac3df7c0a498e36d4',1,'mpx::nn']]]
];
