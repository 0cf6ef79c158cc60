// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// nn::Sequential: parameter names and count, deterministic initialisation and the initialisers'
// bounds and statistics, the Cast inserted between layers of different precision (against the same
// layers chained by hand), forward on fp32 input for a 16-bit model (against the input rounded by
// hand), has_half_compute, and the run-time errors that name the layer.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"

#include "mpx/error.hpp"
#include "mpx/nn/activation.hpp"
#include "mpx/nn/layer_norm.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/policy/loss_scaling.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/convert.hpp"
#include "mpx/tensor/tensor.hpp"
#include "mpx/train/trainer.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace nn = mpx::nn;
using mpx::Shape;
using mpx::Tensor;
using nn::Activation;
using Bf16 = Eigen::bfloat16;

using mpx::test::MessageContains;

Tensor<float> uniform_tensor(const Shape& shape, std::uint64_t seed, float low = -1.0f, float high = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  Tensor<float> tensor(shape);
  for (float& value : tensor.values()) value = distribution(rng);
  return tensor;
}

template <class T>
std::uint32_t bits(T value) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<std::uint32_t>(value);
  } else {
    return mpx::bits_of(value);
  }
}

/// Whether two tensors hold the same shape and the same bits.
template <class T>
bool identical(const Tensor<T>& a, const Tensor<T>& b) {
  if (!(a.shape() == b.shape())) return false;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    if (bits(a[i]) != bits(b[i])) return false;
  }
  return true;
}

/// Every parameter's master weights, in for_each_parameter order.
template <class Model>
std::vector<Tensor<float>> masters_of(Model& model) {
  std::vector<Tensor<float>> masters;
  model.for_each_parameter(
      [&](std::string_view, auto& parameter) { masters.push_back(parameter.master().clone()); });
  return masters;
}

/// Every parameter's gradient, in for_each_parameter order.
template <class Model>
std::vector<Tensor<float>> grads_of(Model& model) {
  std::vector<Tensor<float>> grads;
  model.for_each_parameter(
      [&](std::string_view, auto& parameter) { grads.push_back(parameter.grad().clone()); });
  return grads;
}

using Fp32Model =
    nn::Sequential<nn::Linear<mpx::fp32>, nn::ReLU<mpx::fp32>, nn::Linear<mpx::fp32, Activation::GELU>,
                   nn::LayerNorm<mpx::fp32>, nn::Linear<mpx::fp32>>;

Fp32Model make_fp32_model() {
  return Fp32Model(nn::Linear<mpx::fp32>(5, 7), nn::ReLU<mpx::fp32>(),
                   nn::Linear<mpx::fp32, Activation::GELU>(7, 4, {.bias = false}),
                   nn::LayerNorm<mpx::fp32>(4), nn::Linear<mpx::fp32>(4, 3));
}

TEST_CASE("Sequential names parameters layers.<index>.<name> in order and counts them", "[nn][sequential]") {
  Fp32Model model = make_fp32_model();
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  std::vector<const void*> addresses;
  model.for_each_parameter([&](std::string_view name, auto& parameter) {
    names.emplace_back(name);
    shapes.push_back(parameter.shape());
    addresses.push_back(&parameter);
  });
  // Indices are those of the layers as written (the ReLU at 1 has no parameters), as PyTorch's
  // nn.Sequential names them.
  const std::vector<std::string> expected_names{"layers.0.weight", "layers.0.bias", "layers.2.weight",
                                                "layers.3.weight", "layers.3.bias", "layers.4.weight",
                                                "layers.4.bias"};
  CHECK(names == expected_names);
  const std::vector<Shape> expected_shapes{Shape{7, 5}, Shape{7},    Shape{4, 7}, Shape{4},
                                           Shape{4},    Shape{3, 4}, Shape{3}};
  CHECK(shapes == expected_shapes);
  REQUIRE(addresses.size() == 7);
  CHECK(addresses[0] == &model.layer<0>().weight());
  CHECK(addresses[1] == model.layer<0>().bias());
  CHECK(addresses[2] == &model.layer<2>().weight());
  CHECK(model.layer<2>().bias() == nullptr);
  CHECK(addresses[5] == &model.layer<4>().weight());

  CHECK(model.parameter_count() == 7 * 5 + 7 + 4 * 7 + 4 + 4 + 3 * 4 + 3);
  STATIC_REQUIRE(Fp32Model::size == 5);
}

