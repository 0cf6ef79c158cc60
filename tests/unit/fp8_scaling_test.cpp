// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// FP8 scaling arithmetic against Transformer Engine's rules: delayed scaling's history and scale
// (delayed_scaling.cu, amax_and_scale_update_after_reduction) checked step by step against what the
// rule means (the largest of the last `History` amaxes of steps that cast the tensor; the newest for
// most_recent), and current scaling's compute_scale_from_amax case by case.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float not_a_number = std::numeric_limits<float>::quiet_NaN();
constexpr float flt_max = std::numeric_limits<float>::max();

std::uint32_t bits(float x) {
  return std::bit_cast<std::uint32_t>(x);
}

// What delayed scaling means, written without TE's in-place roll: the amaxes of the steps that cast
// the tensor (a 0 amax is a step that did not), the scale from the largest of the last `length`
// (NaNs passed over) or from the newest.
struct DelayedScalingModel {
  std::size_t length;
  mpx::AmaxAlgorithm algorithm;
  float scaled_max;
  std::deque<float> recorded;
  float scale = 1.0f;

  void step(float amax) {
    if (amax == 0.0f) return;  // not cast: nothing changes
    recorded.push_back(amax);
    if (recorded.size() > length) recorded.pop_front();
    float chosen = amax;
    if (algorithm == mpx::AmaxAlgorithm::Max) {
      chosen = 0.0f;
      for (const float a : recorded)
        if (!std::isnan(a) && a > chosen) chosen = a;
    }
    if (std::isfinite(chosen) && chosen > 0.0f) scale = scaled_max / chosen;
    if (std::isinf(scale)) scale = flt_max;
  }
};

}  // namespace

TEST_CASE("Delayed scaling: the history rolls as TE's kernel rolls it", "[fp8][scaling]") {
  // history_len 4, amaxes 1, 2, 3, 0.5, 0.25: entry 0 holds the step's amax and is cleared, the rest
  // keep the last three, oldest first; the amax is the largest of those and the step's.
  std::vector<float> history(4, 0.0f);
  float scale = 1.0f;
  float inverse = 1.0f;
  const float max = mpx::scaled_max<mpx::Float8E4M3>(0);
  const auto step = [&](float amax) {
    history[0] = amax;
    mpx::update_delayed_scale(history.data(), 4, 1, mpx::AmaxAlgorithm::Max, max, scale, inverse);
  };
  step(1.0f);
  CHECK(history == std::vector<float>{0, 0, 0, 1});
  CHECK(scale == 448.0f);
  step(2.0f);
  step(3.0f);
  CHECK(history == std::vector<float>{0, 1, 2, 3});
  step(0.5f);
  CHECK(history == std::vector<float>{0, 2, 3, 0.5f});
  CHECK(scale == 448.0f / 3.0f);
  CHECK(inverse == 1.0f / (448.0f / 3.0f));
  step(0.0f);  // the tensor was not cast: nothing rolls, the scale stays
  CHECK(history == std::vector<float>{0, 2, 3, 0.5f});
  CHECK(scale == 448.0f / 3.0f);
  step(0.25f);
  step(0.25f);
  step(0.25f);  // 3 has left the window of the last four
  CHECK(history == std::vector<float>{0, 0.25f, 0.25f, 0.25f});
  CHECK(scale == 448.0f / 0.5f);
}

TEST_CASE("Delayed scaling: scale from amax, TE's special cases", "[fp8][scaling]") {
  float scale = 7.0f;
  float inverse = 1.0f / 7.0f;
  std::vector<float> history(1);
  const auto update = [&](float amax, float max, mpx::AmaxAlgorithm algorithm = mpx::AmaxAlgorithm::Max) {
    history[0] = amax;
    mpx::update_delayed_scale(history.data(), 1, 1, algorithm, max, scale, inverse);
  };
  update(inf, 448.0f);
  CHECK(scale == 7.0f);  // an infinite amax keeps the previous scale
  update(not_a_number, 448.0f, mpx::AmaxAlgorithm::MostRecent);
  CHECK(scale == 7.0f);  // so does NaN
  update(1e-39f, 448.0f);
  CHECK(scale == flt_max);  // 448 / 1e-39 overflows fp32
  CHECK(inverse == 1.0f / flt_max);
  // The margin divides the format's largest value by 2^margin before the division (TE's order).
  CHECK(mpx::scaled_max<mpx::Float8E4M3>(2) == 112.0f);
  CHECK(mpx::scaled_max<mpx::Float8E5M2>(0) == 57344.0f);
  update(3.0f, mpx::scaled_max<mpx::Float8E5M2>(1));
  CHECK(bits(scale) == bits(28672.0f / 3.0f));
  STATIC_REQUIRE(mpx::DelayedScaling<>::history_length == 1024);
  STATIC_REQUIRE(mpx::DelayedScaling<>::amax_algorithm == mpx::AmaxAlgorithm::Max);
  STATIC_REQUIRE(mpx::DelayedScaling<>::margin == 0);
}

