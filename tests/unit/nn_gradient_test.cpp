// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Every layer's backward against central finite differences in fp64, gradient accumulation and
// zero_grad, and the mixed-precision Linear: its forward against mpx::cpu::gemm on the same rounded
// operands (bit for bit), its fp32 gradients against the fp64 layer's within bounds derived from the
// formats' epsilons.
//
// Finite differences: a layer's objective is L = sum_i w_i y_i with fixed random w (so dL/dy = w and
// backward(w) must return dL/dx), a loss's objective is the loss itself. With step h = 1e-6 max(1, |v|)
// the central difference errs by h^2 |L'''| / 6 (~1e-12 here) plus round-off eps |L|_terms / h
// (~2e-10 per unit of the objective's terms), so each derivative must agree to
//   |fd - analytic| <= 1e-6 |analytic| + 1e-8 (1 + sum_i |w_i y_i|).
// ReLU kinks are kept out of reach: every pre-activation that meets a ReLU is at least 1e-3 from 0,
// a thousand times what a step can move it.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "mpx/backend/cpu/backend.hpp"
#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/backend/cpu/layer_norm.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/nn/activation.hpp"
#include "mpx/nn/cast.hpp"
#include "mpx/nn/layer_norm.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/loss.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/convert.hpp"
#include "mpx/tensor/tensor.hpp"

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
using nn::Activation;
using P64 = mpx::fp64;

constexpr double k_kink_margin = 1e-3;

/// min |x W^T + b| over all elements, from the layer's master weights: how far its pre-activations
/// are from ReLU's kink.
template <class LinearLayer>
double min_abs_pre_activation(LinearLayer& layer, const Tensor<double>& x) {
  const auto& weight = layer.weight().master();
  const std::int64_t in = weight.shape()[1];
  const std::int64_t out = weight.shape()[0];
  double margin = INFINITY;
  for (std::int64_t b = 0; b < x.shape()[0]; ++b) {
    for (std::int64_t o = 0; o < out; ++o) {
      double z = layer.bias() != nullptr ? layer.bias()->master()[o] : 0.0;
      for (std::int64_t i = 0; i < in; ++i) z += x[b * in + i] * weight[o * in + i];
      margin = std::min(margin, std::abs(z));
    }
  }
  return margin;
}

struct LinearShape {
  std::int64_t batch;
  std::int64_t in;
  std::int64_t out;
};
constexpr LinearShape k_linear_shapes[] = {{1, 1, 1}, {1, 5, 3},  {3, 13, 1},
                                           {3, 1, 5}, {7, 5, 13}, {7, 13, 7}};

template <Activation A>
void check_linear(std::uint64_t seed) {
  for (const LinearShape& shape : k_linear_shapes) {
    for (const bool bias : {true, false}) {
      CAPTURE(shape.batch, shape.in, shape.out, bias);
      std::mt19937_64 rng(seed++);
      nn::Linear<P64, A> layer(shape.in, shape.out, {.bias = bias});
      randomize_parameters(layer, rng);
      const Tensor<double> w = uniform_tensor(Shape{shape.batch, shape.out}, rng, -1.0, 1.0);
      Tensor<double> x = uniform_tensor(Shape{shape.batch, shape.in}, rng, -1.0, 1.0);
      if constexpr (A == Activation::ReLU) {
        // Redraw the input until no pre-activation sits near the kink.
        int draws = 1;
        while (min_abs_pre_activation(layer, x) < k_kink_margin && draws < 100) {
          x = uniform_tensor(Shape{shape.batch, shape.in}, rng, -1.0, 1.0);
          ++draws;
        }
        REQUIRE(min_abs_pre_activation(layer, x) >= k_kink_margin);
      }
      check_layer_gradients(layer, x, w);
    }
  }
}

TEST_CASE("Linear without activation: dx, dW and db match finite differences in fp64", "[nn][gradient]") {
  check_linear<Activation::None>(100);
}

TEST_CASE("Linear with fused ReLU: dx, dW and db match finite differences in fp64", "[nn][gradient]") {
  check_linear<Activation::ReLU>(200);
}

TEST_CASE("Linear with fused GELU: dx, dW and db match finite differences in fp64", "[nn][gradient]") {
  check_linear<Activation::GELU>(300);
}

