var searchData=
[
  ['op_5fprecision_0',['op_precision',['../structmpx_1_1op__precision.html',1,'mpx']]],
  ['optimizer_5fstate_5fnames_1',['optimizer_state_names',['../structmpx_1_1io_1_1optimizer__state__names.html',1,'mpx::io']]],
  ['optimizer_5fstate_5fnames_3c_20optim_3a_3aadamw_3c_20model_20_3e_20_3e_2',['optimizer_state_names&lt; optim::AdamW&lt; Model &gt; &gt;',['../structmpx_1_1io_1_1optimizer__state__names_3_01optim_1_1AdamW_3_01Model_01_4_01_4.html',1,'mpx::io']]],
  ['optimizer_5fstate_5fnames_3c_20optim_3a_3asgd_3c_20model_20_3e_20_3e_3',['optimizer_state_names&lt; optim::SGD&lt; Model &gt; &gt;',['../structmpx_1_1io_1_1optimizer__state__names_3_01optim_1_1SGD_3_01Model_01_4_01_4.html',1,'mpx::io']]],
  ['optimizerupdate_4',['OptimizerUpdate',['../structmpx_1_1op_1_1OptimizerUpdate.html',1,'mpx::op']]],
  ['options_5',['Options',['../structmpx_1_1data_1_1Batcher_1_1Options.html',1,'mpx::data::Batcher::Options'],['../structmpx_1_1DynamicLossScaling_1_1Options.html',1,'mpx::DynamicLossScaling::Options'],['../structmpx_1_1nn_1_1Linear_1_1Options.html',1,'mpx::nn::Linear&lt; P, A, Device &gt;::Options'],['../structmpx_1_1nn_1_1SoftmaxCrossEntropy_1_1Options.html',1,'mpx::nn::SoftmaxCrossEntropy&lt; P, Device &gt;::Options'],['../structmpx_1_1NoLossScaling_1_1Options.html',1,'mpx::NoLossScaling::Options'],['../structmpx_1_1StaticLossScaling_1_1Options.html',1,'mpx::StaticLossScaling::Options'],['../structmpx_1_1Trainer_1_1Options.html',1,'mpx::Trainer&lt; Model, Loss, Optimizer, Scaling &gt;::Options']]],
  ['out_5fof_5fmemory_6',['out_of_memory',['../classmpx_1_1out__of__memory.html',1,'mpx']]]
];
