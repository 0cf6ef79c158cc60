// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief 2-D pooling on the CPU (backend/pool2d_spec.hpp): loops over output rows with vector code
/// across the channels (the channels-last layout keeps a pixel's channels together); every sum in the
/// accumulate type, rounded once. Results do not depend on the number of threads: each element is
/// computed by one thread in a fixed order.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/pool2d_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

namespace detail {

inline void check_pool2d_tensors(const char* where, const Pool2dGeometry& g, const Shape& x, const Shape& y) {
  require_shape(where, "input", x, g.input_shape());
  require_shape(where, "output", y, g.output_shape());
}

// Calls visit(n, oh, ow, y_row) for every output pixel, image rows in parallel.
template <class Visit>
void for_each_output_pixel(const Pool2dGeometry& g, const Visit& visit) {
  const Size2d out = g.output();
  parallel_for_chunks(g.batch * out.h, rows_per_chunk(out.w * g.channels),
                      [&](std::int64_t begin, std::int64_t end) {
                        for (std::int64_t row = begin; row < end; ++row) {
                          for (std::int64_t ow = 0; ow < out.w; ++ow) visit(row / out.h, row % out.h, ow);
                        }
                      });
}

}  // namespace detail

/// @brief y = the largest tap of each window (NaN when a tap is NaN), exact.
/// @param x [N, H, W, C]; @param y [N, OH, OW, C], written; @param g the sizes and the window.
template <FloatingElement T>
void max_pool2d_forward(const Tensor<T, Host>& x, Tensor<T, Host>& y, const Pool2dGeometry& g) {
  detail::check_pool2d_tensors("mpx::cpu::max_pool2d_forward", g, x.shape(), y.shape());
  using Acc = accumulate_t<T>;
  const Size2d out = g.output();
  const Window2d& win = g.window;
  const std::int64_t c = g.channels;
  detail::for_each_output_pixel(g, [&](std::int64_t n, std::int64_t oh, std::int64_t ow) {
    std::vector<Acc> best(static_cast<std::size_t>(c), -std::numeric_limits<Acc>::infinity());
    for (std::int64_t kh = 0; kh < win.kernel.h; ++kh) {
      const std::int64_t h = win.input_row(oh, kh);
      if (h < 0 || h >= g.input.h) continue;
      for (std::int64_t kw = 0; kw < win.kernel.w; ++kw) {
        const std::int64_t w = win.input_column(ow, kw);
        if (w < 0 || w >= g.input.w) continue;
        const T* pixel = x.data() + ((n * g.input.h + h) * g.input.w + w) * c;
        for (std::int64_t k = 0; k < c; ++k) {
          const Acc v = static_cast<Acc>(pixel[k]);
          Acc& b = best[static_cast<std::size_t>(k)];
          if (v > b || std::isnan(v)) b = v;  // PyTorch's rule: a NaN tap makes the result NaN
        }
      }
    }
    T* dst = y.data() + ((n * out.h + oh) * out.w + ow) * c;
    for (std::int64_t k = 0; k < c; ++k) dst[k] = static_cast<T>(best[static_cast<std::size_t>(k)]);
  });
}

