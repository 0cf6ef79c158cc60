var searchData=
[
  ['fashion_5fmnist_2ehpp_0',['fashion_mnist.hpp',['../fashion__mnist_8hpp.html',1,'']]]
];
