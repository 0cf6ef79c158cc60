// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The concatenating skip of a UNet, Concat{block}: the copy of x and block(x) is exact; dx is the
// skip's gradient plus the block's, one fp32 sum rounded once (bit for bit in bf16); fp64 gradients
// through convolutions, BatchNorm, pooling and upsampling against finite differences; the shape
// error; names, buffers and description; and a small UNet trained through the Trainer, saved and
// loaded, and resumed from a checkpoint bit-identically.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"
#include "../support/gradient_check.hpp"
#include "../support/model_state.hpp"
#include "../support/temp_dir.hpp"
#include "mpx/mpx.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Tensor;

// [unet_level]
// One UNet level: x [N, H, W, 1] -> [N, H, W, 4] -> concat(that, the level below's [N, H, W, 6])
// -> [N, H, W, 10] -> [N, H, W, 1]. The level below halves the image, and upsamples it back.
template <class P>
auto small_unet() {
  using L = mpx::nn::layers<P>;
  return mpx::nn::Sequential{
      L::conv2d(1, 4, 3, {.padding = 1}), L::relu(),
      mpx::nn::Concat{mpx::nn::Sequential{L::max_pool2d(2), L::conv2d(4, 6, 3, {.padding = 1, .bias = false}),
                                          L::batch_norm2d(6), L::relu(), L::upsample(2)}},
      L::conv2d(10, 1, 3, {.padding = 1})};
}
// [unet_level]

// Images [batch, 8, 8, 1] from a hash, and as the target each image's horizontal mirror: a task that
// needs the skip (the fine detail) and the pooled path (the context).
struct Batch {
  Tensor<float> images;
  Tensor<float> targets;
};

Batch make_batch(std::int64_t batch, std::uint32_t step) {
  Batch b{Tensor<float>(Shape{batch, 8, 8, 1}), Tensor<float>(Shape{batch, 8, 8, 1})};
  for (std::int64_t i = 0; i < b.images.numel(); ++i) {
    const std::uint32_t h = (static_cast<std::uint32_t>(i) * 2654435761u) ^ (step * 40503u + 17u);
    b.images[i] = static_cast<float>((h >> 8) % 256u) / 256.0f;
  }
  for (std::int64_t i = 0; i < b.images.numel(); ++i) b.targets[i] = b.images[(i / 8) * 8 + 7 - i % 8];
  return b;
}

template <class T>
bool same_bits(const Tensor<T>& a, const Tensor<T>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

}  // namespace

TEST_CASE("Concat copies x and block(x) side by side, exactly, at any rank", "[nn][concat]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  using L = mpx::nn::layers<P>;
  std::mt19937_64 rng(51);
  {  // Images: x [2, 4, 6, 3], block(x) [2, 4, 6, 5].
    mpx::nn::Concat level{
        mpx::nn::Sequential{L::max_pool2d(2), L::conv2d(3, 5, 3, {.padding = 1}), L::upsample(2)}};
    level.block().initialize(3);
    const auto x = mpx::test::uniform_tensor<T>(Shape{2, 4, 6, 3}, rng, -1.0, 1.0);
    const Tensor<T>& y = level.forward(x);
    REQUIRE(y.shape() == Shape{2, 4, 6, 8});
    const Tensor<T>& fx = level.block().last_output();
    REQUIRE(fx.shape() == Shape{2, 4, 6, 5});
    bool exact = true;
    for (std::int64_t r = 0; r < 2 * 4 * 6; ++r) {
      exact = exact && std::memcmp(&y[r * 8], &x[r * 3], 3 * sizeof(T)) == 0 &&
              std::memcmp(&y[r * 8 + 3], &fx[r * 5], 5 * sizeof(T)) == 0;
    }
    CHECK(exact);
  }
  {  // Rows of a sequence: x [2, 3, 4], block(x) [2, 3, 2].
    mpx::nn::Concat features{mpx::nn::Sequential{L::linear(4, 2)}};
    features.block().initialize(5);
    const auto x = mpx::test::uniform_tensor<T>(Shape{2, 3, 4}, rng, -1.0, 1.0);
    const Tensor<T>& y = features.forward(x);
    REQUIRE(y.shape() == Shape{2, 3, 6});
    const Tensor<T>& fx = features.block().last_output();
    for (std::int64_t r = 0; r < 6; ++r) {
      CHECK(std::memcmp(&y[r * 6], &x[r * 4], 4 * sizeof(T)) == 0);
      CHECK(std::memcmp(&y[r * 6 + 4], &fx[r * 2], 2 * sizeof(T)) == 0);
    }
  }
}