TEST_CASE("Sequential::initialize: the same seed gives the same weights, another seed other weights",
          "[nn][sequential][init]") {
  Fp32Model a = make_fp32_model();
  Fp32Model b = make_fp32_model();
  a.initialize(7);
  b.initialize(7);
  const auto first = masters_of(a);
  const auto second = masters_of(b);
  REQUIRE(first.size() == second.size());
  for (std::size_t p = 0; p < first.size(); ++p) CHECK(identical(first[p], second[p]));

  // Re-initialising restores the weights after they changed.
  a.layer<0>().weight().master().fill(0.5f);
  a.initialize(7);
  CHECK(identical(masters_of(a)[0], first[0]));

  b.initialize(8);
  const auto reseeded = masters_of(b);
  for (std::size_t p : {std::size_t{0}, std::size_t{2}, std::size_t{5}})
    CHECK(!identical(first[p], reseeded[p]));

  // Layers of the same shape draw from different streams, so they do not start equal.
  nn::Sequential twins{nn::Linear<mpx::fp32>(16, 16), nn::Linear<mpx::fp32>(16, 16)};
  twins.initialize(3);
  CHECK(!identical(twins.layer<0>().weight().master(), twins.layer<1>().weight().master()));

  // Under bf16 the compute copy is the master weights rounded to nearest.
  nn::Sequential low{nn::Linear<mpx::bf16_mixed>(16, 8)};
  low.initialize(11);
  const auto& weight = low.layer<0>().weight();
  for (std::int64_t i = 0; i < weight.master().numel(); ++i) {
    CHECK(bits(weight.compute()[i]) == bits(mpx::round_to<mpx::BFloat16>(weight.master()[i])));
  }
}

/// Checks that `values` look like independent draws of U(-bound, bound): within the bound, reaching
/// near it, and mean, variance and the fraction inside +-bound/2 within 5 standard errors of
/// 0, bound^2 / 3 and 1/2 (a normal or a narrower uniform fails the last two).
void check_uniform(const Tensor<float>& values, double bound) {
  const auto n = static_cast<double>(values.numel());
  double sum = 0;
  double squares = 0;
  double largest = 0;
  double inner = 0;
  std::int64_t outside = 0;
  for (const float v : values.values()) {
    outside += std::abs(v) <= static_cast<float>(bound) ? 0 : 1;
    sum += v;
    squares += static_cast<double>(v) * v;
    largest = std::max(largest, std::abs(static_cast<double>(v)));
    inner += std::abs(v) <= bound / 2 ? 1 : 0;
  }
  CHECK(outside == 0);
  const double mean = sum / n;
  const double second_moment = squares / n;
  CHECK(largest >= 0.99 * bound);  // misses the top 1% of |w| with probability 0.99^n
  CHECK(std::abs(mean) <= 5 * bound / std::sqrt(3 * n));
  // Var(w^2) = E w^4 - (E w^2)^2 = bound^4 (1/5 - 1/9).
  CHECK(std::abs(second_moment - bound * bound / 3) <= 5 * bound * bound * std::sqrt(4.0 / 45.0 / n));
  CHECK(std::abs(inner / n - 0.5) <= 5 * std::sqrt(0.25 / n));
}

