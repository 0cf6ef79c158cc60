// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Composition for sequence models: layers on [batch, sequence, features] activations (bit-identical
// to the same rows as a matrix), Residual and nested Sequential (gradients against finite differences
// in fp64, stable nested names, labels in messages, nested descriptions), training and evaluation
// modes, and a Trainer driving a nested model.

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mpx/io/model_json.hpp"
#include "mpx/nn/activation.hpp"
#include "mpx/nn/layer_norm.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/loss.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/optim/adamw.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/train/trainer.hpp"

#include "../support/gradient_check.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace nn = mpx::nn;
using namespace mpx::test;  // the gradient checks
using mpx::Shape;
using mpx::Tensor;

// The pre-LN transformer's MLP half, on any precision: x + W2 gelu(W1 LN(x)).
template <class P>
auto mlp_block(std::int64_t width) {
  using L = nn::layers<P>;
  return nn::Residual{nn::Sequential{L::layer_norm(width), L::linear(width, 3 * width, nn::gelu),
                                     L::linear(3 * width, width)}};
}

template <class T>
bool same_bits(const Tensor<T>& a, const Tensor<T>& b) {
  if (!(a.shape() == b.shape())) return false;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("Linear, LayerNorm and GELU on [batch, sequence, features] equal the same rows as a matrix",
          "[nn][sequence]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  using L = nn::layers<P>;
  nn::Sequential model{L::linear(12, 20, nn::gelu), L::layer_norm(20), L::linear(20, 9)};
  model.initialize(7);
  std::mt19937_64 rng(3);
  Tensor<T> x3 = uniform_tensor<T>(Shape{2, 5, 12}, rng, -1.0, 1.0);
  Tensor<T> x2 = x3.clone();
  x2.reshape(Shape{10, 12});

  const Tensor<T> y3 = model.forward(x3).clone();
  REQUIRE(y3.shape() == Shape{2, 5, 9});
  Tensor<T> dy = uniform_tensor<T>(Shape{2, 5, 9}, rng, -1.0, 1.0);
  model.zero_grad();
  const Tensor<T> dx3 = model.backward(dy, true)->clone();
  std::vector<Tensor<float>> grads3;
  model.for_each_parameter([&](auto, auto& p) { grads3.push_back(p.grad().clone()); });

  Tensor<T> y2 = model.forward(x2).clone();
  y2.reshape(Shape{2, 5, 9});
  CHECK(same_bits(y2, y3));
  dy.reshape(Shape{10, 9});
  model.zero_grad();
  Tensor<T> dx2 = model.backward(dy, true)->clone();
  dx2.reshape(Shape{2, 5, 12});
  CHECK(same_bits(dx2, dx3));
  std::size_t index = 0;
  model.for_each_parameter([&](auto name, auto& p) {
    INFO(name);
    CHECK(same_bits(p.grad(), grads3[index++]));
  });
}

TEST_CASE("Residual of a nested Sequential: gradients match finite differences in fp64",
          "[nn][gradient][residual]") {
  for (const std::int64_t sequence : {1, 7}) {
    CAPTURE(sequence);
    std::mt19937_64 rng(40 + static_cast<std::uint64_t>(sequence));
    nn::Sequential model{mlp_block<mpx::fp64>(6), mlp_block<mpx::fp64>(6), nn::Linear<mpx::fp64>(6, 4)};
    model.initialize(11);
    randomize_parameters(model, rng);  // unit gamma and zero biases would hide paths
    Tensor<double> x = uniform_tensor(Shape{3, sequence, 6}, rng, -1.0, 1.0);
    const Tensor<double> w = uniform_tensor(Shape{3, sequence, 4}, rng, -1.0, 1.0);
    check_layer_gradients(model, x, w);
  }
}

TEST_CASE("Residual adds the block's output to its input and sends the gradient down both paths",
          "[nn][residual]") {
  using P = mpx::fp32;
  nn::Residual block{nn::Sequential{nn::Linear<P>(3, 3, {.bias = false})}};
  // W = 2 I: y = x + 2x = 3x, and dx = dy + 2 dy = 3 dy.
  auto& weight = block.block().layer<0>().weight().master();
  weight.set_zero();
  for (int i = 0; i < 3; ++i) weight[i * 3 + i] = 2.0f;
  Tensor<float> x(Shape{2, 3});
  for (int i = 0; i < 6; ++i) x[i] = static_cast<float>(i) - 2.5f;
  const auto& y = block.forward(x);
  for (int i = 0; i < 6; ++i) CHECK(y[i] == 3.0f * x[i]);
  Tensor<float> dy(Shape{2, 3});
  for (int i = 0; i < 6; ++i) dy[i] = 0.5f * static_cast<float>(i + 1);
  const auto* dx = block.backward(dy, true);
  REQUIRE(dx != nullptr);
  for (int i = 0; i < 6; ++i) CHECK((*dx)[i] == 3.0f * dy[i]);
  CHECK(block.backward(dy, false) == nullptr);
}

TEST_CASE("Nested models name parameters by path, label layers by path and describe themselves as trees",
          "[nn][residual]") {
  using P = mpx::bf16_mixed;
  nn::Sequential model{nn::Linear<P>(4, 6), mlp_block<P>(6), nn::Linear<P>(6, 2)};
  std::vector<std::string> names;
  model.for_each_parameter([&](auto name, auto&) { names.emplace_back(name); });
  CHECK(names == std::vector<std::string>{"layers.0.weight", "layers.0.bias",
                                          "layers.1.block.layers.0.weight", "layers.1.block.layers.0.bias",
                                          "layers.1.block.layers.1.weight", "layers.1.block.layers.1.bias",
                                          "layers.1.block.layers.2.weight", "layers.1.block.layers.2.bias",
                                          "layers.2.weight", "layers.2.bias"});

  // A shape error inside the block names the inner layer by its path.
  Tensor<mpx::compute_t<P>> wrong(Shape{2, 6, 5});
  REQUIRE_THROWS_WITH(model.layer<1>().forward(wrong),
                      Catch::Contains("layers.1.block.layers.0 (LayerNorm)") && Catch::Contains("[2, 6, 5]"));

  const std::string json = mpx::io::model_json(model);
  CHECK_THAT(json,
             Catch::Contains(R"({"kind":"Residual","precision":"bf16_mixed","block":[{"kind":"Sequential",)"
                             R"("precision":"bf16_mixed","layers":[{"kind":"LayerNorm")"));
  CHECK_THAT(json,
             Catch::EndsWith(R"({"kind":"Linear","precision":"bf16_mixed","in_features":6,"out_features":2,)"
                             R"("bias":true,"activation":"None"}]})"));

  // Nested layers draw from their own streams: no two weights of the same shape start equal.
  model.initialize(5);
  const auto& w1 = model.layer<1>().block().layer<1>().weight().master();
  const auto& w0 = model.layer<0>().weight().master();
  CHECK(w0[0] != w1[0]);
}

TEST_CASE("Training and evaluation modes reach nested layers; EvaluationMode restores the mode",
          "[nn][mode]") {
  using P = mpx::fp32;
  nn::Sequential model{nn::Linear<P>(4, 4), mlp_block<P>(4)};
  CHECK(nn::is_training(model));
  CHECK(model.layer<1>().training());
  {
    const nn::EvaluationMode evaluating(model);
    CHECK_FALSE(nn::is_training(model));
    CHECK_FALSE(model.layer<1>().training());
  }
  CHECK(model.layer<1>().training());
  nn::set_training(model, false);
  { const nn::EvaluationMode evaluating(model); }
  CHECK_FALSE(model.layer<1>().training());  // it was in evaluation mode before the scope
}

TEST_CASE("A Trainer fits a residual model on [batch, sequence, features] data", "[nn][residual][trainer]") {
  using P = mpx::bf16_mixed;
  using L = nn::layers<P>;
  nn::Sequential model{L::linear(8, 16), mlp_block<P>(16), L::layer_norm(16), L::linear(16, 8)};
  model.initialize(1);
  auto loss = L::mse_loss();
  mpx::optim::AdamW optimizer(model, {.lr = 3e-3});
  mpx::Trainer trainer(model, loss, optimizer);
  std::mt19937_64 rng(9);
  // Target: each position's features reversed, a function the model can learn row by row.
  Tensor<float> x = uniform_tensor<float>(Shape{4, 6, 8}, rng, -1.0, 1.0);
  Tensor<float> target(Shape{4, 6, 8});
  for (std::int64_t r = 0; r < 24; ++r)
    for (std::int64_t c = 0; c < 8; ++c) target[r * 8 + c] = x[r * 8 + 7 - c];
  const double first = trainer.step(x, target).loss;
  double last = first;
  for (int i = 0; i < 300; ++i) last = trainer.step(x, target).loss;
  CHECK(last < 0.05 * first);
}

}  // namespace MPX_UNITY_ID
}  // namespace
