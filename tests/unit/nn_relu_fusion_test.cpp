// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The ReLU gradient fused into the next layer's dx GEMM (nn/linear.hpp, Sequential::backward): the
// ReluAuxBias bit mask, the DRelu/DReluBGrad epilogues that read it, and a Sequential's gradients,
// bit for bit, against the same layers run one by one without the fusion (relu_backward on the
// output), over micro-batches too.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"
#include "../support/gradient_check.hpp"

#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/error.hpp"
#include "mpx/experiment/models.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/convert.hpp"
#include "mpx/tensor/tensor.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace nn = mpx::nn;
using mpx::Epilogue;
using mpx::GemmConfig;
using mpx::Shape;
using mpx::Tensor;

// Uniform on [-1, 1) from the stream `seed`.
Tensor<float> uniform_tensor(const Shape& shape, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return mpx::test::uniform_tensor<float>(shape, rng, -1.0, 1.0);
}

TEST_CASE("ReluAuxBias writes relu(t + bias) and a bit mask of t + bias > 0 with zero padding",
          "[gemm][relu][fusion]") {
  // N = 150: five words per row hold the bits, the mask row has relu_mask_words(150) = 8.
  constexpr std::int64_t m = 7, n = 150, k = 33;
  const Tensor<float> a = uniform_tensor(Shape{m, k}, 1);
  const Tensor<float> b = uniform_tensor(Shape{k, n}, 2);
  const Tensor<float> bias = uniform_tensor(Shape{n}, 3);
  REQUIRE(mpx::relu_mask_words(n) == 8);
  REQUIRE(mpx::relu_mask_words(128) == 4);
  REQUIRE(mpx::relu_mask_words(129) == 8);

  Tensor<float> pre(Shape{m, n});
  mpx::cpu::gemm<mpx::Float>(a, b, pre, GemmConfig{.epilogue = Epilogue::Bias}, {.bias = &bias});
  Tensor<float> relu_d(Shape{m, n});
  mpx::cpu::gemm<mpx::Float>(a, b, relu_d, GemmConfig{.epilogue = Epilogue::ReluBias}, {.bias = &bias});
  Tensor<float> d(Shape{m, n});
  Tensor<std::int32_t> mask(mpx::relu_mask_shape(d.shape()));
  for (std::int32_t& word : mask.values()) word = -1;  // every bit set: the padding must be cleared
  mpx::cpu::GemmOperands<float, float> operands{.bias = &bias};
  operands.relu_mask = &mask;
  mpx::cpu::gemm<mpx::Float>(a, b, d, GemmConfig{.epilogue = Epilogue::ReluAuxBias}, operands);

  std::int64_t positive = 0;
  for (std::int64_t row = 0; row < m; ++row) {
    const std::int32_t* row_mask = mask.data() + row * mpx::relu_mask_words(n);
    for (std::int64_t col = 0; col < n; ++col) {
      const float x = pre[row * n + col];
      REQUIRE(mpx::relu_mask_bit(row_mask, col) == (x > 0.0f));
      REQUIRE(std::bit_cast<std::uint32_t>(d[row * n + col]) ==
              std::bit_cast<std::uint32_t>(relu_d[row * n + col]));
      positive += x > 0.0f ? 1 : 0;
    }
    for (std::int64_t col = n; col < mpx::relu_mask_words(n) * 32; ++col) {
      REQUIRE_FALSE(mpx::relu_mask_bit(row_mask, col));
    }
  }
  // Both signs occur, so neither an all-ones nor an all-zeros mask passes.
  CHECK(positive > m * n / 4);
  CHECK(positive < 3 * m * n / 4);
}

