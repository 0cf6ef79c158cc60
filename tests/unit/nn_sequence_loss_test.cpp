// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// SoftmaxCrossEntropy over sequences: [batch, sequence, vocabulary] logits equal the same rows as a
// matrix, ignore_index rows add nothing (loss and gradient equal to those of the kept rows alone,
// ignored rows' gradient zero, PyTorch's mean over the kept rows, 0 when none is kept), the fp64
// gradient against finite differences with ignored rows, the training step's form against
// forward_backward, a Trainer on token targets, and the argument checks.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "mpx/nn/layers.hpp"
#include "mpx/nn/loss.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/optim/sgd.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/train/loss_seed.hpp"
#include "mpx/train/trainer.hpp"

#include "../support/gradient_check.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace nn = mpx::nn;
using mpx::Shape;
using mpx::Tensor;
using mpx::test::uniform_tensor;

template <class T>
bool same_bits(const Tensor<T>& a, const Tensor<T>& b) {
  if (!(a.shape() == b.shape())) return false;
  return std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size_bytes())) == 0;
}

Tensor<std::int32_t> random_labels(const Shape& shape, std::int64_t classes, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int32_t> label(0, static_cast<std::int32_t>(classes - 1));
  Tensor<std::int32_t> labels(shape);
  for (auto& l : labels.values()) l = label(rng);
  return labels;
}

// The rows of `logits` (as [rows, classes]) whose label is not `ignore`, and their labels.
template <class T>
std::pair<Tensor<T>, Tensor<std::int32_t>> kept_rows(const Tensor<T>& logits,
                                                     const Tensor<std::int32_t>& labels,
                                                     std::int32_t ignore) {
  const std::int64_t classes = logits.shape().cols();
  std::int64_t kept = 0;
  for (const auto l : labels.values()) kept += l != ignore ? 1 : 0;
  Tensor<T> rows(Shape{kept, classes});
  Tensor<std::int32_t> row_labels(Shape{kept});
  std::int64_t k = 0;
  for (std::int64_t r = 0; r < labels.numel(); ++r) {
    if (labels[r] == ignore) continue;
    for (std::int64_t c = 0; c < classes; ++c) rows[k * classes + c] = logits[r * classes + c];
    row_labels[k++] = labels[r];
  }
  return {std::move(rows), std::move(row_labels)};
}

// PyTorch's cross_entropy(reduction="mean", ignore_index, label_smoothing) in fp64.
double reference_loss(const Tensor<double>& logits, const Tensor<std::int32_t>& labels, float smoothing,
                      std::int32_t ignore) {
  const std::int64_t classes = logits.shape().cols();
  double total = 0;
  std::int64_t kept = 0;
  for (std::int64_t r = 0; r < labels.numel(); ++r) {
    if (labels[r] == ignore) continue;
    ++kept;
    const double* z = logits.data() + r * classes;
    double max = z[0];
    for (std::int64_t c = 1; c < classes; ++c) max = std::max(max, z[c]);
    double sum = 0;
    for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(z[c] - max);
    const double lse = max + std::log(sum);
    for (std::int64_t c = 0; c < classes; ++c) {
      const double target =
          (c == labels[r] ? 1.0 - smoothing : 0.0) + smoothing / static_cast<double>(classes);
      total -= target * (z[c] - lse);
    }
  }
  return total / static_cast<double>(kept);
}

}  // namespace

TEST_CASE("SoftmaxCrossEntropy on [batch, sequence, vocabulary] equals the same rows as a matrix",
          "[nn][loss][sequence]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(1);
  Tensor<T> logits3 = uniform_tensor<T>(Shape{3, 7, 11}, rng, -4.0, 4.0);
  Tensor<std::int32_t> labels2 = random_labels(Shape{3, 7}, 11, rng);
  labels2[4] = -100;
  Tensor<T> logits2 = logits3.clone();
  logits2.reshape(Shape{21, 11});
  Tensor<std::int32_t> labels1 = labels2.clone();
  labels1.reshape(Shape{21});

  nn::SoftmaxCrossEntropy<P> loss({.label_smoothing = 0.1f});
  const float value3 = loss.forward_backward(logits3, labels2, 256.0f);
  Tensor<T> gradient3 = loss.gradient().clone();
  REQUIRE(gradient3.shape() == Shape{3, 7, 11});
  const float value2 = loss.forward_backward(logits2, labels1, 256.0f);
  CHECK(value3 == value2);
  gradient3.reshape(Shape{21, 11});
  CHECK(same_bits(gradient3, loss.gradient()));
  // The labels' own shape does not matter, only their count.
  CHECK(loss.forward(logits3, labels1) == value2);
  CHECK(loss.forward(logits2, labels2) == value2);
}

