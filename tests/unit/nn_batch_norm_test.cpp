// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// nn::BatchNorm2d: training and evaluation forward, the running statistics' update (PyTorch's
// momentum and unbiased variance) and backward against the definitions in fp64, in fp32, bf16 and
// fp16; fp64 gradients against finite differences; the running statistics saved and loaded with the
// weights; the errors' messages.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"
#include "../support/gradient_check.hpp"
#include "../support/temp_dir.hpp"
#include "mpx/backend/cpu/backend.hpp"
#include "mpx/io/weights.hpp"
#include "mpx/nn/batch_norm.hpp"
#include "mpx/nn/conv2d.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/policy/precision.hpp"

namespace {

using mpx::Shape;
using mpx::Tensor;
using mpx::test::widen;

struct Statistics {
  std::vector<double> mean, var;  // biased variance
};

// Per channel of x [rows, C] (row-major, channels last), in fp64.
Statistics statistics(const std::vector<double>& x, std::int64_t channels) {
  const std::int64_t rows = static_cast<std::int64_t>(x.size()) / channels;
  Statistics s{std::vector<double>(static_cast<std::size_t>(channels), 0.0),
               std::vector<double>(static_cast<std::size_t>(channels), 0.0)};
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < channels; ++c)
      s.mean[static_cast<std::size_t>(c)] += x[static_cast<std::size_t>(r * channels + c)];
  for (auto& m : s.mean) m /= static_cast<double>(rows);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < channels; ++c) {
      const double d = x[static_cast<std::size_t>(r * channels + c)] - s.mean[static_cast<std::size_t>(c)];
      s.var[static_cast<std::size_t>(c)] += d * d;
    }
  for (auto& v : s.var) v /= static_cast<double>(rows);
  return s;
}

template <class T>
std::vector<double> widened(const Tensor<T>& t) {
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = widen(t[i]);
  return v;
}

template <class P>
void check_against_definition() {
  using T = mpx::compute_t<P>;
  INFO(P::name);
  constexpr std::int64_t channels = 6;
  const Shape shape{4, 5, 3, channels};  // 60 values per channel
  std::mt19937_64 rng(21);
  mpx::nn::BatchNorm2d<P> layer(channels, {.epsilon = 1e-3f, .momentum = 0.25});
  mpx::test::randomize_parameters(layer, rng);
  auto x = mpx::test::uniform_tensor<T>(shape, rng, -1.0, 3.0);  // a mean far from zero
  const std::vector<double> xd = widened(x);
  const Statistics s = statistics(xd, channels);
  const std::vector<double> gamma = widened(layer.weight().master()), beta = widened(layer.bias().master());

  const Tensor<T>& y = layer.forward(x);
  const double out_ulp = mpx::epsilon_v<mpx::tag_of_t<T>>;
  const double acc = 64 * 0x1p-24;  // fp32 statistics and arithmetic: a few dozen roundings at most
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const auto c = static_cast<std::size_t>(i % channels);
    const double xhat = (xd[static_cast<std::size_t>(i)] - s.mean[c]) / std::sqrt(s.var[c] + 1e-3);
    const double expected = xhat * gamma[c] + beta[c];
    REQUIRE(std::abs(widen(y[i]) - expected) <=
            out_ulp / 2 * std::abs(expected) + acc * (std::abs(xhat * gamma[c]) + std::abs(beta[c]) + 1));
  }
  // Running statistics from 0 and 1 after one batch: 0.25 mean and 0.75 + 0.25 var * 60 / 59.
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto k = static_cast<std::size_t>(c);
    CHECK(layer.running_mean()[c] == Approx(0.25 * s.mean[k]).epsilon(1e-5).margin(1e-6));
    CHECK(layer.running_var()[c] == Approx(0.75 + 0.25 * s.var[k] * 60.0 / 59.0).epsilon(1e-5));
  }

  // Backward: dx, dgamma, dbeta against the closed form in fp64.
  auto dy = mpx::test::uniform_tensor<T>(shape, rng, -1.0, 1.0);
  const std::vector<double> g = widened(dy);
  layer.for_each_parameter([](const auto&, auto& p) { p.zero_grad(); });
  const Tensor<T>* dx = layer.backward(dy);
  REQUIRE(dx != nullptr);
  const std::int64_t rows = shape.rows();
  std::vector<double> sum_g(channels, 0.0), sum_gx(channels, 0.0), size_g(channels, 0.0),
      size_gx(channels, 0.0);
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const auto c = static_cast<std::size_t>(i % channels);
    const double xhat = (xd[static_cast<std::size_t>(i)] - s.mean[c]) / std::sqrt(s.var[c] + 1e-3);
    sum_g[c] += g[static_cast<std::size_t>(i)];
    sum_gx[c] += g[static_cast<std::size_t>(i)] * xhat;
    size_g[c] += std::abs(g[static_cast<std::size_t>(i)]);
    size_gx[c] += std::abs(g[static_cast<std::size_t>(i)] * xhat);
  }
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto k = static_cast<std::size_t>(c);
    CHECK(std::abs(layer.bias().grad()[c] - sum_g[k]) <= acc * size_g[k]);
    CHECK(std::abs(layer.weight().grad()[c] - sum_gx[k]) <= acc * size_gx[k]);
  }
  for (std::int64_t i = 0; i < dx->numel(); ++i) {
    const auto c = static_cast<std::size_t>(i % channels);
    const double rstd = 1.0 / std::sqrt(s.var[c] + 1e-3);
    const double xhat = (xd[static_cast<std::size_t>(i)] - s.mean[c]) * rstd;
    const double expected =
        gamma[c] * rstd * (g[static_cast<std::size_t>(i)] - sum_g[c] / rows - xhat * sum_gx[c] / rows);
    const double size = std::abs(gamma[c] * rstd) * (std::abs(g[static_cast<std::size_t>(i)]) +
                                                     size_g[c] / rows + std::abs(xhat) * size_gx[c] / rows);
    REQUIRE(std::abs(widen((*dx)[i]) - expected) <= out_ulp / 2 * std::abs(expected) + acc * size);
  }

  // Evaluation: the running statistics normalise, nothing is updated, backward refuses.
  const std::vector<double> running_mean = widened(layer.running_mean()),
                            running_var = widened(layer.running_var());
  mpx::nn::set_training(layer, false);
  const Tensor<T>& z = layer.forward(x);
  for (std::int64_t i = 0; i < z.numel(); ++i) {
    const auto c = static_cast<std::size_t>(i % channels);
    const double xhat =
        (xd[static_cast<std::size_t>(i)] - running_mean[c]) / std::sqrt(running_var[c] + 1e-3);
    const double expected = xhat * gamma[c] + beta[c];
    REQUIRE(std::abs(widen(z[i]) - expected) <=
            out_ulp / 2 * std::abs(expected) + acc * (std::abs(xhat * gamma[c]) + std::abs(beta[c]) + 1));
  }
  CHECK(widened(layer.running_mean()) == running_mean);
  CHECK_THROWS_AS(layer.backward(dy), mpx::error);
}

}  // namespace

