var searchData=
[
  ['m_0',['m',['../structmpx_1_1GemmShape.html#a4aed2558522e553eca9a15c35dc3fff5',1,'mpx::GemmShape']]],
  ['major_1',['major',['../structmpx_1_1Version.html#ae5eff3d1c0b6b8f8ddc4b156234b8b54',1,'mpx::Version']]],
  ['max_5felements_2',['max_elements',['../classmpx_1_1Shape.html#a7c71b8ce0335e4607fdc7638ba11ebbe',1,'mpx::Shape']]],
  ['max_5fgrad_5fnorm_3',['max_grad_norm',['../structmpx_1_1Trainer_1_1Options.html#aef90bb30815ced731f6e41a6a1afa867',1,'mpx::Trainer::Options']]],
  ['max_5fidx_5fdata_5fbytes_4',['max_idx_data_bytes',['../idx_8hpp.html#acb42980398627f6d3299d10a4c3bdfe2',1,'mpx::data']]],
  ['max_5frank_5',['max_rank',['../classmpx_1_1Shape.html#af07e7cda3e7663776ebb651e5799c477',1,'mpx::Shape']]],
  ['max_5fsafetensors_5fheader_5fbytes_6',['max_safetensors_header_bytes',['../safetensors_8hpp.html#ad5d02caf1004cb6a37effa74ed1203a1',1,'mpx::io']]],
  ['max_5fscale_7',['max_scale',['../structmpx_1_1DynamicLossScaling_1_1Options.html#a7a15c19cc14116bb668386a1f04df83a',1,'mpx::DynamicLossScaling::Options']]],
  ['min_5fscale_8',['min_scale',['../structmpx_1_1DynamicLossScaling_1_1Options.html#a4ca73e507be1cb046f37e94b8055a136',1,'mpx::DynamicLossScaling::Options']]],
  ['minor_9',['minor',['../structmpx_1_1Version.html#a8415c130b7b40e5e18f319a6eed547e0',1,'mpx::Version']]],
  ['momentum_10',['momentum',['../structmpx_1_1SgdSettings.html#a17811c8bf8f6d26372d9601f0b51948f',1,'mpx::SgdSettings']]],
  ['mse_5floss_5fpartials_11',['mse_loss_partials',['../mse__loss_8cuh.html#a6c53ece98e03f8a14bf158832d21ac6f',1,'mpx::cuda']]]
];