TEST_CASE(
    "SoftmaxCrossEntropy: ignored rows add no loss, get a zero gradient and leave the mean over the rest",
    "[nn][loss][sequence]") {
  using P = mpx::fp32;
  std::mt19937_64 rng(2);
  for (const std::int32_t ignore : {mpx::default_ignore_index, std::int32_t{0}, std::int32_t{4}}) {
    for (const float smoothing : {0.0f, 0.2f}) {
      CAPTURE(ignore, smoothing);
      const Tensor<float> logits = uniform_tensor<float>(Shape{2, 9, 5}, rng, -3.0, 3.0);
      Tensor<std::int32_t> labels = random_labels(Shape{2, 9}, 5, rng);
      for (const std::int64_t r : {0, 3, 4, 10, 17}) labels[r] = ignore;
      labels[5] = ignore == 0 ? 1 : 0;  // at least one kept row even when ignore is a class id
      nn::SoftmaxCrossEntropy<P> loss({.label_smoothing = smoothing, .ignore_index = ignore});
      const float value = loss.forward_backward(logits, labels, 3.0f);
      const Tensor<float> gradient = loss.gradient().clone();

      const auto [rows, row_labels] = kept_rows(logits, labels, ignore);
      nn::SoftmaxCrossEntropy<P> kept_loss({.label_smoothing = smoothing, .ignore_index = ignore});
      CHECK(kept_loss.forward_backward(rows, row_labels, 3.0f) == value);  // the same sums, bit for bit
      std::int64_t k = 0;
      for (std::int64_t r = 0; r < labels.numel(); ++r) {
        for (std::int64_t c = 0; c < 5; ++c) {
          const float g = gradient[r * 5 + c];
          if (labels[r] == ignore) {
            CHECK(g == 0.0f);
            CHECK_FALSE(std::signbit(g));
          } else {
            CHECK(g == kept_loss.gradient()[k * 5 + c]);
          }
        }
        if (labels[r] != ignore) ++k;
      }
    }
  }
}

TEST_CASE("SoftmaxCrossEntropy with every row ignored: loss 0 and a zero gradient; a Trainer step proceeds",
          "[nn][loss][sequence]") {
  using P = mpx::fp32;
  using L = nn::layers<P>;
  std::mt19937_64 rng(3);
  const Tensor<float> logits = uniform_tensor<float>(Shape{2, 3, 4}, rng, -3.0, 3.0);
  Tensor<std::int32_t> labels(Shape{2, 3});
  for (auto& l : labels.values()) l = -100;
  auto loss = L::softmax_cross_entropy();
  CHECK(loss.forward_backward(logits, labels, 1.0f) == 0.0f);
  for (const float g : loss.gradient().values()) CHECK(g == 0.0f);
  // No rows at all: the same convention.
  const Tensor<float> empty(Shape{0, 4});
  const Tensor<std::int32_t> no_labels(Shape{0});
  CHECK(loss.forward(empty, no_labels) == 0.0f);

  nn::Sequential model{L::linear(4, 4)};
  model.initialize(1);
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::Trainer trainer(model, loss, optimizer);
  Tensor<float> x = uniform_tensor<float>(Shape{2, 3, 4}, rng, -1.0, 1.0);
  const auto result = trainer.step(x, labels);
  CHECK(result.loss == 0.0);
  CHECK(result.stepped);
}

TEST_CASE("SoftmaxCrossEntropy with ignored rows: fp64 gradient matches finite differences",
          "[nn][loss][gradient]") {
  using P64 = mpx::fp64;
  std::mt19937_64 rng(4);
  for (const float smoothing : {0.0f, 0.1f}) {
    for (const std::int64_t sequence : {1, 7}) {
      CAPTURE(smoothing, sequence);
      Tensor<double> logits = uniform_tensor(Shape{2, sequence, 6}, rng, -3.0, 3.0);
      Tensor<std::int32_t> labels = random_labels(Shape{2, sequence}, 6, rng);
      labels[1] = -100;  // row 1 ignored; row 0 always kept
      nn::SoftmaxCrossEntropy<P64> loss({.label_smoothing = smoothing});
      const double value = loss.forward_backward(logits, labels, 1.0f);
      CHECK(value == Approx(reference_loss(logits, labels, smoothing, -100)).epsilon(1e-12));
      const Tensor<double> gradient = loss.gradient().clone();
      const double terms = 3.0 + std::log(6.0) + 3.0;
      mpx::test::check_against_differences("dlogits", logits, gradient, terms,
                                           [&] { return static_cast<double>(loss.forward(logits, labels)); });
    }
  }
}