/// @brief dx = dy sent to the first largest tap of each window (the tap forward took), the
/// contributions of overlapping windows summed in the accumulate type and rounded once.
/// @param x the forward's input [N, H, W, C]; @param dy [N, OH, OW, C]; @param dx [N, H, W, C], written;
/// @param g the sizes and the window.
template <FloatingElement T>
void max_pool2d_backward(const Tensor<T, Host>& x, const Tensor<T, Host>& dy, Tensor<T, Host>& dx,
                         const Pool2dGeometry& g) {
  constexpr const char* where = "mpx::cpu::max_pool2d_backward";
  detail::check_pool2d_tensors(where, g, x.shape(), dy.shape());
  require_shape(where, "input gradient", dx.shape(), g.input_shape());
  using Acc = accumulate_t<T>;
  const Size2d out = g.output();
  const Window2d& win = g.window;
  const std::int64_t c = g.channels;
  const std::int64_t image = g.input.h * g.input.w * c;
  // Windows overlap only within an image: images in parallel, each into its own accumulator.
  parallel_for_chunks(g.batch, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<Acc> sums(static_cast<std::size_t>(image));
    std::vector<Acc> best(static_cast<std::size_t>(c));
    std::vector<std::int64_t> where_best(static_cast<std::size_t>(c));
    for (std::int64_t n = begin; n < end; ++n) {
      std::fill(sums.begin(), sums.end(), Acc(0));
      const T* x_image = x.data() + n * image;
      for (std::int64_t oh = 0; oh < out.h; ++oh) {
        for (std::int64_t ow = 0; ow < out.w; ++ow) {
          std::fill(best.begin(), best.end(), -std::numeric_limits<Acc>::infinity());
          std::fill(where_best.begin(), where_best.end(), std::int64_t{-1});
          for (std::int64_t kh = 0; kh < win.kernel.h; ++kh) {
            const std::int64_t h = win.input_row(oh, kh);
            if (h < 0 || h >= g.input.h) continue;
            for (std::int64_t kw = 0; kw < win.kernel.w; ++kw) {
              const std::int64_t w = win.input_column(ow, kw);
              if (w < 0 || w >= g.input.w) continue;
              const std::int64_t pixel = (h * g.input.w + w) * c;
              for (std::int64_t k = 0; k < c; ++k) {
                const Acc v = static_cast<Acc>(x_image[pixel + k]);
                const auto i = static_cast<std::size_t>(k);
                // PyTorch's rule: the first largest tap, a later NaN replacing it (the last NaN is
                // taken); a window of -inf alone takes its first tap.
                if (v > best[i] || std::isnan(v) || where_best[i] < 0) {
                  best[i] = v;
                  where_best[i] = pixel + k;
                }
              }
            }
          }
          const T* g_row = dy.data() + ((n * out.h + oh) * out.w + ow) * c;
          for (std::int64_t k = 0; k < c; ++k) {
            sums[static_cast<std::size_t>(where_best[static_cast<std::size_t>(k)])] +=
                static_cast<Acc>(g_row[k]);
          }
        }
      }
      T* dx_image = dx.data() + n * image;
      for (std::int64_t i = 0; i < image; ++i)
        dx_image[i] = round_to<tag_of_t<T>>(sums[static_cast<std::size_t>(i)]);
    }
  });
}

/// @brief y = (sum of each window's taps) / divisor, in the accumulate type, rounded once; the
/// divisor is the kernel's area when `count_include_pad`, else the taps inside the image.
template <FloatingElement T>
void avg_pool2d_forward(const Tensor<T, Host>& x, Tensor<T, Host>& y, const Pool2dGeometry& g,
                        bool count_include_pad) {
  detail::check_pool2d_tensors("mpx::cpu::avg_pool2d_forward", g, x.shape(), y.shape());
  using Acc = accumulate_t<T>;
  const Size2d out = g.output();
  const Window2d& win = g.window;
  const std::int64_t c = g.channels;
  detail::for_each_output_pixel(g, [&](std::int64_t n, std::int64_t oh, std::int64_t ow) {
    std::vector<Acc> sum(static_cast<std::size_t>(c), Acc(0));
    for (std::int64_t kh = 0; kh < win.kernel.h; ++kh) {
      const std::int64_t h = win.input_row(oh, kh);
      if (h < 0 || h >= g.input.h) continue;
      for (std::int64_t kw = 0; kw < win.kernel.w; ++kw) {
        const std::int64_t w = win.input_column(ow, kw);
        if (w < 0 || w >= g.input.w) continue;
        const T* pixel = x.data() + ((n * g.input.h + h) * g.input.w + w) * c;
        for (std::int64_t k = 0; k < c; ++k) sum[static_cast<std::size_t>(k)] += static_cast<Acc>(pixel[k]);
      }
    }
    const Acc divisor =
        static_cast<Acc>(count_include_pad ? win.kernel.h * win.kernel.w : g.taps_inside(oh, ow));
    T* dst = y.data() + ((n * out.h + oh) * out.w + ow) * c;
    for (std::int64_t k = 0; k < c; ++k)
      dst[k] = round_to<tag_of_t<T>>(sum[static_cast<std::size_t>(k)] / divisor);
  });
}

