// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The GEMM accumulator models (numeric/accumulation.hpp): hand-computed cases for each rule, the
// truncated model against a second implementation written with integers (operand mantissas shifted
// by exponents) on random E4M3 operands, subnormals included, and the models' errors on long FP8 dot
// products, which show what each is for: fast accumulation loses small products, promotion every 128
// gives them back.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using E4M3 = mpx::Float8E4M3;
using Fast = mpx::HopperFp8FastAccumulation;

// An E4M3 value as the integer rule sees it: mantissa * 2^(exponent - 3), with exponent the
// alignment exponent (the leading bit's; -6, E4M3's smallest normal exponent, for a subnormal, whose
// mantissa is then 1..7).
struct E4M3Value {
  std::int64_t mantissa;  // signed
  int exponent;
  [[nodiscard]] float value() const { return std::ldexp(static_cast<float>(mantissa), exponent - 3); }
};

E4M3Value random_e4m3(std::mt19937& rng, int low_exponent, int high_exponent, bool positive_only = false) {
  std::uniform_int_distribution<int> exponent(low_exponent - 1, high_exponent);
  std::bernoulli_distribution negative(0.5);
  const int e = exponent(rng);
  // One draw in (high - low + 2) is a subnormal: mantissa 1..7 at the smallest exponent.
  const bool subnormal = e < low_exponent;
  std::uniform_int_distribution<int> mantissa(subnormal ? 1 : 8, subnormal ? 7 : 15);
  const std::int64_t m = mantissa(rng);
  return {(!positive_only && negative(rng)) ? -m : m, subnormal ? -6 : e};
}

// The truncated rule again, in integers: the terms in units of 2^(E - FractionalBits), shifted and
// truncated toward zero; the integer sum drops low bits until ResultBits + 1 remain.
template <int FractionalBits, int ResultBits>
float truncated_group_reference(float acc, const std::vector<E4M3Value>& a, const std::vector<E4M3Value>& b) {
  constexpr int none = -100000;
  int acc_exponent = acc == 0.0f ? none : std::max(std::ilogb(acc), -126);
  int largest = acc_exponent;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].mantissa != 0 && b[i].mantissa != 0) largest = std::max(largest, a[i].exponent + b[i].exponent);
  }
  if (largest == none) return 0.0f;
  const int unit = largest - FractionalBits;
  // magnitude * 2^lsb_exponent in units of 2^unit, toward zero
  const auto in_units = [&](std::int64_t magnitude, int lsb_exponent) -> std::int64_t {
    const int shift = lsb_exponent - unit;
    return shift >= 0 ? magnitude << shift : (shift > -63 ? magnitude >> -shift : 0);
  };
  std::int64_t sum = 0;
  if (acc != 0.0f) {
    int exponent = 0;
    const float fraction = std::frexp(std::fabs(acc), &exponent);  // |acc| = fraction * 2^exponent
    const auto units = in_units(static_cast<std::int64_t>(std::ldexp(fraction, 24)), exponent - 24);
    sum += acc < 0 ? -units : units;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::int64_t product = a[i].mantissa * b[i].mantissa;
    const std::int64_t units = in_units(product < 0 ? -product : product, a[i].exponent + b[i].exponent - 6);
    sum += product < 0 ? -units : units;
  }
  std::uint64_t magnitude = sum < 0 ? static_cast<std::uint64_t>(-sum) : static_cast<std::uint64_t>(sum);
  int exponent = unit;
  while (magnitude >= (std::uint64_t{1} << (ResultBits + 1))) {
    magnitude >>= 1;
    ++exponent;
  }
  const float result = std::ldexp(static_cast<float>(magnitude), exponent);
  return sum < 0 ? -result : result;
}

std::vector<float> values(const std::vector<E4M3Value>& operands) {
  std::vector<float> out;
  for (const E4M3Value& x : operands) out.push_back(x.value());
  return out;
}

