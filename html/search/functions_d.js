var searchData=
[
  ['parallel_5ffor_5fchunks_0',['parallel_for_chunks',['../parallel_8hpp.html#aa2d0573270a674fa531681edaa8bb5d1',1,'mpx::cpu']]],
  ['parallel_5fsum_5fchunks_1',['parallel_sum_chunks',['../parallel_8hpp.html#aa7fbd4ea5e5b325675e6c0fd3a604ead',1,'mpx::cpu']]],
  ['parameter_2',['Parameter',['../classmpx_1_1nn_1_1Parameter.html#ad5963dcf17503741d400789c12b3d64a',1,'mpx::nn::Parameter']]],
  ['parameter_5fcount_3',['parameter_count',['../classmpx_1_1nn_1_1Sequential.html#accca4abe0398e15d37b7a75774badd29',1,'mpx::nn::Sequential']]],
  ['parse_4',['parse',['../json_8hpp.html#a9fa09384af77843bc2355eb25bc499f2',1,'mpx::io::json']]],
  ['parse_5fsafetensors_5',['parse_safetensors',['../safetensors_8hpp.html#ae0a50672347b63e63e2e11d6d2c5b029',1,'mpx::io']]],
  ['peak_6',['peak',['../classmpx_1_1PeakWindow.html#a800e0a21db09cc96175d7aa1f82a726d',1,'mpx::PeakWindow']]],
  ['peak_5fbytes_7',['peak_bytes',['../classmpx_1_1MemoryStats.html#a2fe0e0834cf9be9065f32948f9ec1d44',1,'mpx::MemoryStats']]],
  ['peakwindow_8',['PeakWindow',['../classmpx_1_1PeakWindow.html#ac9864f25b1b5233b290d1dff510da88d',1,'mpx::PeakWindow']]],
  ['philox_5fblock_9',['philox_block',['../random_8hpp.html#a4cabe1c802fed01fa96e3b85e1ef062d',1,'mpx']]],
  ['position_10',['position',['../classmpx_1_1data_1_1Batcher.html#a3fd2bbb7ff0fc3982d2ce8174c77bbc6',1,'mpx::data::Batcher']]],
  ['progressbar_11',['ProgressBar',['../classmpx_1_1experiment_1_1ProgressBar.html#a3cbe1183f5247ff44a09bd219ebb329d',1,'mpx::experiment::ProgressBar']]],
  ['properties_12',['properties',['../classmpx_1_1CudaContext.html#a3ff465f8f8638a45b319568987461bda',1,'mpx::CudaContext']]],
  ['pull_13',['pull',['../classmpx_1_1TrainingState_3_01Cuda_00_01Grad_01_4.html#a5df3f612637bf5eae2ccc6713c866a54',1,'mpx::TrainingState&lt; Cuda, Grad &gt;']]],
  ['push_5fif_5fchanged_14',['push_if_changed',['../classmpx_1_1TrainingState_3_01Cuda_00_01Grad_01_4.html#a5a21133e3e45185d85246560871913d8',1,'mpx::TrainingState&lt; Cuda, Grad &gt;']]]
];