TEST_CASE("Concat's dx is the skip's gradient plus the block's, one fp32 sum rounded once", "[nn][concat]") {
  // bf16: against the same block run alone on dy[..., Cx:] (its dx), and the fp32 reference sum of
  // the two gradients rounded once, bit for bit; and within half an ulp of the exact sum.
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  using L = mpx::nn::layers<P>;
  const auto make_block = [] {
    auto block = mpx::nn::Sequential{L::conv2d(3, 4, 3, {.padding = 1, .bias = false}), L::batch_norm2d(4)};
    block.initialize(9);
    return block;
  };
  std::mt19937_64 rng(52);
  mpx::nn::Concat level{make_block()};
  auto alone = make_block();
  const auto x = mpx::test::uniform_tensor<T>(Shape{2, 5, 4, 3}, rng, -2.0, 2.0);
  const auto dy = mpx::test::uniform_tensor<T>(Shape{2, 5, 4, 7}, rng, -1.0, 1.0);
  const Tensor<T>& y = level.forward(x);
  CHECK(same_bits(alone.forward(x), level.block().last_output()));
  REQUIRE(y.shape() == Shape{2, 5, 4, 7});
  Tensor<T> dy_block(Shape{2, 5, 4, 4});
  for (std::int64_t r = 0; r < 40; ++r)
    for (std::int64_t c = 0; c < 4; ++c) dy_block[r * 4 + c] = dy[r * 7 + 3 + c];
  level.block().zero_grad();
  alone.zero_grad();
  const Tensor<T>* dx = level.backward(dy, true);
  REQUIRE(dx != nullptr);
  const Tensor<T>& block_dx = *alone.backward(dy_block, true);
  REQUIRE(dx->shape() == x.shape());
  const double half_ulp = mpx::epsilon_v<mpx::BFloat16> / 2;
  int bit_exact = 0;
  for (std::int64_t r = 0; r < 40; ++r)
    for (std::int64_t c = 0; c < 3; ++c) {
      const std::int64_t i = r * 3 + c;
      const T reference =
          mpx::round_to<mpx::BFloat16>(static_cast<float>(dy[r * 7 + c]) + static_cast<float>(block_dx[i]));
      bit_exact += std::memcmp(&(*dx)[i], &reference, sizeof(T)) == 0;
      const double exact = mpx::test::widen(dy[r * 7 + c]) + mpx::test::widen(block_dx[i]);
      CHECK(std::abs(mpx::test::widen((*dx)[i]) - exact) <= half_ulp * std::abs(exact) + 0x1p-133);
    }
  CHECK(bit_exact == 120);
  // The block's parameter gradients are those of dy[..., Cx:] alone.
  std::vector<std::vector<float>> through, direct;
  level.for_each_parameter([&](std::string_view, auto& p) {
    through.emplace_back(p.grad().values().begin(), p.grad().values().end());
  });
  alone.for_each_parameter([&](std::string_view, auto& p) {
    direct.emplace_back(p.grad().values().begin(), p.grad().values().end());
  });
  CHECK(through == direct);
  CHECK(level.backward(dy, false) == nullptr);
}

