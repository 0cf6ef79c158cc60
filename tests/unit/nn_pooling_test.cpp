// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Pooling and Flatten: MaxPool2d, AvgPool2d and GlobalAvgPool2d against the definitions in fp64 (max
// exact, averages within one rounding of the accumulate-type sum), fp64 gradients against finite
// differences, PyTorch's tie and NaN rules, Flatten's views, and the errors' messages.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"
#include "../support/gradient_check.hpp"
#include "../support/window_text.hpp"
#include "mpx/backend/cpu/backend.hpp"
#include "mpx/nn/flatten.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/pooling.hpp"
#include "mpx/policy/precision.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Size2d;
using mpx::Tensor;
using mpx::test::widen;

struct PoolCase {
  const char* name;
  std::int64_t batch, height, width, channels;
  Size2d kernel;
  mpx::nn::Pool2dOptions options;
};

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> list{
      {"2x2", 2, 6, 8, 3, 2, {}},
      {"3x3 stride 2 padding 1 (overlapping)", 2, 7, 6, 4, 3, {.stride = 2, .padding = 1}},
      {"rectangular, stride 1", 1, 5, 7, 2, {3, 2}, {.stride = 1, .padding = {1, 0}}},
      {"3x3 stride 2 padding 1, count_include_pad false",
       2,
       7,
       6,
       4,
       3,
       {.stride = 2, .padding = 1, .count_include_pad = false}},
  };
  return list;
}

// y[n, oh, ow, c] by the definition: the max or mean of the window's taps inside the image.
std::vector<double> pool_reference(const std::vector<double>& x, const mpx::Pool2dGeometry& g, bool max,
                                   bool count_include_pad) {
  const Size2d out = g.output();
  std::vector<double> y;
  for (std::int64_t n = 0; n < g.batch; ++n)
    for (std::int64_t oh = 0; oh < out.h; ++oh)
      for (std::int64_t ow = 0; ow < out.w; ++ow)
        for (std::int64_t c = 0; c < g.channels; ++c) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          std::int64_t taps = 0;
          for (std::int64_t kh = 0; kh < g.window.kernel.h; ++kh)
            for (std::int64_t kw = 0; kw < g.window.kernel.w; ++kw) {
              const std::int64_t h = oh * g.window.stride.h - g.window.padding.h + kh;
              const std::int64_t w = ow * g.window.stride.w - g.window.padding.w + kw;
              if (h < 0 || h >= g.input.h || w < 0 || w >= g.input.w) continue;
              const double v =
                  x[static_cast<std::size_t>(((n * g.input.h + h) * g.input.w + w) * g.channels + c)];
              best = std::max(best, v);
              sum += v;
              ++taps;
            }
          const double divisor =
              count_include_pad ? double(g.window.kernel.h * g.window.kernel.w) : double(taps);
          y.push_back(max ? best : sum / divisor);
        }
  return y;
}

template <class Layer, class P>
void check_pool(const PoolCase& c, bool max) {
  using T = mpx::compute_t<P>;
  INFO(c.name << " " << Layer::kind << " in " << P::name);
  std::mt19937_64 rng(5);
  Layer layer(c.kernel, c.options);
  auto x = mpx::test::uniform_tensor<T>(Shape{c.batch, c.height, c.width, c.channels}, rng, -1.0, 1.0);
  const Tensor<T>& y = layer.forward(x);
  const mpx::Pool2dGeometry g{
      .batch = c.batch, .input = {c.height, c.width}, .channels = c.channels, .window = layer.window()};
  REQUIRE(y.shape() == g.output_shape());
  std::vector<double> xd(static_cast<std::size_t>(x.numel()));
  for (std::int64_t i = 0; i < x.numel(); ++i) xd[static_cast<std::size_t>(i)] = widen(x[i]);
  const std::vector<double> expected = pool_reference(xd, g, max, c.options.count_include_pad);
  const double ulp = mpx::epsilon_v<mpx::tag_of_t<T>>;
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const double e = expected[static_cast<std::size_t>(i)];
    if (max) {
      REQUIRE(widen(y[i]) == e);  // the max is one of the values: exact
    } else {
      REQUIRE(std::abs(widen(y[i]) - e) <= ulp / 2 * std::abs(e) + 32 * 0x1p-24 * 1.0);
    }
  }
}

}  // namespace