TEST_CASE(
    "Initialisation: Kaiming for ReLU and GELU, Xavier otherwise, uniform within the bound, and zero biases",
    "[nn][sequential][init]") {
  constexpr std::int64_t in = 256;
  constexpr std::int64_t out = 128;
  nn::Sequential model{nn::Linear<mpx::fp32, Activation::ReLU>(in, out),
                       nn::Linear<mpx::fp32, Activation::GELU>(out, in), nn::Linear<mpx::fp32>(in, out),
                       nn::Linear<mpx::fp32, Activation::ReLU>(out, in, {.init = nn::Init::XavierUniform}),
                       nn::LayerNorm<mpx::fp32>(in)};
  for (const std::uint64_t seed : {1u, 2u}) {
    CAPTURE(seed);
    model.initialize(seed);
    // He: sqrt(6 / fan_in); Glorot: sqrt(6 / (fan_in + fan_out)).
    check_uniform(model.layer<0>().weight().master(), std::sqrt(6.0 / in));
    check_uniform(model.layer<1>().weight().master(), std::sqrt(6.0 / out));
    check_uniform(model.layer<2>().weight().master(), std::sqrt(6.0 / (in + out)));
    check_uniform(model.layer<3>().weight().master(), std::sqrt(6.0 / (in + out)));
    for (const float b : model.layer<0>().bias()->master().values()) CHECK(b == 0.0f);
    for (const float b : model.layer<2>().bias()->master().values()) CHECK(b == 0.0f);
    // LayerNorm starts as the identity affine map: gamma = 1, beta = 0.
    std::vector<float> gamma_beta;
    model.layer<4>().for_each_parameter([&](std::string_view, auto& parameter) {
      for (const float v : parameter.master().values()) gamma_beta.push_back(v);
    });
    REQUIRE(gamma_beta.size() == 2 * in);
    CHECK(std::all_of(gamma_beta.begin(), gamma_beta.begin() + in, [](float v) { return v == 1.0f; }));
    CHECK(std::all_of(gamma_beta.begin() + in, gamma_beta.end(), [](float v) { return v == 0.0f; }));
  }
}

TEST_CASE(
    "Sequential inserts a Cast between a bf16 layer and an fp32 classifier, giving the results of the layers "
    "chained by hand",
    "[nn][sequential][cast]") {
  using Hidden = nn::Linear<mpx::bf16_mixed, Activation::ReLU>;
  using Classifier = nn::Linear<mpx::fp32>;
  nn::Sequential model{Hidden(6, 5), Classifier(5, 3)};
  using Model = decltype(model);
  STATIC_REQUIRE(std::is_same_v<Model::input_type, Bf16>);
  STATIC_REQUIRE(std::is_same_v<Model::output_type, float>);
  STATIC_REQUIRE(std::is_same_v<Model::precision, mpx::bf16_mixed>);
  STATIC_REQUIRE(
      std::is_same_v<std::remove_cvref_t<decltype(model.forward(std::declval<const Tensor<Bf16>&>()))>,
                     Tensor<float>>);
  STATIC_REQUIRE(std::is_same_v<decltype(model.backward(std::declval<const Tensor<float>&>(), true)),
                                const Tensor<Bf16>*>);

  // The same layers chained by hand, initialised as Sequential initialises layer I (stream I).
  Hidden hidden(6, 5);
  Classifier classifier(5, 3);
  model.initialize(21);
  hidden.initialize(21, 0);
  classifier.initialize(21, 1);
  REQUIRE(identical(model.layer<0>().weight().master(), hidden.weight().master()));
  REQUIRE(identical(model.layer<1>().weight().master(), classifier.weight().master()));
  // Non-zero biases, the same in both.
  const Tensor<float> b0 = uniform_tensor(Shape{5}, 1);
  const Tensor<float> b1 = uniform_tensor(Shape{3}, 2);
  for (std::int64_t i = 0; i < 5; ++i)
    model.layer<0>().bias()->master()[i] = hidden.bias()->master()[i] = b0[i];
  for (std::int64_t i = 0; i < 3; ++i)
    model.layer<1>().bias()->master()[i] = classifier.bias()->master()[i] = b1[i];
  model.layer<0>().bias()->refresh_compute_copy();
  hidden.bias()->refresh_compute_copy();

  const Tensor<Bf16> x = mpx::convert<mpx::BFloat16>(uniform_tensor(Shape{7, 6}, 3));
  const Tensor<float>& y = model.forward(x);
  // bf16 -> fp32 is exact, so the cast by hand is a widening copy.
  const Tensor<float> widened = mpx::convert<mpx::Float>(hidden.forward(x));
  const Tensor<float>& expected = classifier.forward(widened);
  CHECK(identical(y, expected));

  const Tensor<float> dy = uniform_tensor(Shape{7, 3}, 4);
  model.zero_grad();
  CHECK(model.backward(dy) == nullptr);  // the model's input needs no gradient unless asked for
  const Tensor<float>* d_hidden = classifier.backward(dy, true);
  REQUIRE(d_hidden != nullptr);
  hidden.backward(mpx::convert<mpx::BFloat16>(*d_hidden), false);  // fp32 -> bf16, round to nearest

  const auto check_same_gradients = [](auto& a, auto& b) {
    REQUIRE(identical(a.weight().grad(), b.weight().grad()));
    REQUIRE(identical(a.bias()->grad(), b.bias()->grad()));
    bool nonzero = false;
    for (const float g : a.weight().grad().values()) nonzero = nonzero || g != 0.0f;
    CHECK(nonzero);
  };
  check_same_gradients(model.layer<0>(), hidden);
  check_same_gradients(model.layer<1>(), classifier);

  // The input gradient, when asked for, is bf16 of the input's shape; zero_grad clears every gradient.
  const Tensor<Bf16>* dx = model.backward(dy, true);
  REQUIRE(dx != nullptr);
  CHECK(dx->shape() == x.shape());
  model.zero_grad();
  model.for_each_parameter([](std::string_view name, auto& parameter) {
    INFO(name);
    for (const float g : parameter.grad().values()) CHECK(g == 0.0f);
  });
}

