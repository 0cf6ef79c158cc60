var searchData=
[
  ['launch_2ecuh_0',['launch.cuh',['../launch_8cuh.html',1,'']]],
  ['layer_2ehpp_1',['layer.hpp',['../layer_8hpp.html',1,'']]],
  ['layer_5fnorm_2ecuh_2',['layer_norm.cuh',['../layer__norm_8cuh.html',1,'']]],
  ['layer_5fnorm_2ehpp_3',['layer_norm.hpp',['../backend_2cpu_2layer__norm_8hpp.html',1,'(Global Namespace)'],['../nn_2layer__norm_8hpp.html',1,'(Global Namespace)']]],
  ['layer_5fprecisions_2ehpp_4',['layer_precisions.hpp',['../layer__precisions_8hpp.html',1,'']]],
  ['linear_2ehpp_5',['linear.hpp',['../linear_8hpp.html',1,'']]],
  ['log_2ehpp_6',['log.hpp',['../log_8hpp.html',1,'']]],
  ['loss_2ehpp_7',['loss.hpp',['../loss_8hpp.html',1,'']]],
  ['loss_5fscale_5fupdate_2ehpp_8',['loss_scale_update.hpp',['../loss__scale__update_8hpp.html',1,'']]],
  ['loss_5fscaler_2ehpp_9',['loss_scaler.hpp',['../loss__scaler_8hpp.html',1,'']]],
  ['loss_5fscaling_2ehpp_10',['loss_scaling.hpp',['../loss__scaling_8hpp.html',1,'']]],
  ['loss_5fseed_2ehpp_11',['loss_seed.hpp',['../loss__seed_8hpp.html',1,'']]]
];
