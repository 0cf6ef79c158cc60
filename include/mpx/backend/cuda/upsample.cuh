// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Nearest-neighbour upsampling of channels-last images by integer factors on the GPU, with
/// mpx::cpu::upsample_nearest_*'s contracts: y[n, h, w, c] = x[n, h / sh, w / sw, c] (a copy, exact);
/// backward sums each sh x sw block of dy in the accumulate type, in the CPU's order (block rows,
/// then columns), rounded once, so both give the same bits. One thread per output element: the
/// backward gathers, it never scatters.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/upsample.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/window2d_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// y [n, h sh, w sw, c] from x [n, h, w, c]; `count` elements of y.
template <class T>
__global__ void upsample_nearest_forward_kernel(const T* x, T* y, std::int64_t count, std::int64_t h,
                                                std::int64_t w, std::int64_t c, Size2d scale) {
  const std::int64_t out_h = h * scale.h, out_w = w * scale.w;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t k = i % c;
    const std::int64_t ow = (i / c) % out_w;
    const std::int64_t oh = (i / (c * out_w)) % out_h;
    const std::int64_t n = i / (c * out_w * out_h);
    y[i] = x[((n * h + oh / scale.h) * w + ow / scale.w) * c + k];
  }
}

// dx [n, h, w, c] = the sum of each sh x sw block of dy [n, h sh, w sw, c]; `count` elements of dx.
template <class T>
__global__ void upsample_nearest_backward_kernel(const T* dy, T* dx, std::int64_t count, std::int64_t h,
                                                 std::int64_t w, std::int64_t c, Size2d scale) {
  using Acc = accumulate_t<T>;
  const std::int64_t out_w = w * scale.w;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t k = i % c;
    const std::int64_t iw = (i / c) % w;
    const std::int64_t row = i / (c * w);  // n h + ih
    const std::int64_t image = row / h, ih = row % h;
    Acc sum = 0;
    for (std::int64_t a = 0; a < scale.h; ++a) {
      for (std::int64_t b = 0; b < scale.w; ++b) {
        sum += static_cast<Acc>(
            dy[((image * h * scale.h + ih * scale.h + a) * out_w + iw * scale.w + b) * c + k]);
      }
    }
    dx[i] = round_to<tag_of_t<T>>(sum);
  }
}

}  // namespace detail

/// @brief y [N, H sh, W sw, C] from x [N, H, W, C]: every pixel repeated sh x sw times.
/// @throws mpx::shape_error unless x has rank 4 and y the upsampled shape.
template <FloatingElement T>
void upsample_nearest_forward(const Tensor<T, Cuda>& x, Tensor<T, Cuda>& y, Size2d scale) {
  constexpr const char* where = "mpx::cuda::upsample_nearest_forward";
  if (x.rank() != 4)
    throw shape_error(mpx::detail::concat(where, ": expected x [N, H, W, C], received ", x.shape()));
  const std::int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  require_shape(where, "y", y.shape(), Shape{n, h * scale.h, w * scale.w, c});
  const std::int64_t count = y.numel();
  if (count == 0) return;
  detail::upsample_nearest_forward_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                            detail::stream()>>>(x.data(), y.data(), count, h, w, c, scale);
  MPX_CUDA_CHECK_LAUNCH("upsample_nearest_forward_kernel");
}

/// @brief dx [N, H, W, C] = the sum of each sh x sw block of dy [N, H sh, W sw, C].
/// @throws mpx::shape_error unless dx has rank 4 and dy the upsampled shape.
template <FloatingElement T>
void upsample_nearest_backward(const Tensor<T, Cuda>& dy, Tensor<T, Cuda>& dx, Size2d scale) {
  constexpr const char* where = "mpx::cuda::upsample_nearest_backward";
  if (dx.rank() != 4)
    throw shape_error(mpx::detail::concat(where, ": expected dx [N, H, W, C], received ", dx.shape()));
  const std::int64_t n = dx.shape()[0], h = dx.shape()[1], w = dx.shape()[2], c = dx.shape()[3];
  require_shape(where, "dy", dy.shape(), Shape{n, h * scale.h, w * scale.w, c});
  const std::int64_t count = dx.numel();
  if (count == 0) return;
  detail::upsample_nearest_backward_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads,
                                             0, detail::stream()>>>(dy.data(), dx.data(), count, h, w, c,
                                                                    scale);
  MPX_CUDA_CHECK_LAUNCH("upsample_nearest_backward_kernel");
}

}  // namespace mpx::cuda