TEST_CASE("Concat has exact fp64 gradients through convolutions, BatchNorm, pooling and upsampling",
          "[nn][concat][gradient]") {
  using L = mpx::nn::layers<mpx::fp64>;
  std::mt19937_64 rng(53);
  {  // Concat alone, around a conv / BatchNorm / SiLU block.
    mpx::nn::Concat level{
        mpx::nn::Sequential{L::conv2d(2, 3, 3, {.padding = 1}), L::batch_norm2d(3), L::silu()}};
    mpx::test::randomize_parameters(level, rng);
    auto x = mpx::test::uniform_tensor(Shape{2, 3, 4, 2}, rng, -1.0, 1.0);
    const auto w = mpx::test::uniform_tensor(Shape{2, 3, 4, 5}, rng, -1.0, 1.0);
    mpx::test::check_layer_gradients(level, x, w);
  }
  {  // A UNet level: the Concat inside a model, its block down-sampling and up-sampling again.
    auto model = small_unet<mpx::fp64>();
    mpx::test::randomize_parameters(model, rng);
    auto x = mpx::test::uniform_tensor(Shape{2, 4, 4, 1}, rng, -1.0, 1.0);
    const auto w = mpx::test::uniform_tensor(Shape{2, 4, 4, 1}, rng, -1.0, 1.0);
    mpx::test::check_layer_gradients(model, x, w);
  }
}

TEST_CASE("Concat names the block's parameters and buffers, describes it, and checks its shape",
          "[nn][concat]") {
  auto model = small_unet<mpx::bf16_mixed>();
  std::vector<std::string> parameters, buffers;
  model.layer<2>().for_each_parameter([&](std::string_view name, auto&) { parameters.emplace_back(name); });
  model.layer<2>().for_each_buffer([&](std::string_view name, auto&) { buffers.emplace_back(name); });
  CHECK(parameters ==
        std::vector<std::string>{"block.layers.1.weight", "block.layers.2.weight", "block.layers.2.bias"});
  CHECK(buffers == std::vector<std::string>{"block.layers.2.running_mean", "block.layers.2.running_var"});
  parameters.clear();
  model.for_each_parameter([&](std::string_view name, auto&) { parameters.emplace_back(name); });
  CHECK(parameters ==
        std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.2.block.layers.1.weight",
                                 "layers.2.block.layers.2.weight", "layers.2.block.layers.2.bias",
                                 "layers.3.weight", "layers.3.bias"});
  CHECK_THAT(mpx::io::model_json(model),
             Catch::Contains(R"({"kind":"Concat","precision":"bf16_mixed","block":[{"kind":"Sequential",)"
                             R"("precision":"bf16_mixed","layers":[{"kind":"MaxPool2d")"));

  // Inner layers are labelled by path; a shape error inside the block names the inner layer.
  Tensor<mpx::compute_t<mpx::bf16_mixed>> wrong_channels(Shape{1, 4, 4, 3});
  CHECK_THROWS_MATCHES(model.layer<2>().forward(wrong_channels), mpx::shape_error,
                       mpx::test::MessageContains({"layers.2.block.layers.1 (Conv2d)"}));

  // forget_input reaches the block: a backward then has nothing to read.
  auto& level = model.layer<2>();
  const Tensor<mpx::compute_t<mpx::bf16_mixed>> x4(Shape{2, 4, 4, 4});
  const auto& y10 = level.forward(x4);
  level.forget_input();
  CHECK_THROWS_MATCHES(
      level.backward(y10), mpx::error,
      mpx::test::MessageContains({"layers.2.block.layers.", "backward called before forward"}));

  // A block that halves the image: the leading dimensions differ, named with the layer.
  using L = mpx::nn::layers<mpx::fp32>;
  mpx::nn::Concat mismatch{mpx::nn::Sequential{L::conv2d(4, 4, 3, {.stride = 2, .padding = 1})}};
  mismatch.set_label("layers.2 (Concat)");
  const Tensor<float> x(Shape{1, 6, 6, 4});
  CHECK_THROWS_MATCHES(
      mismatch.forward(x), mpx::shape_error,
      mpx::test::MessageContains({"layers.2 (Concat): the block maps [1, 6, 6, 4] to [1, 3, 3, 4]; "
                                  "concatenating along the channels (the last dimension)"}));
  CHECK_THROWS_MATCHES(mismatch.backward(Tensor<float>(Shape{1, 6, 6, 8})), mpx::error,
                       mpx::test::MessageContains({"layers.2 (Concat): backward called before forward"}));

  // The backend's operations check their shapes too.
  Tensor<float> a(Shape{2, 3, 4}), b(Shape{2, 4, 1}), y(Shape{2, 3, 5});
  CHECK_THROWS_MATCHES(
      mpx::Backend<mpx::Host>::concat_channels(a, b, y), mpx::shape_error,
      mpx::test::MessageContains({"mpx::cpu::concat_channels: cannot concatenate [2, 3, 4] and "
                                  "[2, 4, 1] along the channels"}));
}

