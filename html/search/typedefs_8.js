var searchData=
[
  ['layers_0',['layers',['../structmpx_1_1experiment_1_1Config.html#ad4fde7fa0a686d06fdd03e24b2983bfd',1,'mpx::experiment::Config']]],
  ['logsink_1',['LogSink',['../log_8hpp.html#ab56fa4d02eebfcb4a72efdde23683084',1,'mpx']]]
];
