// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief 2-D pooling on the GPU (backend/pool2d_spec.hpp), with mpx::cpu's pool2d contracts and the
/// same bits: one thread per output element, every sum in the accumulate type over the CPU's terms in
/// the CPU's order, rounded once.
///
/// The backward passes gather instead of scattering, so that no two threads write one element and
/// nothing needs an atomic: each input element walks the windows that contain it. Max pooling's
/// backward finds, for each such window, the tap forward took (recomputed with the CPU's rule: the
/// first largest in (kh, kw) order, a later NaN replacing it) and adds dy where that tap is this
/// element, the windows in the CPU's (oh, ow) order; average pooling's adds dy / divisor over the
/// windows in the CPU's (kh, kw) order.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/pool2d.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cmath>
#include <cstdint>
#include <limits>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/pool2d_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

/// Pixel and channel of element `i` of a channels-last [N, rows, columns, C] tensor.
struct PixelIndex {
  std::int64_t n, row, column, channel;
};

/// Splits a flat channels-last index.
MPX_HOST_DEVICE inline PixelIndex pixel_index(std::int64_t i, std::int64_t rows, std::int64_t columns,
                                              std::int64_t channels) {
  PixelIndex p;
  p.channel = i % channels;
  i /= channels;
  p.column = i % columns;
  i /= columns;
  p.row = i % rows;
  p.n = i / rows;
  return p;
}

/// The divisor of output (oh, ow)'s average: the kernel's area, or the taps inside the image.
template <class Acc>
MPX_HOST_DEVICE Acc pool_divisor(const Pool2dGeometry& g, bool count_include_pad, std::int64_t oh,
                                 std::int64_t ow) {
  return static_cast<Acc>(count_include_pad ? g.window.kernel.h * g.window.kernel.w : g.taps_inside(oh, ow));
}

/// Where the tap forward takes for one channel of one output lies, and its value.
template <class Acc>
struct MaxTap {
  Acc value;         ///< the largest tap (NaN when one is NaN; -inf when the window has no tap)
  std::int64_t row;  ///< its input row, or -1 when the window has no tap inside the image
  std::int64_t column;
};

/// The tap max pooling takes for channel k of output (n, oh, ow), by mpx::cpu's rule: the first
/// largest in (kh, kw) order, a later NaN replacing it (the last NaN is taken), a window of -inf
/// alone taking its first tap.
template <class T>
MPX_HOST_DEVICE MaxTap<accumulate_t<T>> max_tap(const T* x, const Pool2dGeometry& g, std::int64_t n,
                                                std::int64_t oh, std::int64_t ow, std::int64_t k) {
  using Acc = accumulate_t<T>;
  const Window2d& win = g.window;
  MaxTap<Acc> best{-std::numeric_limits<Acc>::infinity(), -1, -1};
  for (std::int64_t kh = 0; kh < win.kernel.h; ++kh) {
    const std::int64_t h = win.input_row(oh, kh);
    if (h < 0 || h >= g.input.h) continue;
    for (std::int64_t kw = 0; kw < win.kernel.w; ++kw) {
      const std::int64_t w = win.input_column(ow, kw);
      if (w < 0 || w >= g.input.w) continue;
      const Acc v = static_cast<Acc>(x[((n * g.input.h + h) * g.input.w + w) * g.channels + k]);
      if (v > best.value || std::isnan(v) || best.row < 0) best = {v, h, w};
    }
  }
  return best;
}

// The per-element math of the pooling kernels, on both sides so that it can be checked on a host.

/// Max pooling's output element i (of y [N, OH, OW, C]): the tap max_tap takes.
template <class T>
MPX_HOST_DEVICE accumulate_t<T> max_pool2d_output(const T* x, const Pool2dGeometry& g, std::int64_t i) {
  const Size2d out = g.output();
  const PixelIndex o = pixel_index(i, out.h, out.w, g.channels);
  return max_tap(x, g, o.n, o.row, o.column, o.channel).value;
}

