// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// nn::layers<P, Device>: the factories make exactly the class templates' layers and losses, options
// and initialisation included, and a model made from them trains.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Tensor;

}  // namespace

TEST_CASE("nn::layers<P, Device> makes the layers and losses of P on Device", "[nn][layers]") {
  using P = mpx::bf16_mixed;
  using L = mpx::nn::layers<P>;
  static_assert(std::is_same_v<L::precision, P> && std::is_same_v<L::device_type, mpx::Host>);
  static_assert(std::is_same_v<decltype(L::linear(2, 3)), mpx::nn::Linear<P>>);
  static_assert(std::is_same_v<decltype(L::linear(2, 3, mpx::nn::relu)),
                               mpx::nn::Linear<P, mpx::nn::Activation::ReLU, mpx::Host>>);
  static_assert(std::is_same_v<decltype(L::linear(2, 3, mpx::nn::gelu)),
                               mpx::nn::Linear<P, mpx::nn::Activation::GELU, mpx::Host>>);
  static_assert(std::is_same_v<decltype(L::layer_norm(3)), mpx::nn::LayerNorm<P>>);
  static_assert(std::is_same_v<decltype(L::softmax_cross_entropy()), mpx::nn::SoftmaxCrossEntropy<P>>);
  static_assert(std::is_same_v<decltype(L::mse_loss()), mpx::nn::MSELoss<P>>);
  static_assert(std::is_same_v<decltype(mpx::nn::layers<mpx::fp32, mpx::Cuda>::linear(2, 3)),
                               mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::None, mpx::Cuda>>);

  // Options pass through: no bias; the same initialisation as the class template's.
  auto plain = L::linear(4, 3, {}, {.bias = false});
  CHECK(plain.bias() == nullptr);
  auto made = L::linear(4, 3, mpx::nn::relu);
  mpx::nn::Linear<P, mpx::nn::Activation::ReLU> direct(4, 3);
  made.initialize(7, 1);
  direct.initialize(7, 1);
  CHECK(std::equal(made.weight().master().values().begin(), made.weight().master().values().end(),
                   direct.weight().master().values().begin()));

  // A model from them trains, with the loss from the same bundle (the head's: fp32).
  using Head = mpx::nn::layers<mpx::fp32>;
  mpx::nn::Sequential model{L::linear(4, 8, mpx::nn::relu), L::layer_norm(8), Head::linear(8, 2)};
  model.initialize(3);
  auto loss = Head::mse_loss();
  mpx::optim::SGD optimizer(model, {.lr = 0.05});
  mpx::Trainer trainer(model, loss, optimizer);
  Tensor<float> x(Shape{4, 4});
  Tensor<float> y(Shape{4, 2});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = static_cast<float>(i % 5) - 2.0f;
  for (std::int64_t i = 0; i < y.numel(); ++i) y[i] = static_cast<float>(i % 3) - 1.0f;
  const double first = trainer.step(x, y).loss;
  double last = first;
  for (int step = 0; step < 20; ++step) last = trainer.step(x, y).loss;
  CHECK(last < first);
}

}  // namespace MPX_UNITY_ID
}  // namespace
