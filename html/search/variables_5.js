var searchData=
[
  ['fashion_5fmnist_5fclasses_0',['fashion_mnist_classes',['../fashion__mnist_8hpp.html#a27752dacd4d0b0c14504c535b7af118e',1,'mpx::data']]],
  ['fashion_5fmnist_5fsystem_5fdir_1',['fashion_mnist_system_dir',['../fashion__mnist_8hpp.html#a319cc14d6626a008525530ed975faf79',1,'mpx::data']]],
  ['finite_2',['finite',['../structmpx_1_1cpu_1_1GradientStats.html#a74fba440b14626296d8be3a4b5ac0cbe',1,'mpx::cpu::GradientStats']]]
];
