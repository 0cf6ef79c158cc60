var searchData=
[
  ['parse_5fsafetensors_0',['parse_safetensors',['../classmpx_1_1io_1_1SafetensorsFile.html#ae508b37cbfb28f851e62541b01d1837d',1,'mpx::io::SafetensorsFile']]]
];