TEST_CASE("DRelu and DReluBGrad multiply by the mask's bits; the bias gradient sums D's columns",
          "[gemm][relu][fusion]") {
  constexpr std::int64_t m = 9, n = 40, k = 17;
  const Tensor<float> a = uniform_tensor(Shape{m, k}, 4);
  const Tensor<float> b = uniform_tensor(Shape{k, n}, 5);
  const Tensor<float> forward_a = uniform_tensor(Shape{m, 12}, 6);
  const Tensor<float> forward_b = uniform_tensor(Shape{12, n}, 7);
  const Tensor<float> bias = uniform_tensor(Shape{n}, 8);
  Tensor<float> forward_d(Shape{m, n});
  Tensor<std::int32_t> mask(mpx::relu_mask_shape(forward_d.shape()));
  mpx::cpu::GemmOperands<float, float> forward_operands{.bias = &bias};
  forward_operands.relu_mask = &mask;
  mpx::cpu::gemm<mpx::Float>(forward_a, forward_b, forward_d, GemmConfig{.epilogue = Epilogue::ReluAuxBias},
                             forward_operands);

  Tensor<float> t(Shape{m, n});
  mpx::cpu::gemm<mpx::Float>(a, b, t, GemmConfig{});
  Tensor<float> d(Shape{m, n});
  Tensor<float> bias_grad(Shape{n});
  mpx::cpu::GemmOperands<float, float> operands;
  operands.relu_mask = &mask;
  operands.bias_grad = &bias_grad;
  mpx::cpu::gemm<mpx::Float>(a, b, d, GemmConfig{.epilogue = Epilogue::DReluBGrad}, operands);
  Tensor<float> d_only(Shape{m, n});
  operands.bias_grad = nullptr;
  mpx::cpu::gemm<mpx::Float>(a, b, d_only, GemmConfig{.epilogue = Epilogue::DRelu}, operands);

  for (std::int64_t col = 0; col < n; ++col) {
    float column_sum = 0.0f;  // rows in order, as the spec sums them
    for (std::int64_t row = 0; row < m; ++row) {
      const std::int64_t i = row * n + col;
      const float expected = forward_d[i] > 0.0f ? t[i] : 0.0f * t[i];
      REQUIRE(std::bit_cast<std::uint32_t>(d[i]) == std::bit_cast<std::uint32_t>(expected));
      REQUIRE(std::bit_cast<std::uint32_t>(d_only[i]) == std::bit_cast<std::uint32_t>(expected));
      column_sum += d[i];
    }
    REQUIRE(bias_grad[col] == column_sum);
  }
}

TEST_CASE("The ReLU epilogues refuse a missing or misshapen mask, naming the shape they need",
          "[gemm][relu][fusion][errors]") {
  const Tensor<float> a = uniform_tensor(Shape{4, 3}, 9);
  const Tensor<float> b = uniform_tensor(Shape{3, 5}, 10);
  const Tensor<float> bias = uniform_tensor(Shape{5}, 11);
  Tensor<float> d(Shape{4, 5});
  CHECK_THROWS_MATCHES(
      mpx::cpu::gemm<mpx::Float>(a, b, d, GemmConfig{.epilogue = Epilogue::ReluAuxBias}, {.bias = &bias}),
      mpx::invalid_argument,
      mpx::test::MessageContains({"epilogue relu_aux_bias needs a relu_mask tensor of shape [4, 4]"}));
  Tensor<std::int32_t> narrow(Shape{4, 1});
  mpx::cpu::GemmOperands<float, float> operands;
  operands.relu_mask = &narrow;
  CHECK_THROWS_MATCHES(mpx::cpu::gemm<mpx::Float>(a, b, d, GemmConfig{.epilogue = Epilogue::DRelu}, operands),
                       mpx::shape_error, mpx::test::MessageContains({"relu_mask"}));
}

/// The gradients of `model` after backward over `micro_batches` inputs, by `for_each_parameter`.
template <class Model, class Run>
std::vector<Tensor<float>> gradients_after(Model& model, int micro_batches, const Run& run) {
  model.zero_grad();
  for (int i = 0; i < micro_batches; ++i) run(model, i);
  std::vector<Tensor<float>> gradients;
  model.for_each_parameter([&](std::string_view, auto& parameter) {
    gradients.push_back(mpx::convert<mpx::Float>(parameter.grad()));
  });
  return gradients;
}