TEST_CASE("ReLU and GELU layers: dx matches finite differences in fp64", "[nn][gradient]") {
  std::mt19937_64 rng(400);
  for (const std::int64_t batch : {1, 3, 7}) {
    for (const std::int64_t features : {1, 5, 13}) {
      CAPTURE(batch, features);
      const Tensor<double> w = uniform_tensor(Shape{batch, features}, rng, -1.0, 1.0);
      {
        nn::ReLU<P64> relu;
        Tensor<double> x = away_from_zero(Shape{batch, features}, rng, 0.1, 2.0);
        check_layer_gradients(relu, x, w);
      }
      {
        nn::GELU<P64> gelu;
        Tensor<double> x = uniform_tensor(Shape{batch, features}, rng, -4.0, 4.0);
        check_layer_gradients(gelu, x, w);
      }
    }
  }
}

TEST_CASE("LayerNorm: dx, dgamma and dbeta match finite differences in fp64", "[nn][gradient]") {
  std::mt19937_64 rng(500);
  for (const std::int64_t batch : {1, 3, 7}) {
    for (const std::int64_t features : {1, 2, 5, 13}) {
      CAPTURE(batch, features);
      nn::LayerNorm<P64> layer(features);
      randomize_parameters(layer, rng);
      const Tensor<double> w = uniform_tensor(Shape{batch, features}, rng, -1.0, 1.0);
      // An offset row mean makes the centring matter.
      Tensor<double> x = uniform_tensor(Shape{batch, features}, rng, -1.0, 3.0);
      check_layer_gradients(layer, x, w);
    }
  }
}

