var searchData=
[
  ['mpx_20api_20reference_0',['mpx API reference',['../index.html',1,'']]]
];