TEST_CASE("A small UNet trains through the Trainer, saves and loads, and resumes bit-identically",
          "[nn][concat][checkpoint]") {
  using P = mpx::bf16_mixed;
  const mpx::test::TempDir dir("concat_unet");
  const auto run = [](auto& trainer, std::uint32_t from, std::uint32_t steps) {
    double last = 0;
    for (std::uint32_t step = from; step < from + steps; ++step) {
      const Batch b = make_batch(8, step);
      const auto result = trainer.step(b.images, b.targets);
      REQUIRE(result.loss_finite);
      last = result.loss;
    }
    return last;
  };
  auto straight_model = small_unet<P>();
  straight_model.initialize(5);
  auto straight_loss = mpx::nn::layers<P>::mse_loss();
  mpx::optim::AdamW straight_optimizer(straight_model, {.lr = 1e-2});
  mpx::Trainer straight(straight_model, straight_loss, straight_optimizer);
  const double first = run(straight, 0, 1);
  const double last = run(straight, 1, 9);
  CHECK(last < first);
  {
    auto model = small_unet<P>();
    model.initialize(5);
    auto loss = mpx::nn::layers<P>::mse_loss();
    mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
    mpx::Trainer trainer(model, loss, optimizer);
    run(trainer, 0, 6);
    mpx::io::save_checkpoint(dir / "unet.safetensors", trainer);
  }
  auto model = small_unet<P>();
  model.initialize(77);  // other weights and running statistics: all must come from the file
  auto loss = mpx::nn::layers<P>::mse_loss();
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  mpx::Trainer trainer(model, loss, optimizer);
  (void)mpx::io::load_checkpoint(dir / "unet.safetensors", trainer);
  run(trainer, 6, 4);
  const std::vector<unsigned char> expected = mpx::test::weight_and_buffer_bytes(straight_model);
  REQUIRE(mpx::test::weight_and_buffer_bytes(model) == expected);
  // The running statistics inside the Concat moved, so the comparison covered them.
  CHECK(model.layer<2>().block().layer<2>().running_var()[0] != 1.0f);

  // save_weights / load_weights: the same state and, in evaluation mode, the same outputs.
  mpx::io::save_weights(straight_model, dir / "unet_weights.safetensors");
  auto loaded = small_unet<P>();
  loaded.initialize(99);
  (void)mpx::io::load_weights(loaded, dir / "unet_weights.safetensors");
  CHECK(mpx::test::weight_and_buffer_bytes(loaded) == expected);
  const mpx::nn::EvaluationMode evaluating(straight_model);
  const mpx::nn::EvaluationMode evaluating_loaded(loaded);
  const Batch b = make_batch(4, 100);
  CHECK_FALSE(loaded.layer<2>().block().layer<2>().training());  // the mode reached the block
  CHECK(same_bits(straight_model.forward(b.images), loaded.forward(b.images)));
}

}  // namespace MPX_UNITY_ID
}  // namespace
