var searchData=
[
  ['tensor_0',['Tensor',['../classmpx_1_1Tensor.html#a0e39fea4244664caefe084c55623f4cc',1,'mpx::Tensor::Tensor()=default'],['../classmpx_1_1Tensor.html#a78cc87a9986072d588ba7f5ef8d9902d',1,'mpx::Tensor::Tensor(const Shape &amp;shape)'],['../classmpx_1_1Tensor.html#ac906bd6814da8dba18ecf187bcba641c',1,'mpx::Tensor::Tensor(Tensor &amp;&amp;other) noexcept']]],
  ['tensors_1',['tensors',['../classmpx_1_1io_1_1SafetensorsFile.html#a5fada1666c694f9bbda5c4d6a93b0158',1,'mpx::io::SafetensorsFile']]],
  ['to_5fcsv_2',['to_csv',['../records_8hpp.html#a3a73d3af4c88bebf7823602e1b734b96',1,'mpx::experiment']]],
  ['to_5fdevice_3',['to_device',['../memory_8hpp.html#abf5fe85e4e3ccf505272119441806c57',1,'mpx']]],
  ['to_5fhost_4',['to_host',['../memory_8hpp.html#aab582c44e7e2a01dc95aef0f97a0dabe',1,'mpx']]],
  ['to_5fjson_5',['to_json',['../records_8hpp.html#ab20f311c44eef8ca9c4eac21efb90a83',1,'mpx::experiment']]],
  ['to_5fstring_6',['to_string',['../classmpx_1_1Shape.html#a9b652e00d69094b16490f47a4c475f7a',1,'mpx::Shape::to_string()'],['../gemm__spec_8hpp.html#a6519e3d4d2baa966a05061866527d123',1,'mpx::to_string()']]],
  ['to_5ftable_7',['to_table',['../records_8hpp.html#aa0df55dceea3360bb0bf7230038e3d49',1,'mpx::experiment']]],
  ['train_5fepoch_8',['train_epoch',['../classification_8hpp.html#af8ac3fcb103bb698fe2a4c7cd4d4b833',1,'mpx::experiment']]],
  ['trainer_9',['Trainer',['../classmpx_1_1Trainer.html#ab8b97f71b5749a260df32f4fca67f9ac',1,'mpx::Trainer']]]
];