TEST_CASE("cpu::layer_norm_forward/backward: the same bits on 1 and 3 threads, and fp64's values in fp32",
          "[nn][layer_norm][threads]") {
  // Row sums run in 8 lanes (detail::lane_sum) and dgamma / dbeta in blocks of 64 features on the
  // threads: 200 features give full lanes, a tail, and four feature blocks, the last one partial.
  constexpr std::int64_t rows = 37, features = 200;
  std::mt19937_64 rng(7);
  const Tensor<double> x64 = uniform_tensor(Shape{rows, features}, rng, -1.0, 3.0);
  const Tensor<double> dy64 = uniform_tensor(Shape{rows, features}, rng, -1.0, 1.0);
  const Tensor<double> gamma64 = uniform_tensor(Shape{features}, rng, 0.5, 1.5);
  const Tensor<double> beta64 = uniform_tensor(Shape{features}, rng, -0.5, 0.5);
  struct Outputs {
    Tensor<float> y, dx, dgamma, dbeta;
  };
  const auto run = [&]<class T>(T, int threads) {
#ifdef _OPENMP
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    const auto x = mpx::convert<mpx::tag_of_t<T>>(x64), dy = mpx::convert<mpx::tag_of_t<T>>(dy64);
    const auto gamma = mpx::convert<mpx::Float>(gamma64), beta = mpx::convert<mpx::Float>(beta64);
    Tensor<T> y(Shape{rows, features}), dx(Shape{rows, features});
    Tensor<float> mean(Shape{rows}), rstd(Shape{rows}), dgamma(Shape{features}), dbeta(Shape{features});
    mpx::cpu::layer_norm_forward(x, gamma, beta, 1e-5f, y, mean, rstd);
    mpx::cpu::layer_norm_backward(x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
#ifdef _OPENMP
    omp_set_num_threads(before);
#endif
    return Outputs{mpx::convert<mpx::Float>(y), mpx::convert<mpx::Float>(dx), std::move(dgamma),
                   std::move(dbeta)};
  };
  const auto same_bits = [](const Tensor<float>& a, const Tensor<float>& b) {
    return std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
  };
  const Outputs one = run(float{}, 1), three = run(float{}, 3);
  CHECK(same_bits(one.y, three.y));
  CHECK(same_bits(one.dx, three.dx));
  CHECK(same_bits(one.dgamma, three.dgamma));
  CHECK(same_bits(one.dbeta, three.dbeta));
  const Outputs half_one = run(Eigen::half{}, 1), half_three = run(Eigen::half{}, 3);
  CHECK(same_bits(half_one.dx, half_three.dx));
  CHECK(same_bits(half_one.dgamma, half_three.dgamma));

  // fp32 against the same layer in fp64.
  Tensor<double> y(Shape{rows, features}), dx(Shape{rows, features}), mean(Shape{rows}), rstd(Shape{rows}),
      dgamma(Shape{features}), dbeta(Shape{features});
  mpx::cpu::layer_norm_forward(x64, gamma64, beta64, 1e-5f, y, mean, rstd);
  mpx::cpu::layer_norm_backward(x64, gamma64, mean, rstd, dy64, dx, dgamma, dbeta);
  const auto max_error = [](const Tensor<float>& got, const Tensor<double>& expected) {
    double error = 0, scale = 0;
    for (std::int64_t i = 0; i < got.numel(); ++i) {
      error = std::max(error, std::abs(double(got[i]) - expected[i]));
      scale = std::max(scale, std::abs(expected[i]));
    }
    return error / scale;
  };
  CHECK(max_error(one.y, y) < 1e-6);
  CHECK(max_error(one.dx, dx) < 1e-5);
  CHECK(max_error(one.dgamma, dgamma) < 1e-5);
  CHECK(max_error(one.dbeta, dbeta) < 1e-5);
}

/// PyTorch's smoothed cross-entropy, written from its definition: (1 - s) * (-log p[label]) +
/// s * mean_c(-log p[c]), averaged over rows; log p by a max-shifted log-sum-exp in double.
double reference_cross_entropy(const Tensor<double>& logits, const Tensor<std::int32_t>& labels, double s) {
  const std::int64_t batch = logits.shape()[0];
  const std::int64_t classes = logits.shape()[1];
  double total = 0;
  for (std::int64_t r = 0; r < batch; ++r) {
    const double* z = logits.data() + r * classes;
    const double top = *std::max_element(z, z + classes);
    double sum = 0;
    for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(z[c] - top);
    const double lse = top + std::log(sum);
    double mean_nll = 0;
    for (std::int64_t c = 0; c < classes; ++c) mean_nll += (lse - z[c]) / static_cast<double>(classes);
    total += (1 - s) * (lse - z[labels[r]]) + s * mean_nll;
  }
  return total / static_cast<double>(batch);
}

TEST_CASE("SoftmaxCrossEntropy: gradient w.r.t. logits matches finite differences, scaled by grad_seed",
          "[nn][gradient][loss]") {
  std::mt19937_64 rng(600);
  for (const float smoothing : {0.0f, 0.1f, 0.5f}) {
    for (const std::int64_t batch : {1, 3, 7}) {
      for (const std::int64_t classes : {1, 2, 5, 13}) {
        CAPTURE(smoothing, batch, classes);
        nn::SoftmaxCrossEntropy<P64> loss({.label_smoothing = smoothing});
        Tensor<double> logits = uniform_tensor(Shape{batch, classes}, rng, -3.0, 3.0);
        std::uniform_int_distribution<std::int32_t> label(0, static_cast<std::int32_t>(classes - 1));
        Tensor<std::int32_t> labels(Shape{batch});
        for (auto& l : labels.values()) l = label(rng);

        const double value = loss.forward(logits, labels);
        CHECK(value ==
              Approx(reference_cross_entropy(logits, labels, smoothing)).epsilon(1e-12).margin(1e-15));
        CHECK(loss.forward_backward(logits, labels, 1.0f) == value);
        const Tensor<double> gradient = loss.gradient().clone();

        // Terms of the loss: the log-sum-exp and the logits, each at most |max logit| + log(classes).
        const double terms = 3.0 + std::log(static_cast<double>(classes)) + 3.0;
        check_against_differences("dlogits", logits, gradient, terms,
                                  [&] { return static_cast<double>(loss.forward(logits, labels)); });

        // grad_seed multiplies the gradient (the loss scale divided by the micro-batch count), not the loss.
        for (const float seed : {1024.0f, 0.375f, 3.0f}) {
          CAPTURE(seed);
          CHECK(loss.forward_backward(logits, labels, seed) == Approx(value).epsilon(1e-15));
          for (std::int64_t i = 0; i < gradient.numel(); ++i) {
            CHECK(loss.gradient()[i] == Approx(seed * gradient[i]).epsilon(1e-14));
          }
        }
      }
    }
  }
}

TEST_CASE("MSELoss: gradient w.r.t. predictions matches finite differences, scaled by grad_seed",
          "[nn][gradient][loss]") {
  std::mt19937_64 rng(700);
  for (const std::int64_t batch : {1, 3, 7}) {
    for (const std::int64_t features : {1, 5, 13}) {
      CAPTURE(batch, features);
      nn::MSELoss<P64> loss;
      Tensor<double> prediction = uniform_tensor(Shape{batch, features}, rng, -2.0, 2.0);
      const Tensor<double> target = uniform_tensor(Shape{batch, features}, rng, -2.0, 2.0);
      double reference = 0;
      for (std::int64_t i = 0; i < target.numel(); ++i) {
        reference += (prediction[i] - target[i]) * (prediction[i] - target[i]);
      }
      reference /= static_cast<double>(target.numel());

      const double value = loss.forward(prediction, target);
      CHECK(value == Approx(reference).epsilon(1e-12));
      CHECK(loss.forward_backward(prediction, target, 1.0f) == value);
      const Tensor<double> gradient = loss.gradient().clone();
      check_against_differences("dprediction", prediction, gradient, 16.0,
                                [&] { return static_cast<double>(loss.forward(prediction, target)); });

      for (const float seed : {65536.0f, 0.375f}) {
        CAPTURE(seed);
        loss.forward_backward(prediction, target, seed);
        for (std::int64_t i = 0; i < gradient.numel(); ++i) {
          CHECK(loss.gradient()[i] == Approx(seed * gradient[i]).epsilon(1e-14));
        }
      }
    }
  }
}

TEST_CASE(
    "Cast: the fp32-to-fp64 backward matches finite differences, and bf16 casts round to nearest both ways",
    "[nn][gradient][cast]") {
  std::mt19937_64 rng(800);
  for (const std::int64_t batch : {1, 3, 7}) {
    for (const std::int64_t features : {1, 5, 13}) {
      CAPTURE(batch, features);
      nn::Cast<float, double> cast;
      Tensor<float> x = uniform_tensor<float>(Shape{batch, features}, rng, 1.0, 2.0);
      const Tensor<double> w = uniform_tensor(Shape{batch, features}, rng, -1.0, 1.0);
      const auto& y = cast.forward(x);
      for (std::int64_t i = 0; i < x.numel(); ++i) CHECK(y[i] == static_cast<double>(x[i]));
      const double terms = abs_dot(w, y);
      const Tensor<float>* dx = cast.backward(w, true);
      REQUIRE(dx != nullptr);
      Tensor<double> analytic(dx->shape());
      for (std::int64_t i = 0; i < dx->numel(); ++i) analytic[i] = (*dx)[i];
      // The gradient comes back rounded into fp32 (relative error 2^-24, inside the tolerance).
      check_against_differences("dx", x, analytic, terms, [&] { return dot(w, cast.forward(x)); });
      CHECK(cast.backward(w, false) == nullptr);
    }
  }

  // bf16 <-> fp32: forward and backward each round to nearest even, as round_to defines it.
  nn::Cast<float, Eigen::bfloat16> narrow;
  const Tensor<float> x = uniform_tensor<float>(Shape{7, 13}, rng, -3.0, 3.0);
  const auto& y = narrow.forward(x);
  const Tensor<Eigen::bfloat16> dy =
      mpx::convert<mpx::BFloat16>(uniform_tensor<float>(Shape{7, 13}, rng, -1, 1));
  const Tensor<float>* dx = narrow.backward(dy, true);
  REQUIRE(dx != nullptr);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    CHECK(mpx::bits_of(y[i]) == mpx::bits_of(mpx::round_to<mpx::BFloat16>(x[i])));
    CHECK((*dx)[i] == static_cast<float>(dy[i]));  // widening is exact
  }
}

