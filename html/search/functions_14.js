var searchData=
[
  ['weight_0',['weight',['../classmpx_1_1nn_1_1Linear.html#a69c35f3f8b41d96479e49bc609de998c',1,'mpx::nn::Linear']]],
  ['workspace_1',['workspace',['../classmpx_1_1CudaContext.html#ae45d4d5e2b715d8a95e1e74354f99a0c',1,'mpx::CudaContext']]],
  ['workspace_5fbytes_2',['workspace_bytes',['../classmpx_1_1CudaContext.html#a62cd904667b8a84754c86fc6119bd5e2',1,'mpx::CudaContext']]],
  ['write_5fcsv_3',['write_csv',['../records_8hpp.html#adbb4328db2984c4f7849820411e3d4c1',1,'mpx::experiment']]],
  ['write_5ffile_5fatomically_4',['write_file_atomically',['../atomic__file_8hpp.html#a4072b480ec5a7f86919a4ba389155b54',1,'mpx::io']]],
  ['write_5fjson_5',['write_json',['../records_8hpp.html#a5abf5d3801cb300fb71431aec20e059f',1,'mpx::experiment']]],
  ['writes_5faux_6',['writes_aux',['../gemm__spec_8hpp.html#adaa4249edbbcaf942161afcbdd83e8b4',1,'mpx']]],
  ['writes_5fbias_5fgrad_7',['writes_bias_grad',['../gemm__spec_8hpp.html#af79007dc0ce47b918279965d91a01716',1,'mpx']]]
];
