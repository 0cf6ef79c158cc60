// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief tanh for the activations (GELU's tanh form): a rational approximation in float, which
/// compilers vectorise, and `std::tanh` in double, where gradient checks need every digit.
///
/// Why not `std::tanh` in float: it is a library call per element that no loop vectorises, and on
/// the CPU it took a third of a char-GPT training step (perf, 2 cores, fp32). The approximation is
/// plain multiplies, adds and one divide, so a loop of it becomes vector code on any CPU and the
/// same source runs on the GPU. Its accuracy, checked over 2^24 points of [-12, 12] against the
/// fp64 tanh: at most 5 ulp where the compiler contracts multiply-adds into FMAs, 7 ulp where it does
/// not (glibc's tanhf: 1 ulp; CUDA's: 2 ulp); in absolute terms at most 3e-7 (4e-7 without FMAs). GELU's
/// error bounds (tests/support/tolerances.hpp) charge 16 roundings for the epilogue, which covers it.

#include <cmath>
#include <type_traits>

#include "mpx/config.hpp"

namespace mpx {

/// @brief tanh(x) in float by a [13/6] rational minimax approximation (the coefficients of Eigen
/// 3.4's `generic_fast_tanh_float`): odd numerator, even denominator, input clamped to
/// +-7.9053111, where the approximation reaches 1 (and the result is exactly +-1 from there on),
/// and tanh(x) = x for |x| < 4e-4. NaN stays NaN, +-inf gives +-1. At most 7 ulp from the exact value (see
/// the file comment).
MPX_HOST_DEVICE MPX_ALWAYS_INLINE float rational_tanh(float x) {
  constexpr float clamp = 7.90531110763549805f;
  const float c = x < -clamp ? -clamp : (x > clamp ? clamp : x);  // NaN compares false: stays NaN
  const float c2 = c * c;
  float p = c2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = c2 * p + -8.60467152213735e-11f;
  p = c2 * p + 5.12229709037114e-08f;
  p = c2 * p + 1.48572235717979e-05f;
  p = c2 * p + 6.37261928875436e-04f;
  p = c2 * p + 4.89352455891786e-03f;
  float q = c2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = c2 * q + 2.26843463243900e-03f;
  q = c2 * q + 4.89352518554385e-03f;
  const float r = c * p / q;
  if (x < 4e-4f && x > -4e-4f) return x;
  // At and beyond the clamp tanh is +-1 in float. The rational function lands there exactly only
  // without contracted multiply-adds: nvcc's FMAs left it at -0.99999994 on an H200, and then GELU
  // at -inf gave -inf * 6e-8 = -inf where the CPU gave -inf * 0 = NaN.
  if (x >= clamp) return 1.0f;
  if (x <= -clamp) return -1.0f;
  return r;
}

/// @brief The tanh the activations use: `rational_tanh` for float (and so for every 16-bit compute
/// type, whose math is float), `std::tanh` for double.
template <class T>
MPX_HOST_DEVICE MPX_ALWAYS_INLINE T activation_tanh(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return rational_tanh(x);
  } else {
    return std::tanh(x);
  }
}

}  // namespace mpx