TEST_CASE("MaxPool2d and AvgPool2d match their definitions", "[nn][pooling]") {
  for (const PoolCase& c : pool_cases()) {
    check_pool<mpx::nn::MaxPool2d<mpx::fp32>, mpx::fp32>(c, true);
    check_pool<mpx::nn::MaxPool2d<mpx::bf16_mixed>, mpx::bf16_mixed>(c, true);
    check_pool<mpx::nn::AvgPool2d<mpx::fp32>, mpx::fp32>(c, false);
    check_pool<mpx::nn::AvgPool2d<mpx::bf16_mixed>, mpx::bf16_mixed>(c, false);
    check_pool<mpx::nn::AvgPool2d<mpx::fp16_mixed>, mpx::fp16_mixed>(c, false);
  }
}

TEST_CASE("Pooling keeps the options it is given", "[nn][pooling]") {
  // GCC 12.2 (-O2 -march=native) copied Conv2d's by-value options, whose first fields are {stride,
  // padding} as here, as a broadcast of the stride (GCC bug 108599, Conv2d's constructor). No such
  // copy was found for pooling's, which the layers now take by reference too; this checks that each
  // setting arrives, however the options travel.
  using L = mpx::nn::layers<mpx::fp32>;
  const auto check = [&](auto&& layer, const mpx::Window2d& window, std::int64_t out) {
    CHECK(mpx::test::window_text(layer.window()) == mpx::test::window_text(window));
    Tensor<float> x(Shape{2, 8, 8, 3});
    x.set_zero();
    CHECK(layer.forward(x).shape() == Shape{2, out, out, 3});
  };
  check(L::max_pool2d(3, {.stride = 2}), {.kernel = 3, .stride = 2}, 3);
  check(L::avg_pool2d(3, {.stride = 2, .padding = 1}), {.kernel = 3, .stride = 2, .padding = 1}, 4);
  check(L::max_pool2d(2), {.kernel = 2, .stride = 2}, 4);
  check(mpx::nn::MaxPool2d<mpx::fp32>(3, {.stride = 2}), {.kernel = 3, .stride = 2}, 3);
  check(mpx::nn::AvgPool2d<mpx::fp32>(3, {.stride = 1, .padding = 1, .count_include_pad = false}),
        {.kernel = 3, .stride = 1, .padding = 1}, 8);
}

TEST_CASE("Pooling's fp64 gradients match finite differences", "[nn][pooling][gradient]") {
  std::mt19937_64 rng(17);
  for (const PoolCase& c : pool_cases()) {
    INFO(c.name);
    const Shape shape{c.batch, c.height, c.width, c.channels};
    {
      mpx::nn::AvgPool2d<mpx::fp64> layer(c.kernel, c.options);
      auto x = mpx::test::uniform_tensor(shape, rng, -1.0, 1.0);
      const auto w = mpx::test::uniform_tensor(layer.forward(x).shape(), rng, -1.0, 1.0);
      mpx::test::check_layer_gradients(layer, x, w);
    }
    {
      // Distinct values at least 1e-3 apart, so that a step of 1e-6 never changes a window's argmax.
      mpx::nn::MaxPool2d<mpx::fp64> layer(c.kernel, c.options);
      Tensor<double> x(shape);
      std::vector<double> values(static_cast<std::size_t>(x.numel()));
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = 1e-3 * static_cast<double>(i) - 0.5;
      std::shuffle(values.begin(), values.end(), rng);
      for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = values[static_cast<std::size_t>(i)];
      const auto w = mpx::test::uniform_tensor(layer.forward(x).shape(), rng, -1.0, 1.0);
      mpx::test::check_layer_gradients(layer, x, w);
    }
  }
  mpx::nn::GlobalAvgPool2d<mpx::fp64> global;
  auto x = mpx::test::uniform_tensor(Shape{3, 4, 5, 6}, rng, -1.0, 1.0);
  const auto w = mpx::test::uniform_tensor(Shape{3, 6}, rng, -1.0, 1.0);
  mpx::test::check_layer_gradients(global, x, w);
}

TEST_CASE("MaxPool2d follows PyTorch's rules for ties and NaN", "[nn][pooling]") {
  // One image, one channel, a 2x2 window over 2x2: ties go to the first tap in (kh, kw) order, a
  // NaN makes the result NaN and takes the gradient (the last NaN, as PyTorch's CPU kernel).
  mpx::nn::MaxPool2d<mpx::fp32> pool(2);
  const auto run = [&](std::vector<float> values) {
    Tensor<float> x(Shape{1, 2, 2, 1});
    for (int i = 0; i < 4; ++i) x[i] = values[static_cast<std::size_t>(i)];
    const float y = pool.forward(x)[0];
    Tensor<float> dy(Shape{1, 1, 1, 1});
    dy[0] = 1.0f;
    const Tensor<float>& dx = *pool.backward(dy);
    std::vector<float> grad{dx[0], dx[1], dx[2], dx[3]};
    return std::pair{y, grad};
  };
  const auto [tie, tie_grad] = run({1.0f, 3.0f, 3.0f, 2.0f});
  CHECK(tie == 3.0f);
  CHECK(tie_grad == std::vector<float>{0, 1, 0, 0});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto [with_nan, nan_grad] = run({1.0f, nan, 5.0f, nan});
  CHECK(std::isnan(with_nan));
  CHECK(nan_grad == std::vector<float>{0, 0, 0, 1});
  const float inf = std::numeric_limits<float>::infinity();
  const auto [all_minus_inf, inf_grad] = run({-inf, -inf, -inf, -inf});
  CHECK(all_minus_inf == -inf);
  CHECK(inf_grad == std::vector<float>{1, 0, 0, 0});
}

