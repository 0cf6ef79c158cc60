// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief A per-sample shift added to every position of channels-last activations on the GPU, and
/// its gradient, with mpx::cpu::add_sample_shift's and sample_shift_backward's contracts and bits
/// (backend/sample_shift_spec.hpp): one correctly rounded add per element; each gradient element one
/// thread that adds its positions in order, without atomics.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/sample_shift.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/sample_shift_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// y[i] = round(x[i] + shift[n, c]) for element i = (n positions + p) channels + c.
template <class T>
__global__ void add_sample_shift_kernel(const T* x, const T* shift, T* y, std::int64_t count,
                                        std::int64_t positions, std::int64_t channels) {
  using Acc = accumulate_t<T>;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t c = i % channels, n = i / (channels * positions);
    y[i] = round_to<tag_of_t<T>>(static_cast<Acc>(x[i]) + static_cast<Acc>(shift[n * channels + c]));
  }
}

// dshift[n, c] = dy[n, 0, c] + dy[n, 1, c] + ...: one thread per element of dshift.
template <class T, class Acc>
__global__ void sample_shift_backward_kernel(const T* dy, Acc* dshift, std::int64_t count,
                                             std::int64_t positions, std::int64_t channels) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += stride) {
    const std::int64_t c = e % channels, n = e / channels;
    Acc sum = 0;
    for (std::int64_t p = 0; p < positions; ++p)
      sum += static_cast<Acc>(dy[(n * positions + p) * channels + c]);
    dshift[e] = sum;
  }
}

}  // namespace detail

/// @brief y[n, p, c] = x[n, p, c] + shift[n, c], added in the accumulate type, rounded once.
/// @param x activations [N, ..., C]
/// @param shift [N, C], in x's type
/// @param y the output, x's shape (may be x itself)
/// @throws mpx::shape_error naming the operand unless shift is [N, C] and y has x's shape.
template <FloatingElement T>
void add_sample_shift(const Tensor<T, Cuda>& x, const Tensor<T, Cuda>& shift, Tensor<T, Cuda>& y) {
  constexpr const char* where = "mpx::cuda::add_sample_shift";
  const std::int64_t positions = sample_shift_positions(where, x.shape(), shift.shape());
  require_shape(where, "y", y.shape(), x.shape());
  const std::int64_t count = x.numel();
  if (count == 0) return;
  detail::add_sample_shift_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                    detail::stream()>>>(x.data(), shift.data(), y.data(), count, positions,
                                                        x.shape().cols());
  MPX_CUDA_CHECK_LAUNCH("add_sample_shift_kernel");
}

/// @brief dshift[n, c] = the sum over positions p of dy[n, p, c], in the accumulate type, in
/// position order; written, not accumulated.
/// @param dy upstream gradient [N, ..., C]
/// @param dshift [N, C] in dy's accumulate type
/// @throws mpx::shape_error unless dshift is [N, C].
template <FloatingElement T>
void sample_shift_backward(const Tensor<T, Cuda>& dy, Tensor<accumulate_t<T>, Cuda>& dshift) {
  constexpr const char* where = "mpx::cuda::sample_shift_backward";
  const std::int64_t positions = sample_shift_positions(where, dy.shape(), dshift.shape());
  const std::int64_t count = dshift.numel();
  if (count == 0) return;
  detail::sample_shift_backward_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                         detail::stream()>>>(dy.data(), dshift.data(), count, positions,
                                                             dy.shape().cols());
  MPX_CUDA_CHECK_LAUNCH("sample_shift_backward_kernel");
}

}  // namespace mpx::cuda
