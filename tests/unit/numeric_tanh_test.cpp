// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The activations' tanh (numeric/tanh.hpp): the float rational approximation stays within the
// documented 7 ulp of the fp64 tanh over a dense sweep and near zero, passes NaN, saturates at
// +-1 for +-inf, and is odd; double goes through std::tanh unchanged.

#include <cmath>
#include <cstdint>
#include <limits>

#include <catch2/catch.hpp>

#include "mpx/numeric/tanh.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

// |approx - exact| in units of the float spacing at |exact| (the ulp of the correctly rounded result).
double ulps_from(float approx, double exact) {
  const float rounded = static_cast<float>(std::fabs(exact));
  const double ulp = static_cast<double>(std::nextafter(rounded, 2.0f) - rounded);
  return std::fabs(static_cast<double>(approx) - exact) / ulp;
}

}  // namespace

TEST_CASE("rational_tanh is within 7 ulp of tanh over [-12, 12] and near zero", "[numeric][tanh]") {
  double worst = 0;
  float worst_at = 0;
  const std::int64_t points = std::int64_t{1} << 21;
  for (std::int64_t i = 0; i <= points; ++i) {
    const float x = -12.0f + 24.0f * static_cast<float>(i) / static_cast<float>(points);
    const double error = ulps_from(mpx::rational_tanh(x), std::tanh(static_cast<double>(x)));
    if (error > worst) {
      worst = error;
      worst_at = x;
    }
  }
  for (float x = 1e-8f; x < 0.05f; x *= 1.0001f) {  // where tanh(x) ~ x and relative error counts
    for (const float signed_x : {x, -x}) {
      const double error = ulps_from(mpx::rational_tanh(signed_x), std::tanh(static_cast<double>(signed_x)));
      if (error > worst) {
        worst = error;
        worst_at = signed_x;
      }
    }
  }
  INFO("largest error " << worst << " ulp at x = " << worst_at);
  CHECK(worst <= 7.0);
  CHECK(worst > 0.0);  // it is an approximation, not std::tanh: the sweep must see that
}

TEST_CASE("rational_tanh: odd, saturating, NaN through; activation_tanh<double> is std::tanh",
          "[numeric][tanh]") {
  for (const float x : {0.0f, 1e-5f, 3e-4f, 0.3f, 1.7f, 5.0f, 7.9f, 20.0f}) {
    CHECK(mpx::rational_tanh(-x) == -mpx::rational_tanh(x));
  }
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(mpx::rational_tanh(inf) == Approx(1.0f).epsilon(1e-7));
  CHECK(mpx::rational_tanh(-inf) == Approx(-1.0f).epsilon(1e-7));
  CHECK(mpx::rational_tanh(100.0f) <= 1.0f);
  CHECK(std::isnan(mpx::rational_tanh(std::numeric_limits<float>::quiet_NaN())));
  CHECK(mpx::activation_tanh(0.5f) == mpx::rational_tanh(0.5f));
  CHECK(mpx::activation_tanh(0.5) == std::tanh(0.5));
}

}  // namespace MPX_UNITY_ID
}  // namespace
