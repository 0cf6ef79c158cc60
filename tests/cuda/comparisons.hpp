// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief How the CUDA tests compare a GPU result with the CPU backend's (Catch2 checks): bit for
/// bit, or element by element within a bound, each mismatch logged (the first few) with its index
/// and both values; and the bounds' pieces (a format's epsilon, one ulp of storage).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include <mpx/cuda.hpp>

#include "../support/mismatch_log.hpp"
#include "support.hpp"

namespace mpx_test {

/// @brief The accumulate type of an element type.
template <class T>
using accumulate_of = mpx::accumulate_t<T>;

/// @brief Machine epsilon of T's format.
template <class T>
constexpr double eps_of() {
  return mpx::epsilon_v<mpx::tag_of_t<T>>;
}
/// @brief The smallest normal value of T's format.
template <class T>
constexpr double min_normal_of() {
  return mpx::min_normal_v<mpx::tag_of_t<T>>;
}

/// @brief One ulp of T's format at `reference` (at most eps |reference|) plus T's subnormal step.
template <class T>
double storage_slack(double reference) {
  return eps_of<T>() * std::abs(reference) + min_normal_of<T>() * eps_of<T>();
}

/// @brief Whether `actual` is within `bound` of `expected`, NaN matching NaN and infinities matching
/// exactly.
inline bool close(double actual, double expected, double bound) {
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual)) return actual == expected;
  return std::abs(actual - expected) <= bound;
}

/// @brief T's format name ("bf16", ...), for messages.
template <class T>
std::string type_name() {
  return std::string(mpx::numeric_traits<mpx::tag_of_t<T>>::name);
}

/// @brief Random values in [low, high) with NaN, +-inf, 0 and -0 planted at fixed places (when there
/// are 16 elements or more).
template <mpx::Element T>
mpx::Tensor<T> with_specials(std::int64_t count, std::mt19937& rng, double low = -4.0, double high = 4.0) {
  auto t = random_host<T>(mpx::Shape{count}, rng, low, high);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), 0.0, -0.0};
  if (count >= 16) {
    for (int k = 0; k < 5; ++k)
      t[count - 1 - 3 * k] = static_cast<T>(static_cast<accumulate_of<T>>(specials[k]));
  }
  return t;
}

/// @brief The same, shaped.
template <mpx::Element T>
mpx::Tensor<T> with_specials(const mpx::Shape& shape, std::mt19937& rng) {
  auto t = with_specials<T>(shape.numel(), rng);
  t.reshape(shape);
  return t;
}

/// @brief Element counts that give a one-element tensor, a partial 16-byte pack, and tails on both
/// sides of the packed path; 4097 rows or columns are one more than a power of two.
inline constexpr std::int64_t odd_sizes[] = {1, 7, 1023, 4097};

/// @brief Checks two host tensors bit for bit (NaN matching any NaN).
template <class T>
void require_same_bits(const mpx::Tensor<T>& gpu, const mpx::Tensor<T>& cpu, const std::string& what) {
  REQUIRE(gpu.shape() == cpu.shape());
  MismatchLog log(what + " " + type_name<T>());
  for (std::int64_t i = 0; i < cpu.numel(); ++i) {
    log.check(same_bits_or_both_nan(gpu[i], cpu[i]), [&] {
      return "[" + std::to_string(i) + "] gpu " + std::to_string(to_double(gpu[i])) + " cpu " +
             std::to_string(to_double(cpu[i]));
    });
  }
  INFO(log.summary());
  CHECK(log.failures() == 0);
}

/// @brief The same, for a device result.
template <class T>
void require_same_bits(const mpx::Tensor<T, mpx::Cuda>& gpu, const mpx::Tensor<T>& cpu,
                       const std::string& what) {
  require_same_bits(mpx::to_host(gpu), cpu, what);
}

/// @brief Checks element by element that |gpu[i] - cpu[i]| <= bound(i, cpu[i]) (`close`).
template <class A, class B, class Bound>
void require_close(const mpx::Tensor<A>& gpu, const mpx::Tensor<B>& cpu, const std::string& what,
                   Bound bound) {
  REQUIRE(gpu.shape() == cpu.shape());
  MismatchLog log(what + " " + type_name<B>());
  for (std::int64_t i = 0; i < cpu.numel(); ++i) {
    const double actual = to_double(gpu[i]);
    const double expected = to_double(cpu[i]);
    const double b = bound(i, expected);
    log.check(close(actual, expected, b), [&] {
      return "[" + std::to_string(i) + "] gpu " + std::to_string(actual) + " cpu " +
             std::to_string(expected) + " bound " + std::to_string(b);
    });
  }
  INFO(log.summary());
  CHECK(log.failures() == 0);
}

/// @brief Checks element by element that gpu[i] is finite and within bound(i, cpu[i]) of cpu[i]
/// (a NaN or an infinity on the GPU fails, whatever the CPU holds).
template <class A, class B, class Bound>
void require_finite_and_close(const mpx::Tensor<A>& gpu, const mpx::Tensor<B>& cpu, const std::string& what,
                              Bound bound) {
  REQUIRE(gpu.shape() == cpu.shape());
  MismatchLog log(what);
  for (std::int64_t i = 0; i < cpu.numel(); ++i) {
    const double actual = to_double(gpu[i]);
    const double expected = to_double(cpu[i]);
    const double b = bound(i, expected);
    log.check(std::isfinite(actual) && std::abs(actual - expected) <= b, [&] {
      return "[" + std::to_string(i) + "] gpu " + std::to_string(actual) + " cpu " +
             std::to_string(expected) + " bound " + std::to_string(b);
    });
  }
  INFO(log.summary());
  CHECK(log.failures() == 0);
}

/// @brief The largest |value| of a host tensor (the scale of a bound relative to a tensor's values).
template <class T>
double largest(const mpx::Tensor<T>& t) {
  double m = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::abs(to_double(t[i])));
  return m;
}

}  // namespace mpx_test
