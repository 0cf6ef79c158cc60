// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Dropout on the GPU: mpx::cpu::dropout's bits, with the step count read from device memory
/// when the kernel runs, so that a replayed CUDA graph draws a new mask at every step.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/dropout.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>

#include "mpx/backend/cuda/device_array.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/dropout_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// One Philox block per four elements (grid-stride); every thread derives the step's words itself
// from *step (one more Philox call per thread, cheaper than a round trip through shared memory).
template <class T>
__global__ void dropout_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t count,
                               DropoutMask mask, std::uint32_t threshold, accumulate_t<T> keep) {
  using Acc = accumulate_t<T>;
  const auto step_words = dropout_step_words(mask.seed, mask.stream, *mask.step);
  const auto micro_batch = static_cast<std::uint32_t>(mask.micro_batch);
  const std::int64_t blocks = (count + 3) / 4;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t block = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; block < blocks;
       block += stride) {
    const auto bits = dropout_block_bits(step_words, micro_batch, static_cast<std::uint32_t>(block));
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
      const std::int64_t i = block * 4 + lane;
      if (i < count) {
        y[i] =
            round_to<tag_of_t<T>>(dropout_element(static_cast<Acc>(x[i]), bits.v[lane] >= threshold, keep));
      }
    }
  }
}

}  // namespace detail

/// @brief mpx::cpu::dropout on the GPU, bit for bit: y = x * keep / (1 - p) with the mask of
/// `mask`'s key. `mask.step` must point to device memory; the kernel reads it when it runs (no
/// synchronisation, graph-capturable). Forward and backward are this one operation with the same
/// `mask`. Throws on the host as `validate_dropout` says, and `mpx::invalid_argument` for a step
/// count in host memory.
template <FloatingElement T>
void dropout(const Tensor<T, Cuda>& x, Tensor<T, Cuda>& y, const DropoutMask& mask) {
  using Acc = accumulate_t<T>;
  constexpr const char* where = "mpx::cuda::dropout";
  validate_dropout(where, x, y, mask);
  if (!is_device_pointer(mask.step)) {
    throw invalid_argument(mpx::detail::concat(
        where, ": the step count is in host memory; the kernel reads it from device memory when it runs"));
  }
  const std::int64_t count = x.numel();
  if (count == 0) return;
  const std::int64_t blocks = (count + 3) / 4;
  detail::dropout_kernel<<<detail::elementwise_blocks(blocks), detail::elementwise_threads, 0,
                           detail::stream()>>>(x.data(), y.data(), count, mask, dropout_threshold(mask.p),
                                               dropout_keep_probability<Acc>(mask.p));
  MPX_CUDA_CHECK_LAUNCH("dropout_kernel");
}

}  // namespace mpx::cuda
