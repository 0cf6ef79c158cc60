// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What a 2-D pooling call means on every device: max and average pooling over windows of a
/// channels-last image, x [N, H, W, C] to y [N, OH, OW, C] (OH, OW as `Window2d::output`), and global
/// average pooling, x [N, H, W, C] to y [N, C]. PyTorch's semantics:
///   max      y = the largest tap of the window, the padding never chosen; a NaN tap makes y NaN;
///            backward sends dy to the tap forward took: the first largest in (kh, kw) order, or
///            the last NaN, as PyTorch's CPU kernel does
///   average  y = (sum of the window's taps) / divisor: the kernel's area (`count_include_pad`, the
///            padding counted as zeros) or the taps inside the image; backward spreads dy / divisor
///   global   y[n, c] = the mean of x[n, ., ., c]; backward dx = dy / (H W)
/// Every sum is in the accumulate type, rounded once; the max is exact.

#include <cstdint>
#include <string_view>

#include "mpx/backend/window2d_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief A pooling window over a batch of images: their size and channels and how the window moves.
struct Pool2dGeometry {
  std::int64_t batch = 0;     ///< N
  Size2d input;               ///< H, W
  std::int64_t channels = 0;  ///< C (in and out)
  Window2d window;            ///< kernel, stride, padding, dilation

  /// @brief OH, OW.
  [[nodiscard]] constexpr Size2d output() const noexcept { return window.output(input); }
  /// @brief How many taps of output (oh, ow)'s window lie inside the image (not in the padding): an
  /// average's divisor without `count_include_pad`. Constexpr, so device code calls it too.
  [[nodiscard]] constexpr std::int64_t taps_inside(std::int64_t oh, std::int64_t ow) const noexcept {
    std::int64_t rows = 0, columns = 0;
    for (std::int64_t kh = 0; kh < window.kernel.h; ++kh) {
      const std::int64_t h = window.input_row(oh, kh);
      rows += (h >= 0 && h < input.h) ? 1 : 0;
    }
    for (std::int64_t kw = 0; kw < window.kernel.w; ++kw) {
      const std::int64_t w = window.input_column(ow, kw);
      columns += (w >= 0 && w < input.w) ? 1 : 0;
    }
    return rows * columns;
  }
  /// @brief [N, H, W, C].
  [[nodiscard]] Shape input_shape() const { return Shape{batch, input.h, input.w, channels}; }
  /// @brief [N, OH, OW, C].
  [[nodiscard]] Shape output_shape() const {
    const Size2d out = output();
    return Shape{batch, out.h, out.w, channels};
  }

  /// @brief Throws `mpx::invalid_argument` naming `where` and the values unless the window is valid
  /// (`Window2d::check`) and its padding is at most half the kernel, PyTorch's rule (a window made of
  /// padding alone would have no tap to take).
  void check_settings(std::string_view where) const {
    window.check(where);
    if (2 * window.padding.h > window.kernel.h || 2 * window.padding.w > window.kernel.w) {
      throw invalid_argument(detail::concat(where, ": padding ", window.padding.h, " x ", window.padding.w,
                                            " must be at most half the kernel_size ", window.kernel.h, " x ",
                                            window.kernel.w));
    }
  }

  /// @brief Throws `mpx::shape_error` naming `where` and the shapes unless the input is not empty
  /// and the window fits it once padded.
  void check_input(std::string_view where) const {
    if (batch <= 0 || input.h <= 0 || input.w <= 0 || channels <= 0) {
      throw shape_error(detail::concat(where, ": the input ", input_shape(), " is empty"));
    }
    const Size2d out = output();
    if (out.h <= 0 || out.w <= 0) {
      throw shape_error(detail::concat(where, ": the window ", window.kernel.h, " x ", window.kernel.w,
                                       " is larger than the padded input ", input.h + 2 * window.padding.h,
                                       " x ", input.w + 2 * window.padding.w, " (input ", input_shape(),
                                       "): no output"));
    }
  }
};

/// @brief What a global average pooling sums over: N images of H x W pixels and C channels.
struct GlobalPool2dShape {
  std::int64_t images;    ///< N
  std::int64_t pixels;    ///< H x W
  std::int64_t channels;  ///< C
};

/// @brief The shape of a global average pooling over `image` [N, H, W, C] (the forward's input or the
/// backward's dx) with per-channel means `means` [N, C] (y, or the upstream gradient dy). Throws
/// `mpx::shape_error` naming `where` and `image_name` unless image has rank 4 and means is [N, C].
inline GlobalPool2dShape validate_global_avg_pool2d(const char* where, const char* image_name,
                                                    const Shape& image, const char* means_name,
                                                    const Shape& means) {
  if (image.rank() != 4) {
    throw shape_error(detail::concat(where, ": expected ", image_name, " [N, H, W, C], received ", image));
  }
  const GlobalPool2dShape shape{image[0], image[1] * image[2], image[3]};
  require_shape(where, means_name, means, Shape{shape.images, shape.channels});
  return shape;
}

}  // namespace mpx
