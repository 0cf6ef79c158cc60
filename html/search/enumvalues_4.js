var searchData=
[
  ['kaiminguniform_0',['KaimingUniform',['../layer_8hpp.html#a1e08017081bcc3970eba3e64001f03d3ad96eb04d8484cb965fe7a44a281a069b',1,'mpx::nn']]],
  ['keep_1',['Keep',['../batcher_8hpp.html#a52509f97f6fde3a39dbceaecab6894f8a02bce93bff905887ad2233110bf9c49e',1,'mpx::data']]]
];