TEST_CASE("Delayed scaling: 20,000 steps of random amaxes give the rule's scales bit for bit",
          "[fp8][scaling]") {
  std::mt19937 random(17);
  std::uniform_real_distribution<float> log2_amax(-140.0f, 20.0f);
  std::uniform_int_distribution<int> kind(0, 99);
  for (const mpx::AmaxAlgorithm algorithm : {mpx::AmaxAlgorithm::Max, mpx::AmaxAlgorithm::MostRecent}) {
    for (const std::size_t length : {std::size_t{1}, std::size_t{2}, std::size_t{16}, std::size_t{1024}}) {
      const float max = mpx::scaled_max<mpx::Float8E4M3>(1);
      DelayedScalingModel model{length, algorithm, max, {}};
      // Two tensors interleaved in one history array (stride 2), as TE keeps a module's tensors.
      std::vector<float> history(2 * length, 0.0f);
      float scale = 1.0f;
      float inverse = 1.0f;
      float other_scale = 1.0f;
      float other_inverse = 1.0f;
      for (int step = 0; step < 20000 / static_cast<int>(length < 16 ? 1 : 4); ++step) {
        const int k = kind(random);
        const float amax = k < 5 ? 0.0f : k < 7 ? inf : k < 9 ? not_a_number : std::exp2(log2_amax(random));
        history[0] = amax;
        history[1] = 1.0f;
        mpx::update_delayed_scale(history.data(), length, 2, algorithm, max, scale, inverse);
        mpx::update_delayed_scale(history.data() + 1, length, 2, algorithm, max, other_scale, other_inverse);
        model.step(amax);
        INFO("history " << length << ", step " << step << ", amax " << amax);
        REQUIRE(bits(scale) == bits(model.scale));
        REQUIRE(bits(inverse) == bits(1.0f / model.scale));
        REQUIRE(other_scale == max);  // the neighbouring tensor is untouched by the first's
      }
    }
  }
}

TEST_CASE("Current scaling: TE's compute_scale_from_amax, case by case", "[fp8][scaling]") {
  CHECK(mpx::current_scale(2.0f, 448.0f, false, 0.0f) == 224.0f);
  CHECK(bits(mpx::current_scale(3.0f, 448.0f, false, 0.0f)) == bits(448.0f / 3.0f));
  CHECK(mpx::current_scale(3.0f, 448.0f, true, 0.0f) == 128.0f);  // 149.3 down to a power of two
  CHECK(mpx::current_scale(0.0f, 448.0f, false, 0.0f) == 1.0f);
  CHECK(mpx::current_scale(inf, 448.0f, false, 0.0f) == 1.0f);
  CHECK(mpx::current_scale(not_a_number, 448.0f, false, 0.0f) == 1.0f);
  CHECK(mpx::current_scale(1e-39f, 448.0f, false, 0.0f) == flt_max);
  CHECK(mpx::current_scale(1e-39f, 448.0f, true, 0.0f) == 0x1p127f);
  CHECK(bits(mpx::current_scale(0.0f, 448.0f, false, 1e-3f)) ==
        bits(448.0f / 1e-3f));  // epsilon stands in for 0
  CHECK(bits(mpx::current_scale(1e-5f, 57344.0f, false, 1e-3f)) == bits(57344.0f / 1e-3f));
  STATIC_REQUIRE(!mpx::CurrentScaling<>::power_of_two_scales && mpx::CurrentScaling<>::amax_epsilon == 0.0f);
  STATIC_REQUIRE(mpx::CurrentScaling<true, 1e-12f>::amax_epsilon == 1e-12f);
}

}  // namespace MPX_UNITY_ID
}  // namespace
