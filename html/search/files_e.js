var searchData=
[
  ['random_2ehpp_0',['random.hpp',['../random_8hpp.html',1,'']]],
  ['read_5ffile_2ehpp_1',['read_file.hpp',['../read__file_8hpp.html',1,'']]],
  ['records_2ehpp_2',['records.hpp',['../records_8hpp.html',1,'']]],
  ['reduce_2ecuh_3',['reduce.cuh',['../reduce_8cuh.html',1,'']]],
  ['rounding_2ehpp_4',['rounding.hpp',['../rounding_8hpp.html',1,'']]]
];