// A dot product of `products` copies of `a` * 1.
float accumulate_copies(float acc, float a, std::size_t products) {
  const std::vector<float> as(products, a), ones(products, 1.0f);
  return Fast::accumulate<E4M3, E4M3>(acc, as, ones);
}

}  // namespace

TEST_CASE("Fp32Accumulation rounds to nearest after every product", "[accumulation]") {
  const std::vector<float> a = {0x1p-24f, 0x1p-24f}, ones = {1.0f, 1.0f};
  // 1 + 2^-24 is a tie that rounds to 1, twice; the exact sum 1 + 2^-23 is representable.
  CHECK(mpx::Fp32Accumulation::accumulate<mpx::Float, mpx::Float>(1.0f, a, ones) == 1.0f);
  CHECK(mpx::dot<mpx::Fp32Accumulation>({}, {}) == 0.0f);
}

TEST_CASE("TruncatedAccumulation drops what lies below its fractional bits, toward zero", "[accumulation]") {
  SECTION("products under 2^-13 of the accumulator are lost, whatever their number") {
    CHECK(accumulate_copies(1.0f, 0x1p-14f, 1000) == 1.0f);
    const std::vector<float> small(1000, 0x1p-14f), ones(1000, 1.0f);
    CHECK(mpx::dot<mpx::Fp32Accumulation>(small, ones, 1.0f) == 1.0f + 1000 * 0x1p-14f);
  }
  SECTION("truncation is toward zero, for negative products too") {
    CHECK(accumulate_copies(1.0f, -0x1p-14f, 1) == 1.0f);
    CHECK(accumulate_copies(1.0f, 3 * 0x1p-14f, 1) == 1.0f + 0x1p-13f);
    CHECK(accumulate_copies(-1.0f, -3 * 0x1p-14f, 1) == -1.0f - 0x1p-13f);
  }
  SECTION("a product aligns by its operands' exponents, so its significand may reach 4") {
    // 1.5 * 1.5 = 2.25 has exponent 0 + 0: the quantum is 2^-13, and 2^-13 survives beside it. Aligned
    // by its value's own exponent (1), the quantum would be 2^-12 and 2^-13 would be lost.
    const std::vector<float> a = {1.5f, 0x1p-13f}, b = {1.5f, 1.0f};
    CHECK(mpx::dot<mpx::TruncatedAccumulation<13, 32, 23>, E4M3>(a, b) == 2.25f + 0x1p-13f);
  }
  SECTION("a subnormal operand aligns by its format's smallest normal exponent") {
    // 2^-9 is subnormal in E4M3: exponent -6 with significand 1/8, so 2^-9 * 8 aligns at -3 and its one
    // bit lies 3 places below: with 2 fractional bits it is lost. As an fp32 value (exponent -9) it
    // aligns at -6 and is kept.
    const std::vector<float> a = {0x1p-9f}, b = {8.0f};
    CHECK(mpx::dot<mpx::TruncatedAccumulation<2, 32, 23>, E4M3>(a, b) == 0.0f);
    CHECK(mpx::dot<mpx::TruncatedAccumulation<2, 32, 23>, mpx::Float>(a, b) == 0x1p-6f);
  }
  SECTION("each group aligns to its own largest term, the accumulator included") {
    // One group: 1 sets the unit, so 2^-14 is lost. Two groups (Group = 1): the first sum is 2^-14
    // alone, exact; then 2^-14 + 2^-14 with the accumulator the largest keeps both.
    const std::vector<float> big_small = {1.0f, 0x1p-14f}, smalls = {0x1p-14f, 0x1p-14f}, ones = {1.0f, 1.0f};
    CHECK(mpx::dot<Fast, E4M3>(big_small, ones) == 1.0f);
    CHECK(mpx::dot<mpx::TruncatedAccumulation<13, 1, 13>, E4M3>(smalls, ones) == 0x1p-13f);
  }
  SECTION("the accumulator keeps ResultBits fraction bits, truncated") {
    // 32 products of 1 + 2^-3 (exact in E4M3) sum to 36: 100100 in binary, 5 fraction bits. With
    // ResultBits = 3 the accumulator becomes 100100 truncated to 4 significant bits: 32 + 4 = 36;
    // from an accumulator of 2^-2 the exact 36.25 keeps its 2^-2 with 13 result bits, not with 3.
    const std::vector<float> a(32, 1.125f), b(32, 1.0f);
    CHECK(mpx::dot<mpx::TruncatedAccumulation<13, 32, 3>, E4M3>(a, b) == 36.0f);
    CHECK(mpx::dot<mpx::TruncatedAccumulation<13, 32, 3>, E4M3>(a, b, 0x1p-2f) == 36.0f);
    CHECK(mpx::dot<mpx::TruncatedAccumulation<13, 32, 13>, E4M3>(a, b, 0x1p-2f) == 36.25f);
  }
  SECTION("NaN and infinities give the exact sum's fp32 value; a zero sum is +0") {
    constexpr float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> ones = {1.0f, 1.0f};
    CHECK(std::isnan(mpx::dot<Fast>(std::vector<float>{inf, -inf}, ones, 1.0f)));
    CHECK(mpx::dot<Fast>(std::vector<float>{inf, 2.0f}, ones, 1.0f) == inf);
    CHECK(std::isnan(mpx::dot<Fast>(std::vector<float>{1.0f}, std::vector<float>{1.0f},
                                    std::numeric_limits<float>::quiet_NaN())));
    CHECK(!std::signbit(mpx::dot<Fast>(std::vector<float>{-0.0f}, std::vector<float>{1.0f}, -0.0f)));
    CHECK(!std::signbit(mpx::dot<Fast>(std::vector<float>{1.0f, -1.0f}, ones)));
  }
  SECTION("a sum past fp32's range is an infinity") {
    CHECK(mpx::dot<Fast>(std::vector<float>{0x1p127f, 0x1p127f}, std::vector<float>{1.0f, 1.0f}) ==
          std::numeric_limits<float>::infinity());
  }
}