/// Max pooling's input gradient element i (of dx [N, H, W, C]): the sum of dy over the windows whose
/// max_tap is this pixel, in (oh, ow) order, the order in which the CPU's scatter adds them.
template <class T>
MPX_HOST_DEVICE accumulate_t<T> max_pool2d_input_gradient(const T* x, const T* dy, const Pool2dGeometry& g,
                                                          std::int64_t i) {
  using Acc = accumulate_t<T>;
  const Size2d out = g.output();
  const Window2d& win = g.window;
  const PixelIndex p = pixel_index(i, g.input.h, g.input.w, g.channels);
  Acc sum = 0;
  // A larger kernel row means an earlier output row: kh and kw descending visit (oh, ow) ascending.
  for (std::int64_t kh = win.kernel.h - 1; kh >= 0; --kh) {
    const std::int64_t oh = win.output_row(p.row, kh, out.h);
    if (oh < 0) continue;
    for (std::int64_t kw = win.kernel.w - 1; kw >= 0; --kw) {
      const std::int64_t ow = win.output_column(p.column, kw, out.w);
      if (ow < 0) continue;
      const MaxTap<Acc> taken = max_tap(x, g, p.n, oh, ow, p.channel);
      if (taken.row == p.row && taken.column == p.column) {
        sum += static_cast<Acc>(dy[((p.n * out.h + oh) * out.w + ow) * g.channels + p.channel]);
      }
    }
  }
  return sum;
}

/// Average pooling's output element i: the window's taps summed in (kh, kw) order, / divisor.
template <class T>
MPX_HOST_DEVICE accumulate_t<T> avg_pool2d_output(const T* x, const Pool2dGeometry& g, bool count_include_pad,
                                                  std::int64_t i) {
  using Acc = accumulate_t<T>;
  const Size2d out = g.output();
  const Window2d& win = g.window;
  const PixelIndex o = pixel_index(i, out.h, out.w, g.channels);
  Acc sum = 0;
  for (std::int64_t kh = 0; kh < win.kernel.h; ++kh) {
    const std::int64_t h = win.input_row(o.row, kh);
    if (h < 0 || h >= g.input.h) continue;
    for (std::int64_t kw = 0; kw < win.kernel.w; ++kw) {
      const std::int64_t w = win.input_column(o.column, kw);
      if (w < 0 || w >= g.input.w) continue;
      sum += static_cast<Acc>(x[((o.n * g.input.h + h) * g.input.w + w) * g.channels + o.channel]);
    }
  }
  return sum / pool_divisor<Acc>(g, count_include_pad, o.row, o.column);
}

/// Average pooling's input gradient element i: dy / divisor summed over the windows that contain the
/// pixel, in (kh, kw) order as the CPU.
template <class T>
MPX_HOST_DEVICE accumulate_t<T> avg_pool2d_input_gradient(const T* dy, const Pool2dGeometry& g,
                                                          bool count_include_pad, std::int64_t i) {
  using Acc = accumulate_t<T>;
  const Size2d out = g.output();
  const Window2d& win = g.window;
  const PixelIndex p = pixel_index(i, g.input.h, g.input.w, g.channels);
  Acc sum = 0;
  for (std::int64_t kh = 0; kh < win.kernel.h; ++kh) {
    const std::int64_t oh = win.output_row(p.row, kh, out.h);
    if (oh < 0) continue;
    for (std::int64_t kw = 0; kw < win.kernel.w; ++kw) {
      const std::int64_t ow = win.output_column(p.column, kw, out.w);
      if (ow < 0) continue;
      sum += static_cast<Acc>(dy[((p.n * out.h + oh) * out.w + ow) * g.channels + p.channel]) /
             pool_divisor<Acc>(g, count_include_pad, oh, ow);
    }
  }
  return sum;
}

// One thread per output element.
template <class T>
__global__ void max_pool2d_forward_kernel(const T* x, T* y, std::int64_t count, Pool2dGeometry g) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    y[i] = round_to<tag_of_t<T>>(max_pool2d_output(x, g, i));
}