TEST_CASE("Sequential of fp64 layers: input and parameter gradients match finite differences",
          "[nn][gradient][sequential]") {
  for (const std::int64_t batch : {1, 3, 7}) {
    CAPTURE(batch);
    std::mt19937_64 rng(900 + static_cast<std::uint64_t>(batch));
    nn::Sequential model{nn::Linear<P64, Activation::GELU>(5, 13),
                         nn::LayerNorm<P64>(13),
                         nn::Linear<P64, Activation::ReLU>(13, 7, {.bias = false}),
                         nn::GELU<P64>(),
                         nn::Linear<P64>(7, 3),
                         nn::ReLU<P64>()};
    model.initialize(static_cast<std::uint64_t>(batch));
    randomize(*model.layer<0>().bias(), rng);  // the default zero biases and unit gamma hide paths
    randomize_parameters(model.layer<1>(), rng);
    randomize_parameters(model.layer<4>(), rng);
    const Tensor<double> w = uniform_tensor(Shape{batch, 3}, rng, -1.0, 1.0);

    // Run the layers one by one to see the two ReLUs' pre-activations; redraw x until both are
    // clear of the kink (layer 4 has no activation of its own, so its output is the final ReLU's input).
    Tensor<double> x;
    double margin = 0;
    for (int draw = 0; draw < 100 && margin < k_kink_margin; ++draw) {
      x = uniform_tensor(Shape{batch, 5}, rng, -1.0, 1.0);
      const auto& y1 = model.layer<1>().forward(model.layer<0>().forward(x));
      margin = min_abs_pre_activation(model.layer<2>(), y1);
      const auto& y4 = model.layer<4>().forward(model.layer<3>().forward(model.layer<2>().forward(y1)));
      for (std::int64_t i = 0; i < y4.numel(); ++i) margin = std::min(margin, std::abs(y4[i]));
    }
    REQUIRE(margin >= k_kink_margin);
    check_layer_gradients(model, x, w);
  }
}

