var searchData=
[
  ['represents_5fv_0',['represents_v',['../traits_8hpp.html#ae2c0cc45c2a97f252e34998fcc168c7b',1,'mpx']]],
  ['rounding_5fseed_1',['rounding_seed',['../structmpx_1_1SgdSettings.html#ac5465436236480629767fb1bea821827',1,'mpx::SgdSettings::rounding_seed()'],['../structmpx_1_1AdamWSettings.html#a53f31352e6a49ab5f13d0499b4ee11cc',1,'mpx::AdamWSettings::rounding_seed()']]]
];
