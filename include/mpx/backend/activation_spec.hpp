// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The math of the elementwise activations that no GEMM epilogue fuses (ReLU's and GELU's,
/// which epilogues apply, are in gemm_spec.hpp), shared by the backends: computed in the accumulate
/// type, as autocast runs activations in fp32 on 16-bit tensors.

#include <cmath>

#include "mpx/config.hpp"

namespace mpx {

/// @brief silu(x) = x sigmoid(x) = x / (1 + exp(-x)) (PyTorch's `nn.SiLU`, the swish of diffusion
/// UNets). Large negative x gives -0 through an infinite exp, never NaN; NaN stays NaN.
template <class T>
MPX_HOST_DEVICE inline T silu(T x) {
  using std::exp;
  return x / (T(1) + exp(-x));
}

/// @brief d silu(x) / dx = s (1 + x (1 - s)) with s = sigmoid(x).
template <class T>
MPX_HOST_DEVICE inline T silu_derivative(T x) {
  using std::exp;
  const T s = T(1) / (T(1) + exp(-x));
  return s * (T(1) + x * (T(1) - s));
}

}  // namespace mpx
