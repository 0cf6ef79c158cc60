var searchData=
[
  ['quote_0',['quote',['../json_8hpp.html#a24872ac9c716b9ec9afa4b780c5173da',1,'mpx::io::json']]]
];