// One thread per input element: a gather.
template <class T>
__global__ void max_pool2d_backward_kernel(const T* x, const T* dy, T* dx, std::int64_t count,
                                           Pool2dGeometry g) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    dx[i] = round_to<tag_of_t<T>>(max_pool2d_input_gradient(x, dy, g, i));
}

// One thread per output element.
template <class T>
__global__ void avg_pool2d_forward_kernel(const T* x, T* y, std::int64_t count, Pool2dGeometry g,
                                          bool count_include_pad) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    y[i] = round_to<tag_of_t<T>>(avg_pool2d_output(x, g, count_include_pad, i));
}

// One thread per input element: a gather.
template <class T>
__global__ void avg_pool2d_backward_kernel(const T* dy, T* dx, std::int64_t count, Pool2dGeometry g,
                                           bool count_include_pad) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    dx[i] = round_to<tag_of_t<T>>(avg_pool2d_input_gradient(dy, g, count_include_pad, i));
}

// y[n, k] = (sum over the image's pixels in order of x[n, ., ., k]) / pixels; `count` = N C.
template <class T>
__global__ void global_avg_pool2d_forward_kernel(const T* x, T* y, std::int64_t count, std::int64_t pixels,
                                                 std::int64_t channels) {
  using Acc = accumulate_t<T>;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t image = i / channels, k = i % channels;
    const T* in = x + image * pixels * channels + k;
    Acc sum = 0;
    for (std::int64_t p = 0; p < pixels; ++p) sum += static_cast<Acc>(in[p * channels]);
    y[i] = round_to<tag_of_t<T>>(sum / static_cast<Acc>(pixels));
  }
}

// dx[n, h, w, k] = dy[n, k] / pixels; `count` elements of dx.
template <class T>
__global__ void global_avg_pool2d_backward_kernel(const T* dy, T* dx, std::int64_t count, std::int64_t pixels,
                                                  std::int64_t channels) {
  using Acc = accumulate_t<T>;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t k = i % channels, image = i / (channels * pixels);
    dx[i] = round_to<tag_of_t<T>>(static_cast<Acc>(dy[image * channels + k]) / static_cast<Acc>(pixels));
  }
}

/// Checks the input and output shapes as mpx::cpu::detail::check_pool2d_tensors does.
inline void check_pool2d_tensors(const char* where, const Pool2dGeometry& g, const Shape& x, const Shape& y) {
  require_shape(where, "input", x, g.input_shape());
  require_shape(where, "output", y, g.output_shape());
}

}  // namespace detail

/// @brief y = the largest tap of each window (NaN when a tap is NaN), exact.
/// @param x [N, H, W, C]; @param y [N, OH, OW, C], written; @param g the sizes and the window.
template <FloatingElement T>
void max_pool2d_forward(const Tensor<T, Cuda>& x, Tensor<T, Cuda>& y, const Pool2dGeometry& g) {
  detail::check_pool2d_tensors("mpx::cuda::max_pool2d_forward", g, x.shape(), y.shape());
  const std::int64_t count = y.numel();
  if (count == 0) return;
  detail::max_pool2d_forward_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                      detail::stream()>>>(x.data(), y.data(), count, g);
  MPX_CUDA_CHECK_LAUNCH("max_pool2d_forward_kernel");
}

/// @brief dx = dy sent to the first largest tap of each window (the tap forward took), the
/// contributions of overlapping windows summed in the accumulate type and rounded once.
/// @param x the forward's input [N, H, W, C]; @param dy [N, OH, OW, C]; @param dx [N, H, W, C], written;
/// @param g the sizes and the window.
template <FloatingElement T>
void max_pool2d_backward(const Tensor<T, Cuda>& x, const Tensor<T, Cuda>& dy, Tensor<T, Cuda>& dx,
                         const Pool2dGeometry& g) {
  constexpr const char* where = "mpx::cuda::max_pool2d_backward";
  detail::check_pool2d_tensors(where, g, x.shape(), dy.shape());
  require_shape(where, "input gradient", dx.shape(), g.input_shape());
  const std::int64_t count = dx.numel();
  if (count == 0) return;
  detail::max_pool2d_backward_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                       detail::stream()>>>(x.data(), dy.data(), dx.data(), count, g);
  MPX_CUDA_CHECK_LAUNCH("max_pool2d_backward_kernel");
}

