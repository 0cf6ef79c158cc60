// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The layers a diffusion UNet adds to a ResNet's: GroupNorm, SiLU and nearest Upsample. Each against
// its definition in fp64 in fp32, bf16 and fp16 (one rounding of an fp32 computation), fp64 gradients
// against finite differences, and the errors' messages.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"
#include "../support/gradient_check.hpp"
#include "mpx/backend/cpu/backend.hpp"
#include "mpx/nn/activation.hpp"
#include "mpx/nn/group_norm.hpp"
#include "mpx/nn/upsample.hpp"
#include "mpx/policy/precision.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Tensor;
using mpx::test::widen;

template <class P>
void check_group_norm() {
  using T = mpx::compute_t<P>;
  INFO(P::name);
  constexpr std::int64_t n = 3, pixels = 10, c = 6, groups = 2, cg = c / groups;
  std::mt19937_64 rng(41);
  mpx::nn::GroupNorm<P> layer(groups, c, 1e-3f);
  mpx::test::randomize_parameters(layer, rng);
  auto x = mpx::test::uniform_tensor<T>(Shape{n, 2, 5, c}, rng, -1.0, 3.0);
  const Tensor<T>& y = layer.forward(x);
  auto dy = mpx::test::uniform_tensor<T>(y.shape(), rng, -1.0, 1.0);
  layer.for_each_parameter([](const auto&, auto& p) { p.zero_grad(); });
  const Tensor<T>& dx = *layer.backward(dy);
  const double ulp = mpx::epsilon_v<mpx::tag_of_t<T>>, acc = 64 * 0x1p-24;
  std::vector<double> dgamma(c, 0.0), dbeta(c, 0.0), dsize(c, 0.0);
  for (std::int64_t image = 0; image < n; ++image)
    for (std::int64_t g = 0; g < groups; ++g) {
      // The group's elements: every pixel, channels g Cg ... (g + 1) Cg - 1.
      std::vector<std::int64_t> at;
      for (std::int64_t p = 0; p < pixels; ++p)
        for (std::int64_t k = g * cg; k < (g + 1) * cg; ++k) at.push_back((image * pixels + p) * c + k);
      double mean = 0, var = 0;
      for (const auto i : at) mean += widen(x[i]);
      mean /= double(at.size());
      for (const auto i : at) var += (widen(x[i]) - mean) * (widen(x[i]) - mean);
      var /= double(at.size());
      const double rstd = 1 / std::sqrt(var + 1e-3);
      double mean_h = 0, mean_hx = 0, size_h = 0;
      for (const auto i : at) {
        const double gamma = widen(layer.weight().master()[i % c]);
        const double xhat = (widen(x[i]) - mean) * rstd;
        const double h = widen(dy[i]) * gamma;
        mean_h += h / double(at.size());
        mean_hx += h * xhat / double(at.size());
        size_h += std::abs(h) * (1 + std::abs(xhat)) / double(at.size());
        const double expected = xhat * gamma + widen(layer.bias().master()[i % c]);
        REQUIRE(std::abs(widen(y[i]) - expected) <=
                ulp / 2 * std::abs(expected) + acc * (std::abs(xhat * gamma) + 1));
        dgamma[static_cast<std::size_t>(i % c)] += widen(dy[i]) * xhat;
        dbeta[static_cast<std::size_t>(i % c)] += widen(dy[i]);
        dsize[static_cast<std::size_t>(i % c)] += std::abs(widen(dy[i])) * (1 + std::abs(xhat));
      }
      for (const auto i : at) {
        const double gamma = widen(layer.weight().master()[i % c]);
        const double xhat = (widen(x[i]) - mean) * rstd;
        const double expected = rstd * (widen(dy[i]) * gamma - mean_h - xhat * mean_hx);
        const double size = rstd * (std::abs(widen(dy[i]) * gamma) + size_h * (1 + std::abs(xhat)));
        REQUIRE(std::abs(widen(dx[i]) - expected) <= ulp / 2 * std::abs(expected) + acc * size);
      }
    }
  for (std::int64_t k = 0; k < c; ++k) {
    const auto i = static_cast<std::size_t>(k);
    CHECK(std::abs(layer.weight().grad()[k] - dgamma[i]) <= acc * dsize[i]);
    CHECK(std::abs(layer.bias().grad()[k] - dbeta[i]) <= acc * dsize[i]);
  }
}

}  // namespace

TEST_CASE("GroupNorm matches its definition", "[nn][group_norm]") {
  check_group_norm<mpx::fp32>();
  check_group_norm<mpx::bf16_mixed>();
  check_group_norm<mpx::fp16_mixed>();
}

