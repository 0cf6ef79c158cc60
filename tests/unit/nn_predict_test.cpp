// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// What a classifier predicts and how it is judged: the argmax rule (first maximum, first NaN, as
// torch.argmax) in cpu::argmax, nn::predict and count_correct; experiment::evaluate with and without
// a loss.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/experiment/classification.hpp>
#include <mpx/mpx.hpp>

#include "../support/labels.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Tensor;
using mpx::test::label_tensor;

constexpr float qnan = std::numeric_limits<float>::quiet_NaN();
constexpr float inf = std::numeric_limits<float>::infinity();

template <class T>
Tensor<T> logits_of(std::int64_t rows, std::int64_t classes, const std::vector<float>& values) {
  Tensor<T> logits(Shape{rows, classes});
  for (std::int64_t i = 0; i < logits.numel(); ++i)
    logits[i] = static_cast<T>(values[static_cast<std::size_t>(i)]);
  return logits;
}

std::vector<std::int32_t> values_of(const Tensor<std::int32_t>& tensor) {
  return {tensor.values().begin(), tensor.values().end()};
}

}  // namespace

TEMPLATE_TEST_CASE("predict takes the first largest logit, or the first NaN, as torch.argmax",
                   "[nn][predict]", double, float, Eigen::half, Eigen::bfloat16) {
  const auto logits = logits_of<TestType>(6, 4,
                                          {
                                              0,    3,    1,    2,     // plain maximum
                                              2,    1,    2,    0,     // tie: the first wins
                                              -1,   qnan, 5,    qnan,  // NaN beats every number: first NaN
                                              qnan, 9,    9,    9,     // NaN in column 0
                                              -inf, -inf, -inf, -inf,  // all equal: column 0
                                              1,    inf,  inf,  2,     // inf ties like any value
                                          });
  const Tensor<std::int32_t> classes = mpx::nn::predict(logits);
  CHECK(classes.shape() == Shape{6});
  CHECK(values_of(classes) == std::vector<std::int32_t>{1, 0, 1, 0, 0, 1});

  Tensor<std::int32_t> indices(Shape{6});
  mpx::cpu::argmax(logits, indices);
  CHECK(values_of(indices) == values_of(classes));

  // count_correct counts the rows predict gets right.
  CHECK(mpx::nn::count_correct(logits, label_tensor({1, 0, 1, 0, 0, 1})) == 6);
  CHECK(mpx::nn::count_correct(logits, label_tensor({1, 2, 2, 3, 0, 2})) == 2);
}

TEST_CASE("predict compares in the accumulate type: doubles a float cannot tell apart are told apart",
          "[nn][predict]") {
  const auto logits = logits_of<double>(1, 2, {0, 0});
  auto close = logits.clone();
  close[0] = 1.0;
  close[1] = 1.0 + 1e-12;  // the same float, a larger double
  CHECK(mpx::nn::predict(close)[0] == 1);
}

TEST_CASE("predict and count_correct reject logits that are not [batch, classes >= 1] and miscounted labels",
          "[nn][predict]") {
  CHECK_THROWS_AS(mpx::nn::predict(Tensor<float>(Shape{4})), mpx::shape_error);
  CHECK_THROWS_WITH(mpx::nn::predict(Tensor<float>(Shape{4, 0})),
                    Catch::Contains("mpx::nn::predict") && Catch::Contains("[4, 0]"));
  const Tensor<float> logits(Shape{3, 2});
  CHECK_THROWS_WITH(mpx::nn::count_correct(logits, label_tensor({0, 1})),
                    Catch::Contains("2 labels for logits of shape [3, 2]"));
  Tensor<std::int32_t> wrong(Shape{2});
  CHECK_THROWS_AS(mpx::cpu::argmax(logits, wrong), mpx::shape_error);
  // An empty batch predicts nothing and counts nothing.
  CHECK(mpx::nn::predict(Tensor<float>(Shape{0, 3})).numel() == 0);
  CHECK(mpx::nn::count_correct(Tensor<float>(Shape{0, 3}), Tensor<std::int32_t>(Shape{0})) == 0);
}

namespace {

mpx::data::Dataset two_blobs(std::int64_t samples) {
  std::mt19937 random(5);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  Tensor<float> images(Shape{samples, 2});
  std::vector<std::int32_t> labels(static_cast<std::size_t>(samples));
  for (std::int64_t row = 0; row < samples; ++row) {
    const auto label = static_cast<std::int32_t>(row % 2);
    labels[static_cast<std::size_t>(row)] = label;
    images[row * 2] = (label == 0 ? -1.0f : 1.0f) + normal(random);
    images[row * 2 + 1] = normal(random);
  }
  return mpx::data::Dataset(std::move(images), std::move(labels), 2);
}

}  // namespace

TEST_CASE("evaluate without a loss gives the accuracy evaluate with one gives, and a NaN loss",
          "[experiment][predict]") {
  using L = mpx::nn::layers<mpx::fp32>;
  const mpx::data::Dataset data = two_blobs(203);  // 203 = 2 batches of 100 and one of 3
  mpx::nn::Sequential model{L::linear(2, 2)};
  model.initialize(1);
  // A hand-set separating classifier: class 1 when x0 > 0.
  model.for_each_parameter([](std::string_view name, auto& p) {
    auto& w = p.master();
    w.set_zero();
    if (name == "layers.0.weight") {
      w[0] = -1.0f;  // row 0 (class 0): -x0
      w[2] = 1.0f;   // row 1 (class 1): +x0
    }
    p.refresh_compute_copy();
  });
  auto loss = L::softmax_cross_entropy();
  const auto with_loss = mpx::experiment::evaluate(model, loss, data, 100);
  const auto accuracy_only = mpx::experiment::evaluate(model, data, 100);
  CHECK(with_loss.samples == 203);
  CHECK(accuracy_only.samples == 203);
  CHECK(accuracy_only.accuracy == with_loss.accuracy);
  CHECK(with_loss.accuracy > 0.95);
  CHECK(std::isfinite(with_loss.loss));
  CHECK(std::isnan(accuracy_only.loss));
  // The model forgot the evaluation's batches: a backward now throws instead of reading freed memory.
  Tensor<float> dy(Shape{3, 2});
  CHECK_THROWS_AS(model.backward(dy), mpx::error);
}

}  // namespace MPX_UNITY_ID
}  // namespace
