// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief One position of each sequence on the GPU, and its gradient, with mpx::cpu::take_position's
/// and take_position_backward's contracts and bits (backend/sequence_position_spec.hpp): copies, one
/// thread per element written.

#include "mpx/config.hpp"

#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/sequence_position.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/sequence_position_spec.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// y[n, c] = x[n, position, c]: element i = n channels + c of y.
template <class T>
__global__ void take_position_kernel(const T* x, T* y, std::int64_t count, std::int64_t sequence,
                                     std::int64_t position, std::int64_t channels) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t n = i / channels, c = i % channels;
    y[i] = x[(n * sequence + position) * channels + c];
  }
}

// dx[n, t, c] = dy[n, c] at t = position, else 0: element i = (n sequence + t) channels + c of dx.
template <class T>
__global__ void take_position_backward_kernel(const T* dy, T* dx, std::int64_t count, std::int64_t sequence,
                                              std::int64_t position, std::int64_t channels) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t c = i % channels, t = (i / channels) % sequence, n = i / (channels * sequence);
    dx[i] = t == position ? dy[n * channels + c] : T(0);
  }
}

}  // namespace detail

/// @brief y[n, :] = x[n, position, :].
/// @param x        sequences [N, T, C]
/// @param position the position taken, in [0, T)
/// @param y        [N, C], written
/// @throws mpx::shape_error naming the operand otherwise.
template <Element T>
void take_position(const Tensor<T, Cuda>& x, std::int64_t position, Tensor<T, Cuda>& y) {
  validate_take_position("mpx::cuda::take_position", x.shape(), position, y.shape());
  const std::int64_t count = y.numel();
  if (count == 0) return;
  detail::take_position_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                 detail::stream()>>>(x.data(), y.data(), count, x.shape()[1], position,
                                                     x.shape()[2]);
  MPX_CUDA_CHECK_LAUNCH("take_position_kernel");
}

/// @brief dx[n, position, :] = dy[n, :], every other element of dx 0.
/// @param dy       [N, C]
/// @param position the position the forward took
/// @param dx       [N, T, C], written whole
/// @throws mpx::shape_error naming the operand otherwise.
template <Element T>
void take_position_backward(const Tensor<T, Cuda>& dy, std::int64_t position, Tensor<T, Cuda>& dx) {
  validate_take_position("mpx::cuda::take_position_backward", dx.shape(), position, dy.shape());
  const std::int64_t count = dx.numel();
  if (count == 0) return;
  detail::take_position_backward_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                          detail::stream()>>>(dy.data(), dx.data(), count, dx.shape()[1],
                                                              position, dx.shape()[2]);
  MPX_CUDA_CHECK_LAUNCH("take_position_backward_kernel");
}

}  // namespace mpx::cuda
