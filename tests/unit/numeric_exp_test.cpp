// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// polynomial_exp, the softmaxes' exp in float: within 2 ulp of the correctly rounded e^x over 2^24
// points of [-104, 89] (normal and subnormal results), exact at 0, and the limits, infinities and
// NaN as the file comment of numeric/exp.hpp says.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include <catch2/catch.hpp>

#include "mpx/numeric/exp.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

// Distance in units in the last place between two finite non-negative floats.
std::int64_t ulps_apart(float a, float b) {
  return std::llabs(std::int64_t{std::bit_cast<std::int32_t>(a)} -
                    std::int64_t{std::bit_cast<std::int32_t>(b)});
}

}  // namespace

TEST_CASE("polynomial_exp is within 2 ulp of e^x from the subnormals to FLT_MAX", "[numeric][exp]") {
  // Measured here: 1 ulp at worst (2 allowed for compilers that contract multiply-adds).
  constexpr std::int64_t points = std::int64_t{1} << 24;
  constexpr double low = -104.0, high = 89.0;
  std::int64_t worst = 0;
  float worst_at = 0.0f;
  for (std::int64_t i = 0; i <= points; ++i) {
    const float x =
        static_cast<float>(low + (high - low) * static_cast<double>(i) / static_cast<double>(points));
    const float exact = static_cast<float>(std::exp(static_cast<double>(x)));  // rounded once
    const std::int64_t apart = ulps_apart(mpx::polynomial_exp(x), exact);
    if (apart > worst) {
      worst = apart;
      worst_at = x;
    }
  }
  INFO("worst: " << worst << " ulp at x = " << worst_at);
  CHECK(worst <= 2);
}

TEST_CASE("polynomial_exp: exact at 0, its limits, infinities and NaN", "[numeric][exp]") {
  constexpr float inf = std::numeric_limits<float>::infinity();
  CHECK(mpx::polynomial_exp(0.0f) == 1.0f);
  CHECK(mpx::polynomial_exp(-0.0f) == 1.0f);
  CHECK(mpx::polynomial_exp(inf) == inf);
  CHECK(mpx::polynomial_exp(-inf) == 0.0f);
  CHECK(!std::signbit(mpx::polynomial_exp(-inf)));
  CHECK(std::isnan(mpx::polynomial_exp(std::numeric_limits<float>::quiet_NaN())));
  // ln(FLT_MAX) rounded down is the last finite result; the next float up overflows.
  const float largest = 88.72283172607422f;
  CHECK(std::isfinite(mpx::polynomial_exp(largest)));
  CHECK(ulps_apart(mpx::polynomial_exp(largest), static_cast<float>(std::exp(double{largest}))) <= 2);
  CHECK(mpx::polynomial_exp(std::nextafter(largest, inf)) == inf);
  // The least subnormal, 2^-149, is e^-103.28; below -103.98 e^x rounds to 0.
  CHECK(mpx::polynomial_exp(-103.5f) == std::numeric_limits<float>::denorm_min());
  CHECK(mpx::polynomial_exp(-103.97207641601562f) == std::numeric_limits<float>::denorm_min());
  CHECK(mpx::polynomial_exp(-103.97208404541016f) == 0.0f);  // the next float down
  CHECK(mpx::polynomial_exp(-104.0f) == 0.0f);
  CHECK(mpx::polynomial_exp(-1000.0f) == 0.0f);
  CHECK(mpx::softmax_exp(1.5) == std::exp(1.5));  // double: the library's
}

}  // namespace MPX_UNITY_ID
}  // namespace
