var searchData=
[
  ['end_0',['end',['../structmpx_1_1io_1_1TensorEntry.html#ab0f66bdb8a88435db86a194e3963b451',1,'mpx::io::TensorEntry']]],
  ['epilogue_1',['epilogue',['../structmpx_1_1GemmConfig.html#a999797234615b541862c25a25cc41003',1,'mpx::GemmConfig']]],
  ['epsilon_2',['epsilon',['../structmpx_1_1AdamWSettings.html#a488e8cf02975918276b835403357a622',1,'mpx::AdamWSettings']]]
];
