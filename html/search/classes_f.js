var searchData=
[
  ['safetensorsfile_0',['SafetensorsFile',['../classmpx_1_1io_1_1SafetensorsFile.html',1,'mpx::io']]],
  ['savedpointer_1',['SavedPointer',['../classmpx_1_1nn_1_1SavedPointer.html',1,'mpx::nn']]],
  ['savedpointer_3c_20mpx_3a_3atensor_3c_20output_5ftype_2c_20device_5ftype_20_3e_20_3e_2',['SavedPointer&lt; mpx::Tensor&lt; output_type, device_type &gt; &gt;',['../classmpx_1_1nn_1_1SavedPointer.html',1,'mpx::nn']]],
  ['savedpointer_3c_20mpx_3a_3atensor_3c_20t_2c_20host_20_3e_20_3e_3',['SavedPointer&lt; mpx::Tensor&lt; T, Host &gt; &gt;',['../classmpx_1_1nn_1_1SavedPointer.html',1,'mpx::nn']]],
  ['sequential_4',['Sequential',['../classmpx_1_1nn_1_1Sequential.html',1,'mpx::nn']]],
  ['sgd_5',['SGD',['../classmpx_1_1optim_1_1SGD.html',1,'mpx::optim']]],
  ['sgdsettings_6',['SgdSettings',['../structmpx_1_1SgdSettings.html',1,'mpx']]],
  ['shape_7',['Shape',['../classmpx_1_1Shape.html',1,'mpx']]],
  ['shape_5ferror_8',['shape_error',['../classmpx_1_1shape__error.html',1,'mpx']]],
  ['softmax_9',['Softmax',['../structmpx_1_1op_1_1Softmax.html',1,'mpx::op']]],
  ['softmaxcrossentropy_10',['SoftmaxCrossEntropy',['../classmpx_1_1nn_1_1SoftmaxCrossEntropy.html',1,'mpx::nn']]],
  ['staticlossscaling_11',['StaticLossScaling',['../structmpx_1_1StaticLossScaling.html',1,'mpx']]],
  ['stepmemory_12',['StepMemory',['../structmpx_1_1StepMemory.html',1,'mpx']]],
  ['stepresult_13',['StepResult',['../structmpx_1_1StepResult.html',1,'mpx']]],
  ['stepscalars_14',['StepScalars',['../structmpx_1_1cuda_1_1StepScalars.html',1,'mpx::cuda']]]
];
