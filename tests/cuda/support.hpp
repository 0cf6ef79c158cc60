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

/// @brief The ReLU bit mask (backend/gemm_spec.hpp's layout) of the pre-activation `pre`: bit set
/// where the element is positive, padding bits zero, as `mpx::cpu::gemm`'s ReluAuxBias writes it.
template <mpx::Element T>
mpx::Tensor<std::int32_t> relu_mask_of(const mpx::Tensor<T>& pre) {
  const std::int64_t rows = pre.shape().rows();
  const std::int64_t cols = pre.shape().cols();
  const std::int64_t words = mpx::relu_mask_words(cols);
  mpx::Tensor<std::int32_t> mask(mpx::relu_mask_shape(pre.shape()));
  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t col = 0; col < cols; ++col) {
      if (to_double(pre[row * cols + col]) > 0.0) {
        mask[row * words + col / 32] |= static_cast<std::int32_t>(1u << (col % 32));
      }
    }
  }
  return mask;
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
