// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The device-neutral pieces of the optimizers (backend/optimizer_math.hpp) that the optimizer tests
// do not pin: the correctly rounded power behind AdamW's bias corrections, the clipping coefficient,
// and the stochastic-rounding stream of an update. The per-element steps are pinned through
// cpu::sgd_update and cpu::adamw_update by optimizer_test.cpp and pure_precision_test.cpp.
#include <cmath>
#include <cstdint>
#include <utility>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

TEST_CASE("integer_power is exact where the power is representable", "[optim][optimizer_math]") {
  CHECK(mpx::integer_power(0.9, 0) == 1.0);
  CHECK(mpx::integer_power(0.0, 0) == 1.0);  // as std::pow(0, 0)
  CHECK(mpx::integer_power(0.0, 1) == 0.0);
  CHECK(mpx::integer_power(0.0, 1000) == 0.0);
  CHECK(mpx::integer_power(0.999, 1) == 0.999);
  for (std::int64_t t = 0; t <= 1074; ++t) {
    CAPTURE(t);
    REQUIRE(mpx::integer_power(0.5, t) == std::ldexp(1.0, static_cast<int>(-t)));
  }
  CHECK(mpx::integer_power(0.5, 1075) == 0.0);  // below the smallest subnormal
  // 0.75^t = 3^t / 4^t is a double while 3^t has at most 53 bits (t <= 33).
  double three_to_t = 1.0;
  for (std::int64_t t = 0; t <= 33; ++t) {
    CAPTURE(t);
    REQUIRE(mpx::integer_power(0.75, t) == std::ldexp(three_to_t, static_cast<int>(-2 * t)));
    three_to_t *= 3.0;
  }
}

TEST_CASE("integer_power rounds correctly where glibc's pow is off by one ulp", "[optim][optimizer_math]") {
  // Correctly rounded values of the exact powers of these doubles (Python: float(Fraction(b) ** t)).
  CHECK(mpx::integer_power(0.99, 503) == 0.006375333125571847);
  CHECK(mpx::integer_power(0.9999, 494) == 0.9517979823103042);
  CHECK(mpx::integer_power(0.999, 2904) == 0.054723996727378245);
  CHECK(mpx::integer_power(0.75, 34) == 5.650448946785622e-05);
  CHECK(mpx::integer_power(0.995, 1392) == 0.0009326708385250647);
  CHECK(mpx::integer_power(0.9, 3270) == 2.3605101195105048e-150);
  CHECK(mpx::integer_power(0.9, 10) == 0.3486784401000001);
}

TEST_CASE("AdamW's fp32 coefficients from integer_power equal those from std::pow",
          "[optim][optimizer_math][adamw]") {
  // What AdamW computes before the switch to integer_power; the fp32 update must not have changed.
  const auto with_pow = [](const mpx::AdamWSettings& s, std::int64_t t) {
    const double bias_correction1 = 1.0 - std::pow(s.beta1, static_cast<double>(t));
    const double bias_correction2 = 1.0 - std::pow(s.beta2, static_cast<double>(t));
    return std::pair{static_cast<float>(std::sqrt(bias_correction2)),
                     static_cast<float>(-(s.lr / bias_correction1))};
  };
  std::int64_t checked = 0;
  for (const double beta1 : {0.9, 0.95, 0.99}) {
    for (const double beta2 : {0.95, 0.99, 0.999, 0.9999}) {
      for (const double lr : {1e-3, 3e-4, 1e-2}) {
        const mpx::AdamWSettings s{.lr = lr, .beta1 = beta1, .beta2 = beta2};
        for (std::int64_t t = 1; t <= 3000; ++t) {
          const auto c = mpx::adamw_coefficients<float>(s, lr, t);
          const auto [bias_correction2_sqrt, minus_step_size] = with_pow(s, t);
          CAPTURE(beta1, beta2, lr, t);
          REQUIRE(c.bias_correction2_sqrt == bias_correction2_sqrt);
          REQUIRE(c.minus_step_size == minus_step_size);
          ++checked;
        }
      }
    }
  }
  CHECK(checked == 3 * 4 * 3 * 3000);
}

TEST_CASE("adamw_coefficients and sgd_coefficients take the learning rate apart from the settings",
          "[optim][optimizer_math]") {
  const mpx::AdamWSettings adamw{.lr = 1.0, .weight_decay = 0.1};
  const auto a = mpx::adamw_coefficients<double>(adamw, 0.5, 1);
  CHECK(a.decay == 1.0 - 0.5 * 0.1);
  CHECK(a.minus_step_size == -(0.5 / (1.0 - 0.9)));
  CHECK(a.lerp_weight == 1.0 - 0.9);
  const mpx::SgdSettings sgd{.lr = 1.0, .momentum = 0.9, .dampening = 0.25};
  const auto s = mpx::sgd_coefficients<float>(sgd, 0.5, true);
  CHECK(s.minus_lr == -0.5f);
  CHECK(s.keep == 0.75f);
  CHECK(s.has_momentum);
  CHECK_FALSE(s.decays);
  CHECK(s.first_step);
}

TEST_CASE("clip_coefficient is clip_grad_norm_'s max_norm / (norm + 1e-6)", "[optim][optimizer_math]") {
  CHECK(mpx::clip_coefficient(1.0, 3.0) == 1.0 / (3.0 + 1e-6));
  CHECK(mpx::clip_coefficient(1.0, 0.0) == 1.0 / 1e-6);
  CHECK(mpx::clip_coefficient(2.0, 1.0) > 1.0);  // not clipped
  CHECK(mpx::clip_coefficient(1.0, 1.0) < 1.0);  // the epsilon clips a norm equal to the maximum
  CHECK(std::isnan(mpx::clip_coefficient(1.0, std::nan(""))));
}

TEST_CASE("RoundStochasticPerUpdate draws update u's bits from the optimizer's stream for u",
          "[optim][optimizer_math][stochastic]") {
  // The stream pure_precision_test.cpp documents for optim::SGD and optim::AdamW.
  const auto documented = [](std::uint64_t update, std::uint64_t index) {
    return (std::uint64_t{1} << 63) | (update << 24) | index;
  };
  CHECK(mpx::optimizer_rounding_stream(1, 0) == documented(1, 0));
  CHECK(mpx::optimizer_rounding_stream(7, 5) == documented(7, 5));
  CHECK(mpx::optimizer_rounding_stream(123456789, 0xFFFFFF) == documented(123456789, 0xFFFFFF));
  const mpx::RoundStochasticPerUpdate per_update{.seed = 42, .parameter_index = 3};
  const mpx::RoundStochastic third = per_update.at_update(3);
  CHECK(third.seed == 42);
  CHECK(third.stream == documented(3, 3));
}

}  // namespace MPX_UNITY_ID
}  // namespace