/// @brief y = (sum of each window's taps) / divisor, in the accumulate type, rounded once; the
/// divisor is the kernel's area when `count_include_pad`, else the taps inside the image.
template <FloatingElement T>
void avg_pool2d_forward(const Tensor<T, Cuda>& x, Tensor<T, Cuda>& y, const Pool2dGeometry& g,
                        bool count_include_pad) {
  detail::check_pool2d_tensors("mpx::cuda::avg_pool2d_forward", g, x.shape(), y.shape());
  const std::int64_t count = y.numel();
  if (count == 0) return;
  detail::avg_pool2d_forward_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                      detail::stream()>>>(x.data(), y.data(), count, g, count_include_pad);
  MPX_CUDA_CHECK_LAUNCH("avg_pool2d_forward_kernel");
}

/// @brief dx[pixel] = the sum, over the windows that contain the pixel, of dy / that window's
/// divisor: one accumulate-type sum per element, rounded once.
template <FloatingElement T>
void avg_pool2d_backward(const Tensor<T, Cuda>& dy, Tensor<T, Cuda>& dx, const Pool2dGeometry& g,
                         bool count_include_pad) {
  detail::check_pool2d_tensors("mpx::cuda::avg_pool2d_backward", g, dx.shape(), dy.shape());
  const std::int64_t count = dx.numel();
  if (count == 0) return;
  detail::avg_pool2d_backward_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                       detail::stream()>>>(dy.data(), dx.data(), count, g, count_include_pad);
  MPX_CUDA_CHECK_LAUNCH("avg_pool2d_backward_kernel");
}

/// @brief y[n, c] = the mean of x[n, ., ., c] over the image, in the accumulate type, rounded once.
/// One thread per (n, c) sums the pixels in order, as the CPU: the same bits.
/// @param x [N, H, W, C]; @param y [N, C], written.
template <FloatingElement T>
void global_avg_pool2d_forward(const Tensor<T, Cuda>& x, Tensor<T, Cuda>& y) {
  const GlobalPool2dShape shape = validate_global_avg_pool2d("mpx::cuda::global_avg_pool2d_forward",
                                                             "an input", x.shape(), "output", y.shape());
  const std::int64_t count = y.numel();
  if (count == 0) return;
  detail::global_avg_pool2d_forward_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads,
                                             0, detail::stream()>>>(x.data(), y.data(), count, shape.pixels,
                                                                    shape.channels);
  MPX_CUDA_CHECK_LAUNCH("global_avg_pool2d_forward_kernel");
}

/// @brief dx[n, h, w, c] = dy[n, c] / (H W), rounded once.
/// @param dy [N, C]; @param dx [N, H, W, C], written.
template <FloatingElement T>
void global_avg_pool2d_backward(const Tensor<T, Cuda>& dy, Tensor<T, Cuda>& dx) {
  const GlobalPool2dShape shape = validate_global_avg_pool2d("mpx::cuda::global_avg_pool2d_backward", "dx",
                                                             dx.shape(), "upstream gradient", dy.shape());
  const std::int64_t count = dx.numel();
  if (count == 0) return;
  detail::global_avg_pool2d_backward_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads,
                                              0, detail::stream()>>>(dy.data(), dx.data(), count,
                                                                     shape.pixels, shape.channels);
  MPX_CUDA_CHECK_LAUNCH("global_avg_pool2d_backward_kernel");
}

}  // namespace mpx::cuda
