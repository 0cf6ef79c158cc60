// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The math of the elementwise activations that no GEMM epilogue fuses (ReLU's and GELU's,
/// which epilogues apply, are in gemm_spec.hpp), shared by the backends: computed in the accumulate
/// type, as autocast runs activations in fp32 on 16-bit tensors.

#include <cmath>

#include "mpx/config.hpp"
#include "mpx/numeric/exp.hpp"

namespace mpx {

/// @brief silu(x) = x sigmoid(x) = x / (1 + exp(-x)) (PyTorch's `nn.SiLU`, the swish of diffusion
/// UNets), e^x from `softmax_exp` (in float the vectorisable `polynomial_exp`, at most 1 ulp from
/// the exact value; the same source on both devices, where nvcc's fused multiply-adds move results
/// by a few ulp). Large negative x gives -0 through an infinite exp, never NaN; NaN stays NaN.
template <class T>
MPX_HOST_DEVICE inline T silu(T x) {
  return x / (T(1) + softmax_exp(-x));
}

/// @brief d silu(x) / dx = s (1 + x (1 - s)) with s = sigmoid(x), e^x as `silu` takes it.
template <class T>
MPX_HOST_DEVICE inline T silu_derivative(T x) {
  const T s = T(1) / (T(1) + softmax_exp(-x));
  return s * (T(1) + x * (T(1) - s));
}

}  // namespace mpx
