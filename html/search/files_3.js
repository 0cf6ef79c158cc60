var searchData=
[
  ['data_5ftype_2ehpp_0',['data_type.hpp',['../data__type_8hpp.html',1,'']]],
  ['dataset_2ehpp_1',['dataset.hpp',['../dataset_8hpp.html',1,'']]],
  ['device_2ehpp_2',['device.hpp',['../device_8hpp.html',1,'']]],
  ['device_5farray_2ehpp_3',['device_array.hpp',['../device__array_8hpp.html',1,'']]]
];
