var searchData=
[
  ['master_5felement_0',['master_element',['../classmpx_1_1nn_1_1Parameter.html#a554f931271dd1e172d97be40f59910d3',1,'mpx::nn::Parameter']]],
  ['master_5ft_1',['master_t',['../precision_8hpp.html#afd99ce63c3ca95df9f954f9fe34ea84e',1,'mpx']]],
  ['master_5ftype_2',['master_type',['../structmpx_1_1Precision.html#a89f231c3962e6ba674d83d5d5f69bd09',1,'mpx::Precision']]],
  ['math_3',['math',['../structmpx_1_1op__precision.html#a8051e97ab21fb85bf711254eb7a81c5c',1,'mpx::op_precision']]],
  ['math_5ft_4',['math_t',['../traits_8hpp.html#a481b3c1c55867b2ddcd06729bfbaca7f',1,'mpx']]],
  ['matrixmap_5',['MatrixMap',['../classmpx_1_1Tensor.html#abb06a45c9fa1c45446fd1103942d9274',1,'mpx::Tensor']]],
  ['metadata_6',['Metadata',['../checkpoint_8hpp.html#a4faaee2a0e86d8076daaef563dc8f78e',1,'mpx::io']]],
  ['mlp3_7',['Mlp3',['../models_8hpp.html#aaf0a02ddc11cf0cf145feeb610f5372a',1,'mpx::experiment']]],
  ['mlp3layernorm_8',['Mlp3LayerNorm',['../models_8hpp.html#a083870a6b4739284b54d401e6abb30c8',1,'mpx::experiment']]],
  ['model_5fdefault_5fscaler_5ft_9',['model_default_scaler_t',['../trainer_8hpp.html#a0ad2fca233672297bfb8854d4fd26c45',1,'mpx']]]
];