// ---- Mixed precision ------------------------------------------------------------------------------

template <class T>
std::uint32_t bits(T value) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<std::uint32_t>(value);
  } else {
    return mpx::bits_of(value);
  }
}

/// The Linear's forward against one mpx::cpu::gemm call on operands rounded here (x and the weights
/// rounded to the compute type; TF32 rounds inside the GEMM), with the layer's epilogue; a bias-free
/// layer with an activation is the same GEMM with a zero bias.
template <class P, Activation A>
void check_forward_matches_gemm(bool with_bias, std::uint64_t seed) {
  using T = mpx::compute_t<P>;
  using Compute = typename P::compute_type;
  using Tag = mpx::tag_of_t<T>;
  constexpr std::int64_t batch = 7;
  constexpr std::int64_t in = 37;
  constexpr std::int64_t out = 13;
  std::mt19937_64 rng(seed);
  nn::Linear<P, A> layer(in, out, {.bias = with_bias});
  layer.initialize(seed, 1);
  if (with_bias) randomize(*layer.bias(), rng);

  const Tensor<float> x32 = uniform_tensor<float>(Shape{batch, in}, rng, -2.0, 2.0);
  const Tensor<T> x = mpx::convert<Tag>(x32);
  const Tensor<T> weight = mpx::convert<Tag>(layer.weight().master());
  for (std::int64_t i = 0; i < weight.numel(); ++i)
    REQUIRE(bits(weight[i]) == bits(layer.weight().compute()[i]));
  const Tensor<T> bias = with_bias ? mpx::convert<Tag>(layer.bias()->master()) : Tensor<T>(Shape{out});

  Tensor<T> expected(Shape{batch, out});
  Tensor<T> aux(Shape{batch, out});
  mpx::cpu::GemmOperands<T, float> operands{.bias = &bias};
  mpx::Epilogue epilogue = mpx::Epilogue::Bias;
  if constexpr (A == Activation::ReLU) epilogue = mpx::Epilogue::ReluBias;
  if constexpr (A == Activation::GELU) {
    epilogue = mpx::Epilogue::GeluAuxBias;
    operands.aux = &aux;
  }
  mpx::cpu::gemm<Compute>(x, weight, expected, {.transpose_b = mpx::Transpose::Yes, .epilogue = epilogue},
                          operands);

  const Tensor<T>& y = layer.forward(x);
  REQUIRE(y.shape() == expected.shape());
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    INFO("element " << i);
    CHECK(bits(y[i]) == bits(expected[i]));
  }

  if constexpr (std::is_same_v<Compute, mpx::TF32>) {
    // The inputs are not TF32 values, so an fp32 GEMM gives other results: the test sees the rounding.
    Tensor<float> fp32(Shape{batch, out});
    mpx::cpu::gemm<mpx::Float>(x, weight, fp32, {.transpose_b = mpx::Transpose::Yes, .epilogue = epilogue},
                               operands);
    bool differs = false;
    for (std::int64_t i = 0; i < y.numel(); ++i) differs = differs || bits(y[i]) != bits(fp32[i]);
    CHECK(differs);
  }
}

