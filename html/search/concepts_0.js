var searchData=
[
  ['element_0',['Element',['../conceptmpx_1_1Element.html',1,'mpx']]],
  ['layer_1',['Layer',['../conceptmpx_1_1nn_1_1Layer.html',1,'mpx::nn']]],
  ['layerprecisionplan_2',['LayerPrecisionPlan',['../conceptmpx_1_1experiment_1_1LayerPrecisionPlan.html',1,'mpx::experiment']]],
  ['lossscalingpolicy_3',['LossScalingPolicy',['../conceptmpx_1_1LossScalingPolicy.html',1,'mpx']]],
  ['numerictag_4',['NumericTag',['../conceptmpx_1_1NumericTag.html',1,'mpx']]],
  ['precisionpolicy_5',['PrecisionPolicy',['../conceptmpx_1_1PrecisionPolicy.html',1,'mpx']]],
  ['record_6',['Record',['../conceptmpx_1_1experiment_1_1Record.html',1,'mpx::experiment']]],
  ['sixteenbitelement_7',['SixteenBitElement',['../conceptmpx_1_1SixteenBitElement.html',1,'mpx']]],
  ['sixteenbittag_8',['SixteenBitTag',['../conceptmpx_1_1SixteenBitTag.html',1,'mpx']]]
];
