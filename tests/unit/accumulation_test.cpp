// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The GEMM accumulator models (numeric/accumulation.hpp): hand-computed cases for each rule, the
// truncated model against a second implementation written with integers (mantissas shifted by
// exponents) on random FP8 products, and the models' errors on long FP8 dot products, which show
// what each is for: fast accumulation loses small products, promotion every 128 gives them back.
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

using Fast = mpx::HopperFp8FastAccumulation;

// The truncated model again, without floating-point division: each finite term is m * 2^e with an
// integer m of at most 24 bits; in units of 2^(leading exponent - FractionalBits) it is m shifted
// left, or right with the bits below the unit dropped (toward zero); the integer sum goes back to
// fp32 by dropping bits until 24 remain.
template <int FractionalBits>
float truncated_group_reference(float acc, const std::vector<float>& group) {
  float largest = std::fabs(acc);
  for (const float p : group) largest = std::fmax(largest, std::fabs(p));
  if (largest == 0.0f) return mpx::Fp32Accumulation::accumulate(acc, group);
  const int unit_exponent = std::ilogb(largest) - FractionalBits;
  const auto in_units = [&](float x) -> std::int64_t {
    if (x == 0.0f) return 0;
    int exponent = 0;
    const float fraction = std::frexp(std::fabs(x), &exponent);  // |x| = fraction * 2^exponent
    const auto mantissa = static_cast<std::int64_t>(std::ldexp(fraction, 24));
    const int shift = exponent - 24 - unit_exponent;
    const std::int64_t units = shift >= 0 ? mantissa << shift : (shift > -63 ? mantissa >> -shift : 0);
    return x < 0 ? -units : units;
  };
  std::int64_t sum = in_units(acc);
  for (const float p : group) sum += in_units(p);
  const bool negative = sum < 0;
  std::uint64_t magnitude = negative ? static_cast<std::uint64_t>(-sum) : static_cast<std::uint64_t>(sum);
  int exponent = unit_exponent;
  while (magnitude >= (std::uint64_t{1} << 24)) {
    magnitude >>= 1;
    ++exponent;
  }
  const float result = std::ldexp(static_cast<float>(magnitude), exponent);
  return negative ? -result : result;
}

// A value with FP8 E4M3's 4 significant bits: (8..15) * 2^e, either sign.
float e4m3_like(std::mt19937& rng, int low_exponent, int high_exponent, bool positive_only = false) {
  std::uniform_int_distribution<int> mantissa(8, 15);
  std::uniform_int_distribution<int> exponent(low_exponent, high_exponent);
  std::bernoulli_distribution negative(0.5);
  const float value = std::ldexp(static_cast<float>(mantissa(rng)), exponent(rng));
  return !positive_only && negative(rng) ? -value : value;
}

}  // namespace

TEST_CASE("Fp32Accumulation rounds to nearest after every product", "[accumulation]") {
  const std::vector<float> products = {0x1p-24f, 0x1p-24f};
  // 1 + 2^-24 is a tie that rounds to 1, twice; the exact sum 1 + 2^-23 is representable.
  CHECK(mpx::Fp32Accumulation::accumulate(1.0f, products) == 1.0f);
  CHECK(mpx::Fp32Accumulation::accumulate(0.0f, {}) == 0.0f);
}

TEST_CASE("TruncatedAccumulation drops what lies below its fractional bits, toward zero", "[accumulation]") {
  SECTION("products under 2^-13 of the accumulator are lost, whatever their number") {
    const std::vector<float> small(1000, 0x1p-14f);
    CHECK(Fast::accumulate(1.0f, small) == 1.0f);
    CHECK(mpx::Fp32Accumulation::accumulate(1.0f, small) == 1.0f + 1000 * 0x1p-14f);
  }
  SECTION("truncation is toward zero, for negative products too") {
    CHECK(Fast::accumulate(1.0f, std::vector<float>{-0x1p-14f}) == 1.0f);
    CHECK(Fast::accumulate(1.0f, std::vector<float>{3 * 0x1p-14f}) == 1.0f + 0x1p-13f);
    CHECK(Fast::accumulate(-1.0f, std::vector<float>{-3 * 0x1p-14f}) == -1.0f - 0x1p-13f);
  }
  SECTION("the group aligns to its own largest term, the accumulator included") {
    // One group: 1 sets the unit, so 2^-14 is lost. Two groups (Group = 1): the first sum is 2^-14
    // alone, exact; then 1 + 2^-14 with 1 the largest loses it again.
    CHECK(Fast::accumulate(0.0f, std::vector<float>{1.0f, 0x1p-14f}) == 1.0f);
    CHECK(mpx::TruncatedAccumulation<13, 1>::accumulate(0.0f, std::vector<float>{0x1p-14f, 0x1p-14f}) ==
          0x1p-13f);
  }
  SECTION("the sum is truncated to fp32, not rounded to nearest") {
    // 1 + 2^-24 + 2^-25 = 1 + 0.75 ulp: nearest is 1 + 2^-23, toward zero 1.
    const std::vector<float> tails = {0x1p-24f, 0x1p-25f};
    CHECK(mpx::TruncatedAccumulation<30, 32>::accumulate(1.0f, tails) == 1.0f);
    CHECK(static_cast<float>(1.0 + 0x1p-24 + 0x1p-25) == 1.0f + 0x1p-23f);
  }
  SECTION("NaN and infinities propagate as in fp32; zeros keep fp32's signs") {
    constexpr float inf = std::numeric_limits<float>::infinity();
    CHECK(std::isnan(Fast::accumulate(1.0f, std::vector<float>{inf, -inf})));
    CHECK(Fast::accumulate(1.0f, std::vector<float>{inf, 2.0f}) == inf);
    CHECK(std::isnan(Fast::accumulate(std::numeric_limits<float>::quiet_NaN(), std::vector<float>{1.0f})));
    CHECK(std::signbit(Fast::accumulate(-0.0f, std::vector<float>{-0.0f})));
    CHECK(!std::signbit(Fast::accumulate(-0.0f, std::vector<float>{0.0f})));
  }
}

