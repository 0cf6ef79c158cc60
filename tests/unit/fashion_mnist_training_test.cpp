// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The real job in miniature: the Fashion-MNIST MLP of examples/fashion_mnist.cpp learns in every
// precision within one short epoch, and the precisions agree with each other.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>

#include <mpx/experiment/classification.hpp>
#include <mpx/experiment/models.hpp>
#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

// One epoch over the first 20,000 training images with the example's recipe; returns the test
// accuracy after checking the run itself.
template <class P>
double train_one_epoch(const mpx::data::FashionMnist& data) {
  const mpx::data::Dataset train = data.train.subset(0, 20000);
  auto model = mpx::experiment::mlp3<P>(784, 512, 256, 10);
  model.initialize(42);
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 2e-3, .weight_decay = 1e-4});
  mpx::Trainer trainer(model, loss, optimizer);
  mpx::data::Batcher batcher(train, {.batch_size = 128, .seed = 7});

  // The example's schedule: cosine decay of the learning rate over the run.
  const auto epoch = mpx::experiment::train_epoch(
      trainer, batcher, 0, [&](std::int64_t step, std::int64_t steps, const mpx::StepResult&) {
        optimizer.set_lr(2e-3 * 0.5 * (1.0 + std::cos(std::numbers::pi * double(step + 1) / double(steps))) +
                         1e-7);
      });
  const auto test = mpx::experiment::evaluate(model, loss, data.test);
  INFO(P::name << ": train loss " << epoch.loss << ", test accuracy " << test.accuracy);
  CHECK(epoch.steps == 157);
  CHECK(epoch.skipped_steps == 0);
  CHECK(test.samples == 10000);
  CHECK(test.accuracy >= 0.80);
  return test.accuracy;
}

}  // namespace

TEST_CASE("the Fashion-MNIST MLP reaches 80% test accuracy in one epoch on 20,000 images in every precision",
          "[training][fashion_mnist]") {
  const auto data = mpx::data::load_fashion_mnist();
  const double fp32 = train_one_epoch<mpx::fp32>(data);
  // Reduced precision changes the numbers, not what is learned: within a point of fp32.
  CHECK(std::abs(train_one_epoch<mpx::tf32>(data) - fp32) <= 0.01);
  CHECK(std::abs(train_one_epoch<mpx::fp16_mixed>(data) - fp32) <= 0.01);
  CHECK(std::abs(train_one_epoch<mpx::bf16_mixed>(data) - fp32) <= 0.01);
}

}  // namespace MPX_UNITY_ID
}  // namespace
