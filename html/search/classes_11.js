var searchData=
[
  ['value_0',['Value',['../structmpx_1_1io_1_1json_1_1Value.html',1,'mpx::io::json']]],
  ['version_1',['Version',['../structmpx_1_1Version.html',1,'mpx']]]
];