TEST_CASE(
    "Sequential rounds an fp32 layer's output into a following bf16 layer, as the layers chained by hand do",
    "[nn][sequential][cast]") {
  nn::Sequential model{nn::Linear<mpx::fp32>(4, 6), nn::Linear<mpx::bf16_mixed>(6, 2)};
  STATIC_REQUIRE(std::is_same_v<decltype(model)::input_type, float>);
  STATIC_REQUIRE(std::is_same_v<decltype(model)::output_type, Bf16>);
  nn::Linear<mpx::fp32> first(4, 6);
  nn::Linear<mpx::bf16_mixed> second(6, 2);
  model.initialize(5);
  first.initialize(5, 0);
  second.initialize(5, 1);
  const Tensor<float> x = uniform_tensor(Shape{3, 4}, 6);
  const Tensor<Bf16> rounded = mpx::convert<mpx::BFloat16>(first.forward(x));  // the cast: round to nearest
  CHECK(identical(model.forward(x), second.forward(rounded)));
  const Tensor<Bf16> dy = mpx::convert<mpx::BFloat16>(uniform_tensor(Shape{3, 2}, 7));
  const Tensor<float>* dx = model.backward(dy, true);
  REQUIRE(dx != nullptr);
  const Tensor<Bf16>* d_rounded = second.backward(dy, true);
  REQUIRE(d_rounded != nullptr);
  CHECK(identical(*dx, *first.backward(mpx::convert<mpx::Float>(*d_rounded), true)));
}