template <class P>
void check_sequential_fusion() {
  using T = mpx::compute_t<P>;
  constexpr std::int64_t batch = 24;
  auto model = mpx::experiment::mlp3<P>(30, 40, 20, 6);
  model.initialize(17);
  using Model = decltype(model);
  // Layer 1 applies layer 0's ReLU gradient, layer 2 layer 1's: the whole chain is fused.
  static_assert(!Model::template fuses_previous_activation<0>());
  static_assert(Model::template fuses_previous_activation<1>());
  static_assert(Model::template fuses_previous_activation<2>());

  std::vector<Tensor<T>> inputs;
  std::vector<Tensor<T>> upstream;
  for (int i = 0; i < 3; ++i) {
    inputs.push_back(mpx::convert<mpx::tag_of_t<T>>(uniform_tensor(Shape{batch, 30}, 100 + i)));
    upstream.push_back(mpx::convert<mpx::tag_of_t<T>>(uniform_tensor(Shape{batch, 6}, 200 + i)));
  }
  const auto fused_step = [&](Model& m, int i) {
    (void)m.forward(inputs[i]);
    (void)m.backward(upstream[i]);
  };
  // The same layers one by one: each Linear<ReLU> applies its own derivative (relu_backward on its
  // output) and takes its bias gradient from its dW GEMM.
  const auto layer_by_layer_step = [&](Model& m, int i) {
    const auto& h1 = m.template layer<0>().forward(inputs[i]);
    const auto& h2 = m.template layer<1>().forward(h1);
    (void)m.template layer<2>().forward(h2);
    const auto* d2 = m.template layer<2>().backward(upstream[i], true);
    const auto* d1 = m.template layer<1>().backward(*d2, true);
    (void)m.template layer<0>().backward(*d1, false);
  };
  for (const int micro_batches : {1, 3}) {
    INFO(micro_batches << " micro-batch(es)");
    const auto fused = gradients_after(model, micro_batches, fused_step);
    const auto unfused = gradients_after(model, micro_batches, layer_by_layer_step);
    REQUIRE(fused.size() == 6);
    // dZ is (dZ' W) * relu'(x) either way, rounded once to the compute type (the mask holds x > 0,
    // relu_backward reads the rounded relu(x) > 0: the same unless x is so small that it rounds to
    // zero); dW and the bias gradient are then the same GEMM of it.
    for (std::size_t p = 0; p < fused.size(); ++p) {
      INFO("gradient " << p);
      for (std::int64_t i = 0; i < fused[p].numel(); ++i) {
        REQUIRE(std::bit_cast<std::uint32_t>(fused[p][i]) == std::bit_cast<std::uint32_t>(unfused[p][i]));
      }
    }
  }
}

TEST_CASE("A Sequential's fused ReLU backward gives the gradients of the layers run one by one",
          "[nn][relu][fusion]") {
  SECTION("fp32") {
    check_sequential_fusion<mpx::fp32>();
  }
  SECTION("bf16_mixed") {
    check_sequential_fusion<mpx::bf16_mixed>();
  }
  SECTION("fp16_mixed") {
    check_sequential_fusion<mpx::fp16_mixed>();
  }
}

// Where Sequential inserts a Cast (an fp32 classifier after bf16 layers), the ReLU before it keeps
// its own backward; a layer without an activation hands nothing on.
using MixedHead = mpx::experiment::Mlp3<mpx::bf16_mixed, mpx::fp32>;
static_assert(MixedHead::fuses_previous_activation<1>());
static_assert(!MixedHead::fuses_previous_activation<2>());
static_assert(!nn::HandsOnActivationGradient<nn::Linear<mpx::fp32>>);
static_assert(!nn::HandsOnActivationGradient<nn::Linear<mpx::fp32, nn::Activation::GELU>>);
static_assert(nn::HandsOnActivationGradient<nn::Linear<mpx::fp32, nn::Activation::ReLU>>);

TEST_CASE("A fused ReLU backward after an evaluation-mode forward throws and names the layer",
          "[nn][relu][fusion][errors]") {
  auto model = mpx::experiment::mlp3<mpx::fp32>(8, 6, 5, 3);
  const Tensor<float> x = uniform_tensor(Shape{4, 8}, 12);
  const Tensor<float> dy = uniform_tensor(Shape{4, 3}, 13);
  nn::set_training(model, false);
  (void)model.forward(x);
  CHECK_THROWS_MATCHES(model.backward(dy), mpx::error,
                       mpx::test::MessageContains({"evaluation-mode forward"}));
}

}  // namespace

}  // namespace MPX_UNITY_ID
}  // namespace
