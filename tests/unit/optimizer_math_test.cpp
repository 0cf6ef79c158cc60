// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The device-neutral pieces of the optimizers (backend/optimizer_math.hpp) that the optimizer tests
// do not pin: the correctly rounded power behind AdamW's bias corrections, the clipping coefficient,
// and the stochastic-rounding stream of an update. The per-element steps are pinned through
// cpu::sgd_update and cpu::adamw_update by optimizer_test.cpp and pure_precision_test.cpp; here the
// CPU's blockwise AdamW loop is pinned to adamw_step element by element.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

TEST_CASE("cpu::adamw_update gives adamw_step's bits for every element, a block of them at a time",
          "[optim][optimizer_math][adamw]") {
  // Mixed precision's update (fp32 master, bf16 or fp16 copy) runs a block at a time with the square
  // roots as one vector instruction: it must be adamw_step and store_weight element by element, for
  // both of PyTorch's lerp forms (beta1 above and below 0.5), clipped or not, tails included.
  constexpr std::int64_t n = 70001;  // several parallel chunks and conversion blocks, a ragged tail
  std::mt19937 rng(17);
  std::normal_distribution<float> normal;
  const auto filled = [&](float scale, bool positive) {
    mpx::Tensor<float> t(mpx::Shape{n});
    for (float& x : t.values()) x = positive ? std::fabs(normal(rng) * scale) : normal(rng) * scale;
    return t;
  };
  const auto check = [&]<class Copy>(Copy, double beta1, const mpx::UpdateControl& control) {
    CAPTURE(beta1, control.clipped, sizeof(Copy));
    const mpx::AdamWSettings s{.lr = 1e-2, .beta1 = beta1, .weight_decay = 0.1};
    auto master = filled(1.0f, false), grad = filled(0.1f, false), m = filled(0.01f, false),
         v = filled(1e-4f, true);
    grad[0] = 0.0f;  // a zero gradient and an all-zero second moment: sqrt(0) + eps
    v[0] = 0.0f;
    mpx::Tensor<Copy> copy(mpx::Shape{n});
    auto expected_master = master.clone(), expected_m = m.clone(), expected_v = v.clone();
    auto expected_copy = copy.clone();
    const auto c = mpx::adamw_coefficients<float>(s, control);
    const float clip = mpx::clip_factor<float>(control);
    for (std::int64_t i = 0; i < n; ++i) {
      const float weight = mpx::adamw_step(expected_master[i], mpx::clipped_gradient(grad[i], control, clip),
                                           expected_m[i], expected_v[i], c);
      mpx::detail::store_weight(expected_master.data(), expected_copy.data(), i, weight, mpx::RoundNearest{});
    }
    mpx::cpu::adamw_update(master, &copy, grad, m, v, s, mpx::RoundNearest{}, &control);
    REQUIRE(std::memcmp(master.data(), expected_master.data(), master.size_bytes()) == 0);
    REQUIRE(std::memcmp(m.data(), expected_m.data(), m.size_bytes()) == 0);
    REQUIRE(std::memcmp(v.data(), expected_v.data(), v.size_bytes()) == 0);
    REQUIRE(std::memcmp(copy.data(), expected_copy.data(), copy.size_bytes()) == 0);
  };
  const mpx::UpdateControl plain{.lr = 1e-2, .optimizer_step = 3};
  const mpx::UpdateControl clipped{.lr = 1e-2, .clip_coefficient = 0.37, .optimizer_step = 3, .clipped = 1};
  for (const double beta1 : {0.9, 0.3}) {
    check(Eigen::bfloat16{}, beta1, plain);
    check(Eigen::half{}, beta1, clipped);
  }
}

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
