var searchData=
[
  ['operator_2b_0',['operator+',['../structmpx_1_1cpu_1_1GradientStats.html#ae24c48b72114c37a299f7863c41cbfe5',1,'mpx::cpu::GradientStats']]],
  ['operator_3c_3c_1',['operator&lt;&lt;',['../classmpx_1_1Shape.html#a7e276885ad1b70f3e13d03bbc75bf79e',1,'mpx::Shape']]],
  ['operator_3d_3d_2',['operator==',['../structmpx_1_1LossScalerState.html#ad1010e9fbb6945cbd1dd298d0e8a019c',1,'mpx::LossScalerState::operator==()'],['../classmpx_1_1Shape.html#a3cfc3a43cd6b47ce6679742d3d993678',1,'mpx::Shape::operator==()']]]
];