/// @brief dx[pixel] = the sum, over the windows that contain the pixel, of dy / that window's
/// divisor: one accumulate-type sum per element, rounded once.
template <FloatingElement T>
void avg_pool2d_backward(const Tensor<T, Host>& dy, Tensor<T, Host>& dx, const Pool2dGeometry& g,
                         bool count_include_pad) {
  constexpr const char* where = "mpx::cpu::avg_pool2d_backward";
  detail::check_pool2d_tensors(where, g, dx.shape(), dy.shape());
  using Acc = accumulate_t<T>;
  const Size2d out = g.output();
  const Window2d& win = g.window;
  const std::int64_t c = g.channels;
  parallel_for_chunks(
      g.batch * g.input.h, rows_per_chunk(g.input.w * c), [&](std::int64_t begin, std::int64_t end) {
        std::vector<Acc> sum(static_cast<std::size_t>(c));
        for (std::int64_t row = begin; row < end; ++row) {
          const std::int64_t n = row / g.input.h, h = row % g.input.h;
          for (std::int64_t w = 0; w < g.input.w; ++w) {
            std::fill(sum.begin(), sum.end(), Acc(0));
            for (std::int64_t kh = 0; kh < win.kernel.h; ++kh) {
              const std::int64_t oh = win.output_row(h, kh, out.h);
              if (oh < 0) continue;
              for (std::int64_t kw = 0; kw < win.kernel.w; ++kw) {
                const std::int64_t ow = win.output_column(w, kw, out.w);
                if (ow < 0) continue;
                const Acc divisor =
                    static_cast<Acc>(count_include_pad ? win.kernel.h * win.kernel.w : g.taps_inside(oh, ow));
                const T* g_pixel = dy.data() + ((n * out.h + oh) * out.w + ow) * c;
                for (std::int64_t k = 0; k < c; ++k)
                  sum[static_cast<std::size_t>(k)] += static_cast<Acc>(g_pixel[k]) / divisor;
              }
            }
            T* dst = dx.data() + ((n * g.input.h + h) * g.input.w + w) * c;
            for (std::int64_t k = 0; k < c; ++k)
              dst[k] = round_to<tag_of_t<T>>(sum[static_cast<std::size_t>(k)]);
          }
        }
      });
}

/// @brief y[n, c] = the mean of x[n, ., ., c] over the image, in the accumulate type, rounded once.
/// @param x [N, H, W, C]; @param y [N, C], written.
template <FloatingElement T>
void global_avg_pool2d_forward(const Tensor<T, Host>& x, Tensor<T, Host>& y) {
  const auto [n, pixels, c] = validate_global_avg_pool2d("mpx::cpu::global_avg_pool2d_forward", "an input",
                                                         x.shape(), "output", y.shape());
  using Acc = accumulate_t<T>;
  const Acc count = static_cast<Acc>(pixels);
  parallel_for_chunks(n, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<Acc> sum(static_cast<std::size_t>(c));
    for (std::int64_t image = begin; image < end; ++image) {
      std::fill(sum.begin(), sum.end(), Acc(0));
      for (std::int64_t p = 0; p < pixels; ++p) {
        const T* pixel = x.data() + (image * pixels + p) * c;
        for (std::int64_t k = 0; k < c; ++k) sum[static_cast<std::size_t>(k)] += static_cast<Acc>(pixel[k]);
      }
      for (std::int64_t k = 0; k < c; ++k)
        y.data()[image * c + k] = round_to<tag_of_t<T>>(sum[static_cast<std::size_t>(k)] / count);
    }
  });
}

/// @brief dx[n, h, w, c] = dy[n, c] / (H W), rounded once.
/// @param dy [N, C]; @param dx [N, H, W, C], written.
template <FloatingElement T>
void global_avg_pool2d_backward(const Tensor<T, Host>& dy, Tensor<T, Host>& dx) {
  const auto [n, pixels, c] = validate_global_avg_pool2d("mpx::cpu::global_avg_pool2d_backward", "dx",
                                                         dx.shape(), "upstream gradient", dy.shape());
  using Acc = accumulate_t<T>;
  const Acc count = static_cast<Acc>(pixels);
  parallel_for_chunks(n * pixels, rows_per_chunk(c), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const T* g = dy.data() + (row / pixels) * c;
      T* dst = dx.data() + row * c;
      for (std::int64_t k = 0; k < c; ++k) dst[k] = round_to<tag_of_t<T>>(static_cast<Acc>(g[k]) / count);
    }
  });
}

}  // namespace mpx::cpu
