// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What the CUDA tests share: random host tensors (uploaded with mpx::to_device), reading
/// any element type as a double, and ReLU bit masks built on the host. Plain code, no test framework.

#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>

#include <mpx/mpx.hpp>

namespace mpx_test {

/// @brief `x` as a double (16-bit types through float, which is exact).
template <class T>
double to_double(T x) {
  if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
    return static_cast<double>(static_cast<float>(x));
  } else {
    return static_cast<double>(x);
  }
}

/// @brief A host tensor of `shape` with elements drawn uniformly from [low, high) as floats and
/// rounded into T.
template <mpx::Element T>
mpx::Tensor<T> random_host(const mpx::Shape& shape, std::mt19937& rng, double low = -1.0, double high = 1.0) {
  std::uniform_real_distribution<float> dist(static_cast<float>(low), static_cast<float>(high));
  mpx::Tensor<T> t(shape);
  for (T& x : t.values()) x = static_cast<T>(dist(rng));
  return t;
}

/// @brief Whether two elements have the same bits, or are both NaN (whose payloads may differ).
template <class T>
bool same_bits_or_both_nan(T a, T b) {
  const double da = to_double(a);
  const double db = to_double(b);
  if (da != da && db != db) return true;
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace mpx_test