TEST_CASE("GroupNorm, SiLU and Upsample have exact fp64 gradients", "[nn][group_norm][gradient]") {
  std::mt19937_64 rng(43);
  {
    mpx::nn::GroupNorm<mpx::fp64> layer(2, 4);
    mpx::test::randomize_parameters(layer, rng);
    auto x = mpx::test::uniform_tensor(Shape{2, 3, 2, 4}, rng, -1.0, 2.0);
    const auto w = mpx::test::uniform_tensor(Shape{2, 3, 2, 4}, rng, -1.0, 1.0);
    mpx::test::check_layer_gradients(layer, x, w);
  }
  {
    mpx::nn::SiLU<mpx::fp64> layer;
    auto x = mpx::test::uniform_tensor(Shape{3, 7}, rng, -6.0, 6.0);
    const auto w = mpx::test::uniform_tensor(Shape{3, 7}, rng, -1.0, 1.0);
    mpx::test::check_layer_gradients(layer, x, w);
  }
  {
    mpx::nn::Upsample<mpx::fp64> layer({2, 3});
    auto x = mpx::test::uniform_tensor(Shape{2, 3, 2, 4}, rng, -1.0, 1.0);
    const auto w = mpx::test::uniform_tensor(Shape{2, 6, 6, 4}, rng, -1.0, 1.0);
    mpx::test::check_layer_gradients(layer, x, w);
  }
}

TEST_CASE("SiLU is x sigmoid(x) in fp32, rounded once, and finite for large |x|", "[nn][silu]") {
  using T = mpx::compute_t<mpx::bf16_mixed>;
  mpx::nn::SiLU<mpx::bf16_mixed> layer;
  Tensor<T> x(Shape{1, 6});
  const float values[] = {-100.0f, -3.0f, -0.5f, 0.0f, 2.0f, 90.0f};
  for (int i = 0; i < 6; ++i) x[i] = T(values[i]);
  const Tensor<T>& y = layer.forward(x);
  for (int i = 0; i < 6; ++i) {
    const float v = float(x[i]);
    CHECK(y[i] == mpx::round_to<mpx::BFloat16>(v / (1.0f + std::exp(-v))));
    CHECK(std::isfinite(float(y[i])));
  }
}

TEST_CASE("Upsample repeats pixels and sums each block of the gradient", "[nn][upsample]") {
  using T = mpx::compute_t<mpx::bf16_mixed>;
  std::mt19937_64 rng(47);
  mpx::nn::Upsample<mpx::bf16_mixed> up;  // 2 x 2
  auto x = mpx::test::uniform_tensor<T>(Shape{2, 3, 4, 5}, rng, -1.0, 1.0);
  const Tensor<T>& y = up.forward(x);
  REQUIRE(y.shape() == Shape{2, 6, 8, 5});
  auto dy = mpx::test::uniform_tensor<T>(y.shape(), rng, -1.0, 1.0);
  const Tensor<T>& dx = *up.backward(dy);
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t h = 0; h < 6; ++h)
      for (std::int64_t w = 0; w < 8; ++w)
        for (std::int64_t c = 0; c < 5; ++c) {
          REQUIRE(y[((n * 6 + h) * 8 + w) * 5 + c] == x[((n * 3 + h / 2) * 4 + w / 2) * 5 + c]);
        }
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t h = 0; h < 3; ++h)
      for (std::int64_t w = 0; w < 4; ++w)
        for (std::int64_t c = 0; c < 5; ++c) {
          float sum = 0;  // the same order as the kernel: rows of the block, then columns
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) sum += float(dy[((n * 6 + 2 * h + a) * 8 + 2 * w + b) * 5 + c]);
          REQUIRE(dx[((n * 3 + h) * 4 + w) * 5 + c] == mpx::round_to<mpx::BFloat16>(sum));
        }
}

TEST_CASE("GroupNorm and Upsample reject bad settings and inputs", "[nn][group_norm][errors]") {
  using mpx::test::MessageContains;
  CHECK_THROWS_MATCHES(mpx::nn::GroupNorm<mpx::fp32>(4, 6), mpx::invalid_argument,
                       MessageContains({"num_groups = 4 must be positive and divide num_channels = 6"}));
  CHECK_THROWS_MATCHES(mpx::nn::Upsample<mpx::fp32>({2, 0}), mpx::invalid_argument,
                       MessageContains({"scale_factor 2 x 0 must be positive"}));
  mpx::nn::GroupNorm<mpx::fp32> norm(2, 4);
  norm.set_label("layers.0 (GroupNorm)");
  const Tensor<float> wrong(Shape{2, 3, 3, 6});
  CHECK_THROWS_MATCHES(
      norm.forward(wrong), mpx::shape_error,
      MessageContains({"layers.0 (GroupNorm): expected a non-empty input of shape [batch, ..., 4]",
                       "received [2, 3, 3, 6]"}));
  mpx::nn::Upsample<mpx::fp32> up;
  CHECK_THROWS_MATCHES(
      up.forward(Tensor<float>(Shape{3, 4})), mpx::shape_error,
      MessageContains({"Upsample: expected input of shape [batch, height, width, channels]"}));
}

}  // namespace MPX_UNITY_ID
}  // namespace
