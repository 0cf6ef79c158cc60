// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Concatenation along the channels (the last dimension) on the GPU and its reverse, the
/// split, with mpx::cpu::concat_channels' and split_channels' contracts (backend/channel_concat_spec.hpp):
/// copies, bit for bit. One thread per element of the joined tensor y [..., Ca + Cb].

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/channel_concat.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>

#include "mpx/backend/channel_concat_spec.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// y[row, k] = k < ca ? a[row, k] : b[row, k - ca] over the `count` elements of y [rows, ca + cb].
template <class T>
__global__ void concat_channels_kernel(const T* a, const T* b, T* y, std::int64_t count, std::int64_t ca,
                                       std::int64_t cb) {
  const std::int64_t c = ca + cb;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t row = i / c, k = i % c;
    y[i] = k < ca ? a[row * ca + k] : b[row * cb + (k - ca)];
  }
}

// The reverse: a[row, k] = y[row, k] for k < ca, b[row, k - ca] = y[row, k] otherwise.
template <class T>
__global__ void split_channels_kernel(const T* y, T* a, T* b, std::int64_t count, std::int64_t ca,
                                      std::int64_t cb) {
  const std::int64_t c = ca + cb;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t row = i / c, k = i % c;
    if (k < ca) {
      a[row * ca + k] = y[i];
    } else {
      b[row * cb + (k - ca)] = y[i];
    }
  }
}

}  // namespace detail

/// @brief y [..., Ca + Cb] = a [..., Ca] followed by b [..., Cb] along the last dimension, bit for bit.
/// @throws mpx::shape_error unless the leading extents agree and y has the joined shape.
template <Element T>
void concat_channels(const Tensor<T, Cuda>& a, const Tensor<T, Cuda>& b, Tensor<T, Cuda>& y) {
  validate_channel_concat("mpx::cuda::concat_channels", a.shape(), b.shape(), y.shape());
  const std::int64_t count = y.numel();
  if (count == 0) return;
  detail::concat_channels_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                   detail::stream()>>>(a.data(), b.data(), y.data(), count, a.shape().cols(),
                                                       b.shape().cols());
  MPX_CUDA_CHECK_LAUNCH("concat_channels_kernel");
}

/// @brief The reverse of `concat_channels`: a [..., Ca] and b [..., Cb] from y [..., Ca + Cb], bit
/// for bit (a concatenation's backward: the gradients of its two inputs).
/// @throws mpx::shape_error unless the leading extents agree and y has the joined shape.
template <Element T>
void split_channels(const Tensor<T, Cuda>& y, Tensor<T, Cuda>& a, Tensor<T, Cuda>& b) {
  validate_channel_concat("mpx::cuda::split_channels", a.shape(), b.shape(), y.shape());
  const std::int64_t count = y.numel();
  if (count == 0) return;
  detail::split_channels_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                  detail::stream()>>>(y.data(), a.data(), b.data(), count, a.shape().cols(),
                                                      b.shape().cols());
  MPX_CUDA_CHECK_LAUNCH("split_channels_kernel");
}

}  // namespace mpx::cuda
