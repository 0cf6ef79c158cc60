var searchData=
[
  ['parallel_5fgrain_0',['parallel_grain',['../parallel_8hpp.html#a95381ee0d68a11773647c33932382f24',1,'mpx::cpu']]],
  ['parameter_5fcount_1',['parameter_count',['../structmpx_1_1StepMemory.html#a029e1888adab12cdbf7ae67b085128ed',1,'mpx::StepMemory']]],
  ['patch_2',['patch',['../structmpx_1_1Version.html#add20521d6b6bfb3b35f3828eb5ab65a9',1,'mpx::Version']]],
  ['peak_3',['peak',['../structmpx_1_1StepMemory.html#ad7a4728d3c84062dcc2005960b5cf702',1,'mpx::StepMemory']]],
  ['pixel_5fmean_4',['pixel_mean',['../structmpx_1_1data_1_1FashionMnist.html#a82d64b7803e0001af1c308b0a0b657a4',1,'mpx::data::FashionMnist']]],
  ['pixel_5fstd_5',['pixel_std',['../structmpx_1_1data_1_1FashionMnist.html#a50b8549c2541e04ea7a5127a27b6786b',1,'mpx::data::FashionMnist']]]
];
