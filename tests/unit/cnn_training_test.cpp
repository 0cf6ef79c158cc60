// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A small convolutional network through the Trainer: it learns a task only a convolution's spatial
// view solves quickly, in fp32, bf16 and fp16 (with loss scaling), and resuming it from a checkpoint
// is bit-identical to training straight through, BatchNorm's running statistics included.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/model_state.hpp"
#include "../support/temp_dir.hpp"
#include "mpx/mpx.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

// Images [batch, 8, 8, 1]: class 0 has a bright horizontal bar, class 1 a vertical one, at a place
// and brightness that vary with the sample; the rest is low noise from a hash.
struct Batch {
  mpx::Tensor<float> images;
  mpx::Tensor<std::int32_t> labels;
};

Batch make_batch(std::int64_t batch, std::uint32_t step) {
  Batch b{mpx::Tensor<float>(mpx::Shape{batch, 8, 8, 1}), mpx::Tensor<std::int32_t>(mpx::Shape{batch})};
  for (std::int64_t s = 0; s < batch; ++s) {
    const std::uint32_t h = (static_cast<std::uint32_t>(s) * 2654435761u) ^ (step * 40503u + 17u);
    const int label = static_cast<int>((h >> 5) & 1u);
    const int where = static_cast<int>((h >> 9) % 8u);
    const float level = 0.6f + 0.4f * static_cast<float>((h >> 13) % 16u) / 16.0f;
    b.labels[s] = label;
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x) {
        const std::uint32_t noise = ((h ^ static_cast<std::uint32_t>(y * 8 + x)) * 2246822519u) >> 24;
        const bool on = label == 0 ? y == where : x == where;
        b.images[(s * 8 + y) * 8 + x] = (on ? level : 0.0f) + 0.1f * static_cast<float>(noise) / 255.0f;
      }
  }
  return b;
}

template <class P>
auto small_cnn() {
  using L = mpx::nn::layers<P>;
  return mpx::nn::Sequential{L::conv2d(1, 8, 3, {.padding = 1, .bias = false}),
                             L::batch_norm2d(8),
                             L::relu(),
                             mpx::nn::Residual{mpx::nn::Sequential{
                                 L::conv2d(8, 8, 3, {.padding = 1, .bias = false}), L::batch_norm2d(8)}},
                             L::relu(),
                             L::max_pool2d(2),
                             L::global_avg_pool2d(),
                             L::linear(8, 2)};
}

template <class P>
void check_learns() {
  INFO(P::name);
  auto model = small_cnn<P>();
  model.initialize(3);
  auto loss = mpx::nn::layers<P>::softmax_cross_entropy();
  mpx::optim::SGD optimizer(model, {.lr = 0.1, .momentum = 0.9});
  mpx::Trainer trainer(model, loss, optimizer);
  double first = 0, last = 0;
  for (std::uint32_t step = 0; step < 60; ++step) {
    Batch b = make_batch(32, step);
    const auto result = trainer.step(b.images, b.labels);
    REQUIRE(result.loss_finite);
    if (step == 0) first = result.loss;
    last = result.loss;
  }
  CHECK(first > 0.5);
  CHECK(last < 0.25 * first);
}

}  // namespace

TEST_CASE("A small CNN learns through the Trainer in fp32, bf16 and fp16", "[nn][cnn][training]") {
  check_learns<mpx::fp32>();
  check_learns<mpx::bf16_mixed>();
  check_learns<mpx::fp16_mixed>();
}

TEST_CASE("Resuming a CNN from a checkpoint is bit-identical, running statistics included",
          "[nn][cnn][checkpoint]") {
  using P = mpx::bf16_mixed;
  const mpx::test::TempDir dir("cnn_resume");
  const auto path = dir / "cnn.safetensors";
  const auto run = [](auto& trainer, std::uint32_t from, std::uint32_t steps) {
    for (std::uint32_t step = from; step < from + steps; ++step) {
      Batch b = make_batch(16, step);
      (void)trainer.step(b.images, b.labels);
    }
  };
  auto straight_model = small_cnn<P>();
  straight_model.initialize(5);
  auto straight_loss = mpx::nn::layers<P>::softmax_cross_entropy();
  mpx::optim::SGD straight_optimizer(straight_model, {.lr = 0.05, .momentum = 0.9});
  mpx::Trainer straight(straight_model, straight_loss, straight_optimizer);
  run(straight, 0, 10);
  {
    auto model = small_cnn<P>();
    model.initialize(5);
    auto loss = mpx::nn::layers<P>::softmax_cross_entropy();
    mpx::optim::SGD optimizer(model, {.lr = 0.05, .momentum = 0.9});
    mpx::Trainer trainer(model, loss, optimizer);
    run(trainer, 0, 6);
    mpx::io::save_checkpoint(path, trainer);
  }
  auto model = small_cnn<P>();
  model.initialize(77);  // other weights and running statistics: all must come from the file
  auto loss = mpx::nn::layers<P>::softmax_cross_entropy();
  mpx::optim::SGD optimizer(model, {.lr = 0.05, .momentum = 0.9});
  mpx::Trainer trainer(model, loss, optimizer);
  (void)mpx::io::load_checkpoint(path, trainer);
  run(trainer, 6, 4);
  const std::vector<unsigned char> expected = mpx::test::weight_and_buffer_bytes(straight_model),
                                   resumed = mpx::test::weight_and_buffer_bytes(model);
  REQUIRE(resumed.size() == expected.size());
  CHECK(std::memcmp(resumed.data(), expected.data(), expected.size()) == 0);
  // The running statistics moved away from their initial 0 and 1, so the comparison covered them.
  CHECK(model.layer<1>().running_var()[0] != 1.0f);
}

}  // namespace MPX_UNITY_ID
}  // namespace
