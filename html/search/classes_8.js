var searchData=
[
  ['idxarray_0',['IdxArray',['../structmpx_1_1data_1_1IdxArray.html',1,'mpx::data']]],
  ['invalid_5fargument_1',['invalid_argument',['../classmpx_1_1invalid__argument.html',1,'mpx']]],
  ['io_5ferror_2',['io_error',['../classmpx_1_1io__error.html',1,'mpx']]]
];
