// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Gathering rows on the GPU, and its gradient, with mpx::cpu::gather_rows' and
/// gather_rows_backward's contracts and bits (backend/row_gather_spec.hpp): copies, one thread per
/// element written. The indices are not checked here (a kernel cannot throw): callers check them on
/// the host before they copy them to the device.

#include "mpx/config.hpp"

#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/row_gather.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/row_gather_spec.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// y[m, c] = x[rows[m], c]: element i = m columns + c of y.
template <class T>
__global__ void gather_rows_kernel(const T* x, const std::int32_t* rows, T* y, std::int64_t count,
                                   std::int64_t columns) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t m = i / columns, c = i % columns;
    y[i] = x[static_cast<std::int64_t>(rows[m]) * columns + c];
  }
}

// dx[rows[m], c] = dy[m, c], after dx was zeroed.
template <class T>
__global__ void scatter_rows_kernel(const T* dy, const std::int32_t* rows, T* dx, std::int64_t count,
                                    std::int64_t columns) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t m = i / columns, c = i % columns;
    dx[static_cast<std::int64_t>(rows[m]) * columns + c] = dy[i];
  }
}

}  // namespace detail

/// @brief y[m, :] = x[rows[m], :] over x's matrix view [R, C].
/// @param x    any tensor of rank 2 or more, read as [R, C]
/// @param rows [M] indices in [0, R), checked by the caller
/// @param y    [M, C], written
/// @throws mpx::shape_error naming the operand.
template <Element T>
void gather_rows(const Tensor<T, Cuda>& x, const Tensor<std::int32_t, Cuda>& rows, Tensor<T, Cuda>& y) {
  validate_gather_rows("mpx::cuda::gather_rows", x.shape(), rows.shape(), y.shape());
  const std::int64_t count = y.numel();
  if (count == 0) return;
  detail::gather_rows_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                               detail::stream()>>>(x.data(), rows.data(), y.data(), count, x.shape().cols());
  MPX_CUDA_CHECK_LAUNCH("gather_rows_kernel");
}

/// @brief dx[rows[m], :] = dy[m, :], every other row of dx 0.
/// @param dy   [M, C]
/// @param rows [M] distinct indices in [0, R), the forward's
/// @param dx   x's shape, read as [R, C], written whole
/// @throws mpx::shape_error naming the operand.
template <Element T>
void gather_rows_backward(const Tensor<T, Cuda>& dy, const Tensor<std::int32_t, Cuda>& rows,
                          Tensor<T, Cuda>& dx) {
  validate_gather_rows("mpx::cuda::gather_rows_backward", dx.shape(), rows.shape(), dy.shape());
  dx.set_zero();
  const std::int64_t count = dy.numel();
  if (count == 0) return;
  detail::scatter_rows_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                detail::stream()>>>(dy.data(), rows.data(), dx.data(), count,
                                                    dy.shape().cols());
  MPX_CUDA_CHECK_LAUNCH("scatter_rows_kernel");
}

}  // namespace mpx::cuda
