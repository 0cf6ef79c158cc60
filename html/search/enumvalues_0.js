var searchData=
[
  ['bgrada_0',['BGradA',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bba436e887efa978b32790435f94e7199fe',1,'mpx']]],
  ['bgradb_1',['BGradB',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bba1dae76985f4cdad90ed155fb7006d257',1,'mpx']]],
  ['bias_2',['Bias',['../gemm__spec_8hpp.html#a888412f21ac2cd726b0b84dd3faaa8bba4ad6b9e6418fd2d739906bd47e887ae3',1,'mpx']]]
];
