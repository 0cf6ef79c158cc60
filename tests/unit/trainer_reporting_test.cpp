// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Never silent: non-finite inputs, a diverging loss and a loss scale below 1 are flagged in the
// StepResult and reported through mpx::log, the step is skipped and the training state stays finite.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <mpx/mpx.hpp>

#include "../support/labels.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using Catch::Matchers::Contains;

/// Captures mpx::log messages while alive, then restores the previous sink.
class CapturedLog {
 public:
  CapturedLog()
      : previous_(mpx::set_log_sink([this](mpx::LogLevel level, std::string_view message) {
          messages.emplace_back(level, std::string(message));
        })) {}
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  ~CapturedLog() { mpx::set_log_sink(std::move(previous_)); }

  [[nodiscard]] std::string all() const {
    std::string out;
    for (const auto& [level, message] : messages) {
      out.append(level == mpx::LogLevel::Warning ? "W: " : "I: ").append(message).append("\n");
    }
    return out;
  }

  std::vector<std::pair<mpx::LogLevel, std::string>> messages;

 private:
  mpx::LogSink previous_;
};

constexpr std::int64_t features = 4;

mpx::Tensor<float> inputs(float scale) {
  mpx::Tensor<float> x(mpx::Shape{8, features});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = scale * static_cast<float>((i * 37) % 11 - 5) / 5.0f;
  return x;
}
mpx::Tensor<std::int32_t> labels() {
  return mpx::test::label_tensor({0, 1, 0, 1, 1, 0, 1, 0});
}

template <class Model>
bool masters_finite(Model& model) {
  bool finite = true;
  model.for_each_parameter([&](std::string_view, auto& p) {
    for (const auto v : p.master().values()) finite = finite && std::isfinite(static_cast<double>(v));
  });
  return finite;
}

template <class Model>
std::vector<float> masters(Model& model) {
  std::vector<float> out;
  model.for_each_parameter([&](std::string_view, auto& p) {
    for (const auto v : p.master().values()) out.push_back(static_cast<float>(v));
  });
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("A batch holding inf or NaN is flagged, logged as a warning and skipped",
                   "[train][reporting]", mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed) {
  mpx::nn::Sequential model{mpx::nn::Linear<TestType>(features, 2)};
  model.initialize(1);
  mpx::nn::SoftmaxCrossEntropy<TestType> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::Trainer trainer(model, loss, optimizer);
  const CapturedLog log;
  REQUIRE(trainer.step(inputs(1.0f), labels()).stepped);
  CHECK(log.messages.empty());  // a clean step says nothing

  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
    mpx::Tensor<float> x = inputs(1.0f);
    x[5] = bad;
    const std::vector<float> before = masters(model);
    const mpx::StepResult result = trainer.step(x, labels());
    CHECK_FALSE(result.inputs_finite);
    CHECK_FALSE(result.stepped);
    CHECK(masters(model) == before);
  }
  REQUIRE(log.messages.size() == 2);
  CHECK(log.messages[0].first == mpx::LogLevel::Warning);
  CHECK_THAT(log.messages[0].second, Contains("step 2 skipped: the input batch holds inf or NaN"));
  CHECK_THAT(log.messages[1].second, Contains("step 3 skipped") && Contains("(steps skipped so far: 2)"));
  const mpx::StepResult next = trainer.step(inputs(1.0f), labels());
  CHECK(next.stepped);
  CHECK(next.inputs_finite);
  CHECK(next.loss_finite);
  CHECK(masters_finite(model));
}

TEST_CASE("A diverging loss is flagged and logged, and the weights stay finite", "[train][reporting]") {
  mpx::nn::Sequential model{mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::ReLU>(features, 8),
                            mpx::nn::Linear<mpx::fp32>(8, 2)};
  model.initialize(3);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::SGD optimizer(model, {.lr = 1e30});
  mpx::Trainer trainer(model, loss, optimizer);
  const CapturedLog log;
  int diverged = 0;
  for (int step = 0; step < 6; ++step) {
    const mpx::StepResult result = trainer.step(inputs(1.0f), labels());
    if (!result.loss_finite || !std::isfinite(result.grad_norm)) {
      ++diverged;
      CHECK_FALSE(result.stepped);
    }
    CHECK(masters_finite(model));
  }
  CAPTURE(log.all());
  REQUIRE(diverged > 0);
  CHECK(trainer.scaler().state().steps_skipped == diverged);
  CHECK(log.messages.size() == static_cast<std::size_t>(diverged));
  CHECK_THAT(log.all(), Contains("W: mpx::Trainer: step"));
  CHECK_THAT(log.all(), Contains("(diverging)") || Contains("a gradient is inf or NaN"));
}

TEST_CASE("A loss scale backing off below 1 is flagged and logged once when it gets there",
          "[train][reporting]") {
  mpx::nn::Sequential model{mpx::nn::Linear<mpx::fp16_mixed>(features, 2)};
  model.initialize(1);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp16_mixed> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = {}, .scaler = {.init_scale = 4.0f}});
  const CapturedLog log;
  mpx::Tensor<float> poisoned = inputs(1.0f);
  poisoned[0] = std::numeric_limits<float>::infinity();
  std::vector<bool> below;
  for (int step = 0; step < 4; ++step) below.push_back(trainer.step(poisoned, labels()).scale_below_one);
  // 4 -> 2 -> 1 -> 0.5 -> 0.25
  CHECK(below == std::vector<bool>{false, false, true, true});
  const mpx::StepResult clean = trainer.step(inputs(1.0f), labels());
  CHECK(clean.stepped);
  CHECK(clean.scale_below_one);
  CAPTURE(log.all());
  REQUIRE(log.messages.size() == 4);  // four skipped steps; the clean step below 1 was reported already
  CHECK_THAT(log.messages[2].second, Contains("loss scale now 0.5") && Contains("the loss scale is below 1"));
  CHECK_THAT(log.messages[3].second, Contains("loss scale now 0.25"));
}

TEST_CASE("set_log_sink returns the previous sink and an empty sink restores stderr", "[train][reporting]") {
  std::vector<std::string> first;
  mpx::LogSink original =
      mpx::set_log_sink([&](mpx::LogLevel, std::string_view m) { first.emplace_back(m); });
  mpx::log(mpx::LogLevel::Info, "one");
  mpx::LogSink mine = mpx::set_log_sink({});
  REQUIRE(mine);
  mine(mpx::LogLevel::Info, "two");
  CHECK(first == std::vector<std::string>{"one", "two"});
  mpx::set_log_sink(std::move(original));
}

}  // namespace MPX_UNITY_ID
}  // namespace