TEST_CASE(
    "Sequential::forward on fp32 input gives a bf16 model's forward on the input rounded by hand, bit for "
    "bit, and "
    "backward after it works",
    "[nn][sequential][cast]") {
  // [forward-fp32]
  // Evaluating a bf16 model on fp32 data: forward rounds the batch to bf16 (nearest-even) into a
  // buffer the model owns, so neither a conversion by hand nor a loss, optimizer or trainer is needed.
  mpx::nn::Sequential model{mpx::nn::Linear<mpx::bf16_mixed, mpx::nn::Activation::GELU>(6, 5),
                            mpx::nn::Linear<mpx::fp32>(5, 3)};  // classifier in fp32
  model.initialize(/*seed=*/13);
  mpx::Tensor<float> batch(mpx::Shape{4, 6});  // fp32 data, e.g. a batch from a dataset
  for (std::int64_t i = 0; i < batch.numel(); ++i) batch[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  const mpx::Tensor<float>& logits = model.forward(batch);
  // [forward-fp32]
  STATIC_REQUIRE(std::is_same_v<decltype(model)::input_type, Bf16>);

  // The same model on the input rounded by hand.
  decltype(model) reference{nn::Linear<mpx::bf16_mixed, Activation::GELU>(6, 5), nn::Linear<mpx::fp32>(5, 3)};
  reference.initialize(13);
  const Tensor<Bf16> rounded = mpx::convert<mpx::BFloat16>(batch);
  bool rounding_changed_something = false;
  for (std::int64_t i = 0; i < batch.numel(); ++i) {
    REQUIRE(bits(rounded[i]) == bits(mpx::round_to<mpx::BFloat16>(batch[i])));  // nearest-even
    rounding_changed_something = rounding_changed_something || static_cast<float>(rounded[i]) != batch[i];
  }
  REQUIRE(rounding_changed_something);  // the test would not notice a missing rounding otherwise
  CHECK(identical(logits, reference.forward(rounded)));

  // Backward reads the rounded buffer the model kept: gradients and the input gradient are those of
  // the reference, bit for bit.
  const Tensor<float> dy = uniform_tensor(Shape{4, 3}, 15);
  model.zero_grad();
  reference.zero_grad();
  const Tensor<Bf16>* dx = model.backward(dy, true);
  const Tensor<Bf16>* dx_reference = reference.backward(dy, true);
  REQUIRE(dx != nullptr);
  REQUIRE(dx_reference != nullptr);
  CHECK(identical(*dx, *dx_reference));
  const auto grads = grads_of(model);
  const auto reference_grads = grads_of(reference);
  REQUIRE(grads.size() == 4);
  for (std::size_t p = 0; p < grads.size(); ++p) CHECK(identical(grads[p], reference_grads[p]));

  // The fp32 input may be a temporary (the model keeps only the rounded copy), and another batch
  // size reshapes the buffer.
  const Tensor<float> small = uniform_tensor(Shape{2, 6}, 16);
  const Tensor<Bf16> small_rounded = mpx::convert<mpx::BFloat16>(small);
  CHECK(identical(model.forward(small.clone()), reference.forward(small_rounded)));
  const Tensor<float> small_dy = uniform_tensor(Shape{2, 3}, 17);
  CHECK(identical(*model.backward(small_dy, true), *reference.backward(small_dy, true)));
}

TEST_CASE("Sequential::forward on fp32 input rounds into an fp16 model's input type as well",
          "[nn][sequential][cast]") {
  nn::Sequential model{nn::ReLU<mpx::fp16_mixed>(), nn::Linear<mpx::fp16_mixed>(3, 2)};
  nn::Sequential reference{nn::ReLU<mpx::fp16_mixed>(), nn::Linear<mpx::fp16_mixed>(3, 2)};
  model.initialize(18);
  reference.initialize(18);
  const Tensor<float> x = uniform_tensor(Shape{5, 3}, 19);
  const Tensor<Eigen::half> rounded = mpx::convert<mpx::Half>(x);
  CHECK(identical(model.forward(x), reference.forward(rounded)));
  const Tensor<Eigen::half> dy = mpx::convert<mpx::Half>(uniform_tensor(Shape{5, 2}, 20));
  CHECK(identical(*model.backward(dy, true), *reference.backward(dy, true)));
}

TEST_CASE("has_half_compute is true when any layer computes in fp16, and picks the default scaler",
          "[nn][sequential]") {
  using AllFp32 = nn::Sequential<nn::Linear<mpx::fp32>, nn::Linear<mpx::fp32>>;
  using Bf16Body = nn::Sequential<nn::Linear<mpx::bf16_mixed>, nn::Linear<mpx::fp32>>;
  using Fp16Middle = nn::Sequential<nn::Linear<mpx::fp32>, nn::ReLU<mpx::fp16_mixed>, nn::Linear<mpx::fp32>>;
  using Fp16Last = nn::Sequential<nn::Linear<mpx::tf32>, nn::Linear<mpx::fp16_mixed>>;
  STATIC_REQUIRE(!AllFp32::has_half_compute);
  STATIC_REQUIRE(!Bf16Body::has_half_compute);
  STATIC_REQUIRE(Fp16Middle::has_half_compute);
  STATIC_REQUIRE(Fp16Last::has_half_compute);
  // The model's nominal precision is its first layer's, even when a later layer computes in fp16.
  STATIC_REQUIRE(std::is_same_v<Fp16Last::precision, mpx::tf32>);
  STATIC_REQUIRE(std::is_same_v<mpx::model_default_scaler_t<Fp16Middle>, mpx::DynamicLossScaling>);
  STATIC_REQUIRE(std::is_same_v<mpx::model_default_scaler_t<Bf16Body>, mpx::NoLossScaling>);
}

TEST_CASE("Sequential: a shape mismatch throws shape_error naming the layer and both shapes",
          "[nn][sequential][errors]") {
  // Layer 1 expects 6 features but layer 0 produces 5: only a run can tell.
  nn::Sequential model{nn::Linear<mpx::fp32>(4, 5), nn::Linear<mpx::fp32>(6, 2)};
  const Tensor<float> ok_for_layer0(Shape{3, 4}), too_wide(Shape{3, 7}), rank1(Shape{4});
  CHECK_THROWS_MATCHES(model.forward(ok_for_layer0), mpx::shape_error,
                       MessageContains({"layers.1 (Linear)", "[batch, 6]", "[3, 5]"}));
  CHECK_THROWS_MATCHES(model.forward(too_wide), mpx::shape_error,
                       MessageContains({"layers.0 (Linear)", "[batch, 4]", "[3, 7]"}));
  CHECK_THROWS_MATCHES(model.forward(rank1), mpx::shape_error,
                       MessageContains({"layers.0 (Linear)", "[batch, 4]", "[4]"}));

  nn::Sequential normed{nn::Linear<mpx::fp32>(4, 5), nn::GELU<mpx::fp32>(), nn::LayerNorm<mpx::fp32>(6)};
  const Tensor<float> batch_of_two(Shape{2, 4});
  CHECK_THROWS_MATCHES(normed.forward(batch_of_two), mpx::shape_error,
                       MessageContains({"layers.2 (LayerNorm)", "[batch, 6]", "[2, 5]"}));

  // An upstream gradient that is not the shape of the output.
  nn::Sequential good{nn::Linear<mpx::fp32>(4, 5), nn::ReLU<mpx::fp32>(), nn::Linear<mpx::fp32>(5, 2)};
  const Tensor<float> x = uniform_tensor(Shape{3, 4}, 8);
  good.forward(x);
  CHECK_THROWS_MATCHES(good.backward(Tensor<float>(Shape{3, 3})), mpx::shape_error,
                       MessageContains({"layers.2 (Linear)", "upstream gradient", "[3, 3]", "[3, 2]"}));
}

TEST_CASE("Sequential: backward before any forward throws, naming the last layer",
          "[nn][sequential][errors]") {
  nn::Sequential model{nn::Linear<mpx::fp32>(4, 5), nn::Linear<mpx::fp32>(5, 2)};
  CHECK_THROWS_MATCHES(model.backward(Tensor<float>(Shape{3, 2})), mpx::error,
                       MessageContains({"layers.1 (Linear)", "backward called before forward"}));
  nn::Sequential activated{nn::Linear<mpx::fp32>(4, 5), nn::ReLU<mpx::fp32>()};
  CHECK_THROWS_MATCHES(activated.backward(Tensor<float>(Shape{3, 5})), mpx::error,
                       MessageContains({"layers.1 (ReLU)", "backward called before forward"}));
  nn::Sequential normed{nn::Linear<mpx::fp32>(4, 5), nn::LayerNorm<mpx::fp32>(5)};
  CHECK_THROWS_MATCHES(normed.backward(Tensor<float>(Shape{3, 5})), mpx::error,
                       MessageContains({"layers.1 (LayerNorm)", "backward called before forward"}));
}

TEST_CASE("Sequential: a smaller batch after a larger one gives what a fresh model gives",
          "[nn][sequential]") {
  // Layers keep their buffers across steps and reshape them when the batch changes (an epoch's last batch).
  Fp32Model reused = make_fp32_model();
  Fp32Model fresh = make_fp32_model();
  reused.initialize(4);
  fresh.initialize(4);
  // The first layer's backward reads the input the forward saw, so it must outlive the backward.
  const Tensor<float> large = uniform_tensor(Shape{9, 5}, 9);
  reused.forward(large);
  reused.backward(uniform_tensor(Shape{9, 3}, 10));
  reused.zero_grad();

  const Tensor<float> x = uniform_tensor(Shape{2, 5}, 11);
  const Tensor<float> dy = uniform_tensor(Shape{2, 3}, 12);
  CHECK(identical(reused.forward(x), fresh.forward(x)));
  const Tensor<float>* dx_reused = reused.backward(dy, true);
  const Tensor<float>* dx_fresh = fresh.backward(dy, true);
  REQUIRE(dx_reused != nullptr);
  REQUIRE(dx_fresh != nullptr);
  CHECK(identical(*dx_reused, *dx_fresh));
  const auto a = grads_of(reused);
  const auto b = grads_of(fresh);
  for (std::size_t p = 0; p < a.size(); ++p) CHECK(identical(a[p], b[p]));
}

}  // namespace

}  // namespace MPX_UNITY_ID
}  // namespace