template <class P>
void check_forward_matches_gemm_all(std::uint64_t seed) {
  for (const bool with_bias : {true, false}) {
    CAPTURE(with_bias);
    check_forward_matches_gemm<P, Activation::None>(with_bias, seed++);
    check_forward_matches_gemm<P, Activation::ReLU>(with_bias, seed++);
    check_forward_matches_gemm<P, Activation::GELU>(with_bias, seed++);
  }
}

TEST_CASE(
    "bf16, fp16 and tf32 Linear forward equals mpx::cpu::gemm on the same rounded operands, bit for bit",
    "[nn][mixed]") {
  SECTION("bf16") {
    check_forward_matches_gemm_all<mpx::bf16_mixed>(1000);
  }
  SECTION("fp16") {
    check_forward_matches_gemm_all<mpx::fp16_mixed>(1100);
  }
  SECTION("tf32") {
    check_forward_matches_gemm_all<mpx::tf32>(1200);
  }
}

/// The bf16 Linear's fp32 gradients against the fp64 Linear's, both from the same fp32 master
/// weights, the same bf16 input x and the same bf16 upstream gradient dy.
///
/// Bounds, charging a full epsilon per rounding (eps16 = 2^-7 for bf16, eps32 = 2^-23 for the fp32
/// sums, as tests/support/tolerances.hpp does), with G1 = max|gelu'| = 1.13, G2 = max|gelu''| = 0.8:
/// - pre-activation (GELU only): weights and output rounded to bf16, fp32 sum of `in` products:
///   dpre = (2 eps16 + (in + 16) eps32) (sum_i |x W| + |b|);
/// - dz = round_bf16(dy gelu'(pre)): ddz = |dy| (G2 dpre + G1 (eps16 + 16 eps32)); without an
///   activation dz = dy exactly;
/// - dW[o,i] = sum_b dz x in fp32: sum_b ddz |x| + (batch + 16) eps32 sum_b |dz| |x|; db likewise;
/// - dx = round_bf16(dz W_bf16): sum_o ddz |W| + (eps16 + (out + 16) eps32) sum_o |dz| |W| + eps16 |dx|.
/// Without an activation dW and db are exact products summed in fp32: only eps32 remains.
template <Activation A>
void check_bf16_gradients_near_fp64(std::int64_t batch, std::int64_t in, std::int64_t out,
                                    std::uint64_t seed) {
  CAPTURE(batch, in, out);
  constexpr double eps16 = mpx::epsilon_v<mpx::BFloat16>;
  constexpr double eps32 = mpx::epsilon_v<mpx::Float>;
  constexpr double g1 = 1.13;
  constexpr double g2 = 0.8;
  std::mt19937_64 rng(seed);
  nn::Linear<mpx::bf16_mixed, A> low(in, out);
  nn::Linear<P64, A> reference(in, out);
  low.initialize(seed, 0);
  randomize(*low.bias(), rng);
  for (std::int64_t i = 0; i < low.weight().master().numel(); ++i) {
    reference.weight().master()[i] = low.weight().master()[i];
  }
  for (std::int64_t i = 0; i < out; ++i) reference.bias()->master()[i] = low.bias()->master()[i];

  const auto x = mpx::convert<mpx::BFloat16>(uniform_tensor<float>(Shape{batch, in}, rng, -2.0, 2.0));
  const auto dy = mpx::convert<mpx::BFloat16>(uniform_tensor<float>(Shape{batch, out}, rng, -1.0, 1.0));
  Tensor<double> x64(x.shape());
  Tensor<double> dy64(dy.shape());
  for (std::int64_t i = 0; i < x.numel(); ++i) x64[i] = widen(x[i]);
  for (std::int64_t i = 0; i < dy.numel(); ++i) dy64[i] = widen(dy[i]);

  low.forward(x);
  const auto* dx = low.backward(dy, true);
  reference.forward(x64);
  const auto* dx64 = reference.backward(dy64, true);
  REQUIRE(dx != nullptr);
  REQUIRE(dx64 != nullptr);

  const auto& weight = reference.weight().master();
  const auto& bias = reference.bias()->master();
  // Per (b, o): bound on |dz_bf16 - dz_fp64| and |dz_fp64|'s bound G1 |dy| (|dy| without activation).
  Tensor<double> ddz(Shape{batch, out});
  Tensor<double> dz_size(Shape{batch, out});
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t o = 0; o < out; ++o) {
      const double g = std::abs(dy64[b * out + o]);
      if constexpr (A == Activation::GELU) {
        double magnitude = std::abs(bias[o]);
        for (std::int64_t i = 0; i < in; ++i) magnitude += std::abs(x64[b * in + i] * weight[o * in + i]);
        const double dpre = (2 * eps16 + static_cast<double>(in + 16) * eps32) * magnitude;
        ddz[b * out + o] = g * (g2 * dpre + g1 * (eps16 + 16 * eps32));
        dz_size[b * out + o] = g1 * g;
      } else {
        ddz[b * out + o] = 0;
        dz_size[b * out + o] = g;
      }
    }
  }

  const auto& dw = low.weight().grad();
  const auto& dw64 = reference.weight().grad();
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      double propagated = 0;
      double magnitude = 0;
      for (std::int64_t b = 0; b < batch; ++b) {
        propagated += ddz[b * out + o] * std::abs(x64[b * in + i]);
        magnitude += dz_size[b * out + o] * std::abs(x64[b * in + i]);
      }
      const double bound = propagated + static_cast<double>(batch + 16) * eps32 * magnitude;
      INFO("dW[" << o << ", " << i << "]");
      CHECK(std::abs(static_cast<double>(dw[o * in + i]) - dw64[o * in + i]) <= bound);
    }
  }
  const auto& db = low.bias()->grad();
  const auto& db64 = reference.bias()->grad();
  for (std::int64_t o = 0; o < out; ++o) {
    double propagated = 0;
    double magnitude = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
      propagated += ddz[b * out + o];
      magnitude += dz_size[b * out + o];
    }
    INFO("db[" << o << "]");
    CHECK(std::abs(static_cast<double>(db[o]) - db64[o]) <=
          propagated + static_cast<double>(batch + 16) * eps32 * magnitude);
  }
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t i = 0; i < in; ++i) {
      double propagated = 0;
      double magnitude = 0;
      for (std::int64_t o = 0; o < out; ++o) {
        propagated += ddz[b * out + o] * std::abs(weight[o * in + i]);
        magnitude += dz_size[b * out + o] * std::abs(weight[o * in + i]);
      }
      const double reference_dx = (*dx64)[b * in + i];
      const double bound = propagated + (eps16 + static_cast<double>(out + 16) * eps32) * magnitude +
                           eps16 * std::abs(reference_dx);
      INFO("dx[" << b << ", " << i << "]");
      CHECK(std::abs(widen((*dx)[b * in + i]) - reference_dx) <= bound);
    }
  }
}

TEST_CASE("bf16 Linear: fp32 weight, bias and input gradients lie within bf16-epsilon bounds of fp64",
          "[nn][mixed][gradient]") {
  check_bf16_gradients_near_fp64<Activation::None>(1, 5, 3, 1300);
  check_bf16_gradients_near_fp64<Activation::None>(7, 64, 13, 1301);
  check_bf16_gradients_near_fp64<Activation::None>(33, 17, 9, 1302);
  check_bf16_gradients_near_fp64<Activation::GELU>(1, 5, 3, 1310);
  check_bf16_gradients_near_fp64<Activation::GELU>(7, 64, 13, 1311);
  check_bf16_gradients_near_fp64<Activation::GELU>(33, 17, 9, 1312);
}

}  // namespace

}  // namespace MPX_UNITY_ID
}  // namespace