TEST_CASE("GlobalAvgPool2d averages each image's channels in fp32, rounded once", "[nn][pooling]") {
  using T = mpx::compute_t<mpx::bf16_mixed>;
  std::mt19937_64 rng(9);
  mpx::nn::GlobalAvgPool2d<mpx::bf16_mixed> pool;
  auto x = mpx::test::uniform_tensor<T>(Shape{2, 7, 7, 5}, rng, -1.0, 1.0);
  const Tensor<T>& y = pool.forward(x);
  REQUIRE(y.shape() == Shape{2, 5});
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t c = 0; c < 5; ++c) {
      float sum = 0;  // the same sum in the same order: bit for bit
      for (std::int64_t p = 0; p < 49; ++p) sum += static_cast<float>(x[(n * 49 + p) * 5 + c]);
      CHECK(y[n * 5 + c] == mpx::round_to<mpx::BFloat16>(sum / 49.0f));
    }
}

TEST_CASE("Flatten views its input and the gradient without copying", "[nn][pooling]") {
  mpx::nn::Flatten<mpx::fp32> flatten;
  Tensor<float> x(Shape{2, 3, 4, 5});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = static_cast<float>(i);
  const Tensor<float>& y = flatten.forward(x);
  CHECK(y.shape() == Shape{2, 60});
  CHECK(y.data() == x.data());
  Tensor<float> dy(Shape{2, 60});
  const Tensor<float>* dx = flatten.backward(dy);
  REQUIRE(dx != nullptr);
  CHECK(dx->shape() == x.shape());
  CHECK(dx->data() == dy.data());
  CHECK_THROWS_MATCHES(flatten.backward(Tensor<float>(Shape{2, 59})), mpx::shape_error,
                       mpx::test::MessageContains({"Flatten", "upstream gradient"}));
}

TEST_CASE("Pooling rejects bad settings and inputs, naming the layer and the values",
          "[nn][pooling][errors]") {
  using mpx::test::MessageContains;
  CHECK_THROWS_MATCHES(
      mpx::nn::MaxPool2d<mpx::fp32>(2, {.padding = 2}), mpx::invalid_argument,
      MessageContains({"mpx::nn::MaxPool2d: padding 2 x 2 must be at most half the kernel_size 2 x 2"}));
  CHECK_THROWS_MATCHES(mpx::nn::AvgPool2d<mpx::fp32>({0, 2}), mpx::invalid_argument,
                       MessageContains({"mpx::nn::AvgPool2d: kernel_size 0 x 2 must be positive"}));
  mpx::nn::MaxPool2d<mpx::fp32> pool(3);
  pool.set_label("layers.3 (MaxPool2d)");
  const Tensor<float> too_small(Shape{1, 2, 5, 4}), rank3(Shape{5, 4, 3});
  CHECK_THROWS_MATCHES(
      pool.forward(too_small), mpx::shape_error,
      MessageContains({"layers.3 (MaxPool2d): the window 3 x 3 is larger than the padded input 2 x 5"}));
  CHECK_THROWS_MATCHES(
      pool.forward(rank3), mpx::shape_error,
      MessageContains({"layers.3 (MaxPool2d): expected input of shape [batch, height, width, channels]",
                       "received [5, 4, 3]"}));
  mpx::nn::GlobalAvgPool2d<mpx::fp32> global;
  CHECK_THROWS_MATCHES(global.forward(Tensor<float>(Shape{4, 10})), mpx::shape_error,
                       MessageContains({"GlobalAvgPool2d", "received [4, 10]"}));
  CHECK_THROWS_MATCHES(global.backward(Tensor<float>(Shape{4, 10})), mpx::error,
                       MessageContains({"GlobalAvgPool2d: backward called before forward"}));
}

}  // namespace MPX_UNITY_ID
}  // namespace
