var searchData=
[
  ['activation_0',['Activation',['../layer_8hpp.html#a306190f3c7dff43f42fc5a9478ecef57',1,'mpx::nn']]]
];
