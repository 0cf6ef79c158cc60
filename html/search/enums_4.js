var searchData=
[
  ['kind_0',['Kind',['../structmpx_1_1io_1_1json_1_1Value.html#a7b8751537aab84752425dadb31db1ef7',1,'mpx::io::json::Value']]]
];
