var searchData=
[
  ['op_5fprecision_2ehpp_0',['op_precision.hpp',['../op__precision_8hpp.html',1,'']]],
  ['optimizer_2ehpp_1',['optimizer.hpp',['../optimizer_8hpp.html',1,'']]],
  ['optimizer_5fbase_2ehpp_2',['optimizer_base.hpp',['../optimizer__base_8hpp.html',1,'']]],
  ['optimizer_5fsettings_2ehpp_3',['optimizer_settings.hpp',['../optimizer__settings_8hpp.html',1,'']]]
];
