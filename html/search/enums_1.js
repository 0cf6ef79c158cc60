var searchData=
[
  ['dtype_0',['Dtype',['../safetensors_8hpp.html#ae482fd821fc20c8ff1d7ea6174814b6f',1,'mpx::io']]]
];
