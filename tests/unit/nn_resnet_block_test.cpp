// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A ResNet basic block as mpx builds it: Residual{Conv2d, BatchNorm2d, ReLU, Conv2d, BatchNorm2d} with
// a projection shortcut (1 x 1 convolution with stride 2 and BatchNorm2d). fp64 gradients of the
// whole block against finite differences, the names of its parameters and buffers, its description,
// and the shape check across the two paths.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"
#include "../support/gradient_check.hpp"
#include "mpx/backend/cpu/backend.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/sequential.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

template <class P>
auto downsampling_block(std::int64_t in, std::int64_t out) {
  using L = mpx::nn::layers<P>;
  return mpx::nn::Residual{
      mpx::nn::Sequential{L::conv2d(in, out, 3, {.stride = 2, .padding = 1, .bias = false}),
                          L::batch_norm2d(out), L::relu(),
                          L::conv2d(out, out, 3, {.padding = 1, .bias = false}), L::batch_norm2d(out)},
      mpx::nn::Sequential{L::conv2d(in, out, 1, {.stride = 2, .bias = false}), L::batch_norm2d(out)}};
}

}  // namespace

TEST_CASE("A ResNet block with a projection shortcut has exact fp64 gradients", "[nn][resnet]") {
  std::mt19937_64 rng(31);
  auto block = downsampling_block<mpx::fp64>(2, 3);
  mpx::test::randomize_parameters(block, rng);
  auto x = mpx::test::uniform_tensor(mpx::Shape{2, 5, 4, 2}, rng, -1.0, 1.0);
  const mpx::Shape y_shape = block.forward(x).shape();
  CHECK(y_shape == mpx::Shape{2, 3, 2, 3});
  const auto w = mpx::test::uniform_tensor(y_shape, rng, -1.0, 1.0);
  mpx::test::check_layer_gradients(block, x, w);
}

TEST_CASE("A projected Residual names, describes and checks both paths", "[nn][resnet]") {
  auto block = downsampling_block<mpx::bf16_mixed>(4, 8);
  std::vector<std::string> parameters, buffers;
  block.for_each_parameter([&](std::string_view name, auto&) { parameters.emplace_back(name); });
  block.for_each_buffer([&](std::string_view name, auto&) { buffers.emplace_back(name); });
  CHECK(parameters == std::vector<std::string>{
                          "block.layers.0.weight", "block.layers.1.weight", "block.layers.1.bias",
                          "block.layers.3.weight", "block.layers.4.weight", "block.layers.4.bias",
                          "shortcut.layers.0.weight", "shortcut.layers.1.weight", "shortcut.layers.1.bias"});
  CHECK(buffers == std::vector<std::string>{"block.layers.1.running_mean", "block.layers.1.running_var",
                                            "block.layers.4.running_mean", "block.layers.4.running_var",
                                            "shortcut.layers.1.running_mean",
                                            "shortcut.layers.1.running_var"});
  const auto description = block.describe();
  REQUIRE(description.size() == 2);
  CHECK(description[0].key == "block");
  CHECK(description[1].key == "shortcut");

  // A shortcut that keeps the shape while the block halves it: named in the error.
  using L = mpx::nn::layers<mpx::fp32>;
  mpx::nn::Residual mismatch{mpx::nn::Sequential{L::conv2d(4, 4, 3, {.stride = 2, .padding = 1})},
                             mpx::nn::Sequential{L::conv2d(4, 4, 1)}};
  mismatch.set_label("layers.2 (Residual)");
  const mpx::Tensor<float> x(mpx::Shape{1, 6, 6, 4});
  CHECK_THROWS_MATCHES(
      mismatch.forward(x), mpx::shape_error,
      mpx::test::MessageContains({"layers.2 (Residual): the block maps [1, 6, 6, 4] to [1, 3, 3, 4], "
                                  "the shortcut to [1, 6, 6, 4]"}));
}

}  // namespace MPX_UNITY_ID
}  // namespace