TEST_CASE("TruncatedAccumulation equals an integer implementation of the rule on random E4M3 operands",
          "[accumulation]") {
  std::mt19937 rng(2511);
  for (int trial = 0; trial < 4000; ++trial) {
    const std::size_t size = 1 + static_cast<std::size_t>(trial % 32);
    std::vector<E4M3Value> a, b;
    // Exponents over E4M3's range (and its subnormals), so that alignment drops bits.
    for (std::size_t i = 0; i < size; ++i) {
      a.push_back(random_e4m3(rng, -6, 7));
      b.push_back(random_e4m3(rng, -6, 7));
    }
    const float acc =
        trial % 3 == 0 ? 0.0f : random_e4m3(rng, -6, 7).value() * random_e4m3(rng, -6, 7).value();
    INFO("trial " << trial << ", " << size << " products");
    CHECK(mpx::dot<mpx::TruncatedAccumulation<13, 32, 13>, E4M3>(values(a), values(b), acc) ==
          truncated_group_reference<13, 13>(acc, a, b));
    CHECK(mpx::dot<mpx::TruncatedAccumulation<13, 32, 23>, E4M3>(values(a), values(b), acc) ==
          truncated_group_reference<13, 23>(acc, a, b));
    CHECK(mpx::dot<mpx::TruncatedAccumulation<25, 32, 23>, E4M3>(values(a), values(b), acc) ==
          truncated_group_reference<25, 23>(acc, a, b));
  }
}

