var searchData=
[
  ['lastbatch_0',['LastBatch',['../batcher_8hpp.html#a52509f97f6fde3a39dbceaecab6894f8',1,'mpx::data']]],
  ['loglevel_1',['LogLevel',['../log_8hpp.html#abc3c7776a9294e2d2a080c83445870f9',1,'mpx']]]
];