TEST_CASE("BatchNorm2d matches its definition in training and evaluation", "[nn][batch_norm]") {
  check_against_definition<mpx::fp32>();
  check_against_definition<mpx::bf16_mixed>();
  check_against_definition<mpx::fp16_mixed>();
}

TEST_CASE("BatchNorm2d's fp64 gradients match finite differences", "[nn][batch_norm][gradient]") {
  std::mt19937_64 rng(23);
  mpx::nn::BatchNorm2d<mpx::fp64> layer(3);
  mpx::test::randomize_parameters(layer, rng);
  auto x = mpx::test::uniform_tensor(Shape{2, 3, 2, 3}, rng, -1.0, 2.0);
  const auto w = mpx::test::uniform_tensor(Shape{2, 3, 2, 3}, rng, -1.0, 1.0);
  mpx::test::check_layer_gradients(layer, x, w);
}

TEST_CASE("BatchNorm2d's running statistics are saved and loaded with the weights", "[nn][batch_norm][io]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(29);
  mpx::nn::Sequential model{mpx::nn::Conv2d<P>(2, 4, 3, {.padding = 1, .bias = false}),
                            mpx::nn::BatchNorm2d<P>(4)};
  auto x = mpx::test::uniform_tensor<T>(Shape{3, 5, 5, 2}, rng, -1.0, 1.0);
  model.forward(x);
  model.forward(x);
  std::vector<std::string> names;
  model.for_each_buffer([&](std::string_view name, auto&) { names.emplace_back(name); });
  CHECK(names == std::vector<std::string>{"layers.1.running_mean", "layers.1.running_var"});

  const mpx::test::TempDir dir("batch_norm_weights");
  const auto path = dir.path() / "model.safetensors";
  mpx::io::save_weights(model, path);
  mpx::nn::Sequential fresh{mpx::nn::Conv2d<P>(2, 4, 3, {.padding = 1, .bias = false}),
                            mpx::nn::BatchNorm2d<P>(4)};
  CHECK(fresh.layer<1>().running_var()[0] == 1.0f);
  mpx::io::load_weights(fresh, path);
  for (std::int64_t c = 0; c < 4; ++c) {
    CHECK(fresh.layer<1>().running_mean()[c] == model.layer<1>().running_mean()[c]);
    CHECK(fresh.layer<1>().running_var()[c] == model.layer<1>().running_var()[c]);
  }
}

TEST_CASE("BatchNorm2d rejects bad settings and inputs, naming the layer and the values",
          "[nn][batch_norm][errors]") {
  using mpx::test::MessageContains;
  using B = mpx::nn::BatchNorm2d<mpx::fp32>;
  CHECK_THROWS_MATCHES(B(0), mpx::invalid_argument,
                       MessageContains({"num_features must be positive, got 0"}));
  CHECK_THROWS_MATCHES(B(4, {.epsilon = 0.0f}), mpx::invalid_argument, MessageContains({"epsilon = 0"}));
  CHECK_THROWS_MATCHES(B(4, {.momentum = 1.5}), mpx::invalid_argument, MessageContains({"momentum = 1.5"}));
  B layer(4);
  layer.set_label("layers.1 (BatchNorm2d)");
  const Tensor<float> wrong(Shape{2, 3, 3, 5}), single(Shape{1, 1, 1, 4});
  CHECK_THROWS_MATCHES(
      layer.forward(wrong), mpx::shape_error,
      MessageContains({"layers.1 (BatchNorm2d): expected input of shape [batch, height, width, 4]",
                       "received [2, 3, 3, 5]"}));
  CHECK_THROWS_MATCHES(layer.forward(single), mpx::shape_error,
                       MessageContains({"more than one value per channel", "[1, 1, 1, 4]"}));
  CHECK_THROWS_MATCHES(layer.backward(Tensor<float>(Shape{2, 3, 3, 4})), mpx::error,
                       MessageContains({"layers.1 (BatchNorm2d): backward called before forward"}));
}
