var searchData=
[
  ['memory_2ehpp_0',['memory.hpp',['../memory_8hpp.html',1,'']]],
  ['memory_5fstats_2ehpp_1',['memory_stats.hpp',['../memory__stats_8hpp.html',1,'']]],
  ['models_2ehpp_2',['models.hpp',['../models_8hpp.html',1,'']]],
  ['mpx_2ehpp_3',['mpx.hpp',['../mpx_8hpp.html',1,'']]],
  ['mse_5floss_2ecuh_4',['mse_loss.cuh',['../mse__loss_8cuh.html',1,'']]],
  ['mse_5floss_2ehpp_5',['mse_loss.hpp',['../mse__loss_8hpp.html',1,'']]]
];
