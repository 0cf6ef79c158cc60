// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// FP8 diagnostics: the counting rule against the encoder itself, and what a layer and a model report.

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/experiment/fp8_records.hpp>
#include <mpx/mpx.hpp>

namespace {
namespace MPX_UNITY_ID {

using mpx::Shape;
using mpx::Tensor;
using Delayed = mpx::fp8_hybrid<mpx::DelayedScaling<4>>;
using Field = mpx::Fp8StatisticsField;

double field(const double* statistics, Field f) {
  return statistics[static_cast<int>(f)];
}

// What casting x * scale into Format does, decided by the encoder: a value saturates when its
// magnitude exceeds the largest finite one, and flushes when it is nonzero and its code is zero.
template <class Format>
std::vector<double> counted_by_encoder(const std::vector<float>& x, float scale) {
  std::vector<double> expected(mpx::fp8_statistics_fields, 0.0);
  for (const float v : x) {
    const float scaled = v * scale;
    const auto code = mpx::Encoded<Format>::template rounded<mpx::Overflow::Saturate>(scaled);
    const float decoded = static_cast<float>(code);
    expected[1] += !std::isnan(v) && std::fabs(scaled) > mpx::numeric_traits<Format>::max_finite;
    expected[2] += v != 0.0f && !std::isnan(v) && decoded == 0.0f;
    if (!std::isnan(v)) expected[3] = std::max(expected[3], double(std::fabs(v)));
  }
  expected[0] = double(x.size());
  return expected;
}

template <class Format>
void check_against_encoder(float scale) {
  // Values around both limits (each side of the saturation and flush thresholds, ties included),
  // specials, and enough random ones for several parallel chunks.
  const float largest = mpx::numeric_traits<Format>::max_finite / scale;
  const float smallest = float(mpx::min_positive_v<Format>) / scale;
  std::vector<float> x = {0.0f,
                          -0.0f,
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::denorm_min()};
  for (const float anchor : {largest, smallest / 2, smallest, 3 * smallest / 4}) {
    float v = anchor;
    for (int i = 0; i < 4; ++i) v = std::nextafter(v, 0.0f);
    for (int i = 0; i < 9; ++i, v = std::nextafter(v, 2 * anchor)) {
      x.push_back(v);
      x.push_back(-v);
    }
  }
  std::mt19937 random(7);
  std::uniform_real_distribution<float> exponent(-24.0f, 12.0f);
  while (x.size() < 150000) x.push_back((random() % 2 ? 1.0f : -1.0f) * std::exp2(exponent(random)));
  Tensor<float> t(Shape{std::int64_t(x.size())});
  std::copy(x.begin(), x.end(), t.data());

  std::vector<double> statistics(mpx::fp8_statistics_fields, 0.0);
  mpx::cpu::accumulate_fp8_statistics<Format>(t, &scale, statistics.data());
  const std::vector<double> expected = counted_by_encoder<Format>(x, scale);
  CHECK(statistics == expected);
  CHECK(expected[1] > 0);
  CHECK(expected[2] > 0);
  // A second cast adds its counts; the amax is a maximum.
  mpx::cpu::accumulate_fp8_statistics<Format>(t, &scale, statistics.data());
  CHECK(field(statistics.data(), Field::Values) == 2 * expected[0]);
  CHECK(field(statistics.data(), Field::Saturated) == 2 * expected[1]);
  CHECK(field(statistics.data(), Field::Flushed) == 2 * expected[2]);
  CHECK(field(statistics.data(), Field::Amax) == expected[3]);
}

TEST_CASE("FP8 statistics count saturated and flushed values as the encoder decides them",
          "[fp8][statistics]") {
  SECTION("E4M3, scale 1") {
    check_against_encoder<mpx::Float8E4M3>(1.0f);
  }
  SECTION("E4M3, scale 2^5 * 1.3") {
    check_against_encoder<mpx::Float8E4M3>(41.6f);
  }
  SECTION("E5M2, scale 2^-3") {
    check_against_encoder<mpx::Float8E5M2>(0.125f);
  }
}

TEST_CASE("An FP8 Linear reports its tensors' amax, scale and saturated and flushed shares",
          "[fp8][statistics]") {
  mpx::nn::Linear<Delayed> layer(4, 3);
  mpx::nn::Sequential model{std::move(layer)};
  CHECK(mpx::nn::take_fp8_statistics(model).empty());  // not collecting: nothing to report
  mpx::nn::collect_fp8_statistics(model);

  // x: one value beyond E4M3's 448, one below half its smallest subnormal (2^-10), at scale 1.
  Tensor<Eigen::bfloat16> x(Shape{2, 4});
  const float xs[] = {1.0f, -500.0f, 0.25f, 0.0f, 0.0004f, 2.0f, -3.0f, 0.5f};
  for (int i = 0; i < 8; ++i) x[i] = Eigen::bfloat16(xs[i]);
  const auto& y = model.forward(x);
  // dy: two of six below half E5M2's smallest subnormal (2^-17), none beyond 57344.
  Tensor<Eigen::bfloat16> dy(y.shape());
  const float dys[] = {1e-6f, 0.5f, -2e-6f, 1.0f, 0.0f, -0.25f};
  for (int i = 0; i < 6; ++i) dy[i] = Eigen::bfloat16(dys[i]);
  model.backward(dy);

  const auto statistics = mpx::nn::take_fp8_statistics(model);
  REQUIRE(statistics.size() == 3);
  const auto& input = statistics[0];
  CHECK(input.tensor == "input");
  CHECK(input.format == "e4m3");
  CHECK(model.layer<0>().label() == "layers.0 (Linear)");
  CHECK(input.layer == "layers.0");
  CHECK(input.values == 8);
  CHECK(input.saturated_share == 1.0 / 8);
  CHECK(input.flushed_share == 1.0 / 8);
  CHECK(input.amax == 500.0);
  CHECK(input.scale == 1.0f);
  const auto& weight = statistics[1];
  CHECK(weight.tensor == "weight");
  CHECK(weight.values == 12);
  CHECK(weight.saturated_share == 0.0);
  float weight_amax = 0.0f;
  for (const float w : model.layer<0>().weight().master().values())
    weight_amax = std::max(weight_amax, std::fabs(w));
  CHECK(weight.amax == weight_amax);
  const auto& gradient = statistics[2];
  CHECK(gradient.tensor == "output_gradient");
  CHECK(gradient.format == "e5m2");
  CHECK(gradient.values == 6);
  CHECK(gradient.flushed_share == 2.0 / 6);
  CHECK(gradient.amax == double(float(Eigen::bfloat16(1.0f))));

  // Taking them restarts the counts; an evaluation forward counts nothing.
  mpx::nn::set_training(model, false);
  (void)model.forward(x);
  const auto again = mpx::nn::take_fp8_statistics(model);
  REQUIRE(again.size() == 3);
  for (const auto& s : again) CHECK((s.values == 0 && s.amax == 0 && s.saturated_share == 0));

  // As records, for the examples' CSV files.
  mpx::nn::set_training(model, true);
  (void)model.forward(x);
  std::vector<mpx::experiment::Fp8Record> records;
  mpx::experiment::append_fp8_records(model, Delayed::name, 7, records);
  REQUIRE(records.size() == 3);
  CHECK(records[0].precision == "fp8_hybrid_delayed");
  CHECK(records[0].step == 7);
  CHECK(records[0].amax == 500.0);
  CHECK(records[2].values == 0);  // no backward since the last take

  mpx::nn::collect_fp8_statistics(model, false);
  CHECK(mpx::nn::take_fp8_statistics(model).empty());
}

}  // namespace MPX_UNITY_ID
}  // namespace