TEST_CASE("PromotedAccumulation sums each run of Interval products from zero, then adds it in fp32",
          "[accumulation]") {
  // 1000 products of 2^-14 after a 1: fast accumulation alone keeps none of them; promoted every 128,
  // each run starts from zero, is summed exactly, and lands in fp32 exactly.
  const std::vector<float> small(1000, 0x1p-14f), ones(1000, 1.0f);
  CHECK(mpx::dot<mpx::PromotedAccumulation<>, E4M3>(small, ones, 1.0f) == 1.0f + 1000 * 0x1p-14f);
  std::mt19937 rng(7);
  std::vector<E4M3Value> a_values, b_values;
  for (int i = 0; i < 300; ++i) {
    a_values.push_back(random_e4m3(rng, -6, 2));
    b_values.push_back(random_e4m3(rng, -6, 2));
  }
  const std::vector<float> a = values(a_values), b = values(b_values);
  float expected = 0.5f;
  for (const std::size_t first : {0, 128, 256}) {
    const std::size_t count = std::min<std::size_t>(128, 300 - first);
    expected = expected + Fast::accumulate<E4M3, E4M3>(0.0f, std::span(a).subspan(first, count),
                                                       std::span(b).subspan(first, count));
  }
  CHECK(mpx::dot<mpx::PromotedAccumulation<>, E4M3>(a, b, 0.5f) == expected);
  CHECK(mpx::dot<mpx::PromotedAccumulation<1000, mpx::Fp32Accumulation>, E4M3>(a, b, 0.5f) ==
        mpx::dot<mpx::Fp32Accumulation>(a, b) + 0.5f);
}

TEST_CASE("On long FP8 dot products fast accumulation loses what promotion keeps", "[accumulation]") {
  // Positive products (activations after ReLU times positive weights: no cancellation to hide the
  // error), K = 4096: the relative error of each model against the exact sum, the worst of 20 rows.
  std::mt19937 rng(3);
  double worst_fast = 0, worst_promoted = 0, worst_fp32 = 0;
  for (int row = 0; row < 20; ++row) {
    std::vector<float> a, b;
    for (int i = 0; i < 4096; ++i) {
      a.push_back(random_e4m3(rng, -5, 2, /*positive_only=*/true).value());
      b.push_back(random_e4m3(rng, -5, 2, /*positive_only=*/true).value());
    }
    double exact = 0;  // every product has 8 significant bits and the sum stays far below 2^53 units
    for (std::size_t i = 0; i < a.size(); ++i) exact += static_cast<double>(a[i]) * static_cast<double>(b[i]);
    const auto error = [&](float got) { return std::fabs(static_cast<double>(got) - exact) / exact; };
    worst_fast = std::max(worst_fast, error(mpx::dot<Fast, E4M3>(a, b)));
    worst_promoted = std::max(worst_promoted, error(mpx::dot<mpx::PromotedAccumulation<>, E4M3>(a, b)));
    worst_fp32 = std::max(worst_fp32, error(mpx::dot<mpx::Fp32Accumulation>(a, b)));
  }
  WARN("worst relative error over 20 dot products of 4096 positive FP8 products: fast "
       << worst_fast << ", promoted every 128 " << worst_promoted << ", fp32 " << worst_fp32);
  CHECK(worst_fast > 1e-3);  // measurably worse than fp32 (DeepSeek-V3 reports ~2% at K = 4096)
  CHECK(worst_promoted < worst_fast / 10);  // promotion recovers most of it
  CHECK(worst_fp32 < 1e-5);
}

TEST_CASE("dot refuses operands of different lengths, naming both", "[accumulation]") {
  const std::vector<float> a(3, 1.0f), b(4, 1.0f);
  CHECK_THROWS_WITH(mpx::dot<mpx::Fp32Accumulation>(a, b),
                    Catch::Contains("a has 3 values, b 4") && Catch::Contains("mpx::dot<fp32>"));
  CHECK(mpx::dot<mpx::Fp32Accumulation>(a, a, 0.5f) == 3.5f);
}

}  // namespace MPX_UNITY_ID
}  // namespace
