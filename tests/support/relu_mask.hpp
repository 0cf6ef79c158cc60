// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
// The ReLU bit mask of a pre-activation, built element by element as a reference for the GEMM
// epilogues that write (ReluAuxBias) and read (DRelu, DReluBGrad) it, on the CPU and the GPU.

#include <cstdint>

#include "mpx/backend/gemm_spec.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::test {

/// The ReLU bit mask (backend/gemm_spec.hpp's layout) of the pre-activation `pre`: bit set where the
/// element is positive, padding bits zero, as `mpx::cpu::gemm`'s ReluAuxBias writes it.
template <mpx::Element T>
mpx::Tensor<std::int32_t> relu_mask_of(const mpx::Tensor<T>& pre) {
  const std::int64_t rows = pre.shape().rows();
  const std::int64_t cols = pre.shape().cols();
  const std::int64_t words = mpx::relu_mask_words(cols);
  mpx::Tensor<std::int32_t> mask(mpx::relu_mask_shape(pre.shape()));
  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t col = 0; col < cols; ++col) {
      if (pre[row * cols + col] > T(0)) {
        mask[row * words + col / 32] |= static_cast<std::int32_t>(1u << (col % 32));
      }
    }
  }
  return mask;
}

}  // namespace mpx::test