TEST_CASE("TruncatedAccumulation equals an integer implementation of the rule on random FP8 products",
          "[accumulation]") {
  std::mt19937 rng(2511);
  for (int trial = 0; trial < 4000; ++trial) {
    const std::size_t size = 1 + static_cast<std::size_t>(trial % 32);
    std::vector<float> group(size);
    // Products of two E4M3-like values over a wide range of exponents, so that alignment drops bits.
    for (float& p : group) p = e4m3_like(rng, -12, 4) * e4m3_like(rng, -12, 4);
    const float acc = trial % 3 == 0 ? 0.0f : e4m3_like(rng, -20, 10);
    const float model13 = mpx::TruncatedAccumulation<13, 32>::accumulate(acc, group);
    const float model23 = mpx::TruncatedAccumulation<23, 32>::accumulate(acc, group);
    INFO("trial " << trial << ", " << size << " products");
    CHECK(model13 == truncated_group_reference<13>(acc, group));
    CHECK(model23 == truncated_group_reference<23>(acc, group));
  }
}

TEST_CASE("PromotedAccumulation sums each run of Interval products from zero, then adds it in fp32",
          "[accumulation]") {
  // 1000 products of 2^-14 after a 1: fast accumulation alone keeps none of them; promoted every 128,
  // each run starts from zero, is summed exactly, and lands in fp32 exactly.
  const std::vector<float> small(1000, 0x1p-14f);
  CHECK(mpx::PromotedAccumulation<>::accumulate(1.0f, small) == 1.0f + 1000 * 0x1p-14f);
  std::mt19937 rng(7);
  std::vector<float> products(300);
  for (float& p : products) p = e4m3_like(rng, -8, 2) * e4m3_like(rng, -8, 2);
  const std::span<const float> all(products);
  float expected = 0.5f;
  for (const std::size_t first : {0, 128, 256}) {
    expected = expected + Fast::accumulate(0.0f, all.subspan(first, std::min<std::size_t>(128, 300 - first)));
  }
  CHECK(mpx::PromotedAccumulation<>::accumulate(0.5f, products) == expected);
  CHECK(mpx::PromotedAccumulation<1000, mpx::Fp32Accumulation>::accumulate(0.5f, products) ==
        mpx::Fp32Accumulation::accumulate(0.0f, products) + 0.5f);
}

TEST_CASE("On long FP8 dot products fast accumulation loses what promotion keeps", "[accumulation]") {
  // Positive products (activations after ReLU times positive weights: no cancellation to hide the
  // error), K = 4096: the relative error of each model against the exact sum, the worst of 20 rows.
  std::mt19937 rng(3);
  double worst_fast = 0, worst_promoted = 0, worst_fp32 = 0;
  for (int row = 0; row < 20; ++row) {
    std::vector<float> a(4096), b(4096);
    for (float& x : a) x = e4m3_like(rng, -6, 2, /*positive_only=*/true);
    for (float& x : b) x = e4m3_like(rng, -6, 2, /*positive_only=*/true);
    double exact = 0;  // every product has 8 significant bits and the sum stays far below 2^53 units
    for (std::size_t i = 0; i < a.size(); ++i) exact += static_cast<double>(a[i]) * static_cast<double>(b[i]);
    const auto error = [&](float got) { return std::fabs(static_cast<double>(got) - exact) / exact; };
    worst_fast = std::max(worst_fast, error(mpx::dot<Fast>(a, b)));
    worst_promoted = std::max(worst_promoted, error(mpx::dot<mpx::PromotedAccumulation<>>(a, b)));
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