TEST_CASE("SoftmaxCrossEntropy: the training step's form agrees with forward_backward on sequences",
          "[nn][loss][sequence]") {
  using P = mpx::fp16_mixed;
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(5);
  const Tensor<T> logits = uniform_tensor<T>(Shape{4, 5, 13}, rng, -5.0, 5.0);
  Tensor<std::int32_t> labels = random_labels(Shape{4, 5}, 13, rng);
  labels[2] = labels[7] = labels[19] = -100;
  nn::SoftmaxCrossEntropy<P> loss({.label_smoothing = 0.05f});
  const float value = loss.forward_backward(logits, labels, 32768.0f);
  const Tensor<T> gradient = loss.gradient().clone();

  const float scale = 65536.0f;
  const mpx::LossSeed seed{&scale, 2.0f};  // 65536 / 2 micro-batches
  double loss_sum = 0.5;
  loss.accumulate_forward_backward(logits, labels, seed, &loss_sum);
  CHECK(loss_sum == 0.5 + static_cast<double>(value));
  CHECK(same_bits(loss.gradient(), gradient));
}

TEST_CASE("A Trainer on [batch, sequence, vocabulary] logits against [batch, sequence] targets",
          "[nn][loss][trainer]") {
  using P = mpx::bf16_mixed;
  using L = nn::layers<P>;
  auto make = [] {
    nn::Sequential model{L::linear(6, 16, nn::gelu), L::linear(16, 9)};
    model.initialize(5);
    return model;
  };
  std::mt19937_64 rng(6);
  const Tensor<float> x_float = uniform_tensor<float>(Shape{3, 4, 6}, rng, -1.0, 1.0);
  Tensor<std::int32_t> targets = random_labels(Shape{3, 4}, 9, rng);
  targets[0] = targets[5] = -100;

  // The step's loss is the loss of the model's output before the step.
  auto reference = make();
  Tensor<mpx::compute_t<P>> x(x_float.shape());
  mpx::round_into<mpx::BFloat16>(x_float, x);
  auto loss = L::softmax_cross_entropy();
  const float before = loss.forward(reference.forward(x), targets);

  auto model = make();
  mpx::optim::SGD optimizer(model, {.lr = 0.5});
  mpx::Trainer trainer(model, loss, optimizer);
  const auto first = trainer.step(x_float, targets);
  CHECK(first.loss == static_cast<double>(before));
  double last = first.loss;
  for (int i = 0; i < 100; ++i) last = trainer.step(x_float, targets).loss;
  CHECK(last < 0.5 * first.loss);
}

TEST_CASE("SoftmaxCrossEntropy names bad labels, label counts and ranks", "[nn][loss][sequence]") {
  using P = mpx::fp32;
  nn::SoftmaxCrossEntropy<P> loss;
  const Tensor<float> logits(Shape{2, 3, 5});
  Tensor<std::int32_t> labels(Shape{2, 3});
  labels[4] = 5;
  CHECK_THROWS_WITH(
      loss.forward(logits, labels),
      Catch::Contains("mpx::cpu::softmax_cross_entropy: label 5 at row 4 is outside [0, 5) and is "
                      "not the ignore index -100"));
  labels[4] = -1;
  CHECK_THROWS_AS(loss.forward(logits, labels), mpx::invalid_argument);
  const Tensor<std::int32_t> five(Shape{5});
  CHECK_THROWS_WITH(loss.forward(logits, five), Catch::Contains("5 labels for logits of shape"));
  const Tensor<float> flat(Shape{5});
  const Tensor<std::int32_t> one(Shape{1});
  CHECK_THROWS_AS(loss.forward(flat, one), mpx::shape_error);
}

}  // namespace MPX_UNITY_ID
}  // namespace
