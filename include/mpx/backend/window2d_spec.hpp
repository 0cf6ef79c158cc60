// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Size2d` and `Window2d`: how a 2-D window (a convolution's kernel, a pooling window) moves
/// over an image, and the output size that gives, PyTorch's formula; shared by the convolution and
/// pooling contracts (conv2d_spec.hpp, pool2d_spec.hpp).

#include <cstdint>
#include <string_view>

#include "mpx/error.hpp"

namespace mpx {

/// @brief A height and a width: a kernel size, stride, padding or dilation. One value means both
/// (`Size2d{3}` is 3 x 3), as PyTorch's `kernel_size=3` does.
struct Size2d {
  std::int64_t h = 0;  ///< along the height (rows)
  std::int64_t w = 0;  ///< along the width (columns)

  constexpr Size2d() = default;
  /// @brief Both extents `both` (implicit, so that `3` reads as 3 x 3 where a `Size2d` is expected).
  constexpr Size2d(std::int64_t both) noexcept : h(both), w(both) {}  // NOLINT(google-explicit-constructor)
  /// @brief Height `height`, width `width`.
  constexpr Size2d(std::int64_t height, std::int64_t width) noexcept : h(height), w(width) {}
  /// @brief Equal when both extents are.
  constexpr bool operator==(const Size2d&) const = default;
};

/// @brief A window of `kernel` taps moved by `stride` over an input padded by `padding` on each
/// side, its taps `dilation` apart.
struct Window2d {
  Size2d kernel;       ///< KH, KW
  Size2d stride{1};    ///< rows and columns between two outputs' windows
  Size2d padding{0};   ///< rows and columns added on each side
  Size2d dilation{1};  ///< rows and columns between two taps

  /// @brief Extent of the dilated window along one dimension: dilation (k - 1) + 1.
  [[nodiscard]] static constexpr std::int64_t span(std::int64_t kernel, std::int64_t dilation) noexcept {
    return dilation * (kernel - 1) + 1;
  }
  /// @brief The output size for an input of `input`: floor((H + 2 p - d (k - 1) - 1) / s) + 1 per
  /// dimension (PyTorch's formula; 0 or negative where the window does not fit).
  [[nodiscard]] constexpr Size2d output(Size2d input) const noexcept {
    return {floor_div(input.h + 2 * padding.h - span(kernel.h, dilation.h), stride.h) + 1,
            floor_div(input.w + 2 * padding.w - span(kernel.w, dilation.w), stride.w) + 1};
  }
  /// @brief Input index along one dimension that output `out` reads through tap `tap`: out s - p + tap d.
  [[nodiscard]] static constexpr std::int64_t input_index(std::int64_t out, std::int64_t tap,
                                                          std::int64_t stride, std::int64_t padding,
                                                          std::int64_t dilation) noexcept {
    return out * stride - padding + tap * dilation;
  }

  /// @brief The output index along one dimension whose window reads input index `in` through tap
  /// `tap` (the inverse of `input_index`), or -1 when none does: the stride does not divide
  /// in + p - tap d, or the index is outside [0, extent).
  [[nodiscard]] static constexpr std::int64_t output_index(std::int64_t in, std::int64_t tap,
                                                           std::int64_t stride, std::int64_t padding,
                                                           std::int64_t dilation,
                                                           std::int64_t extent) noexcept {
    const std::int64_t offset = in + padding - tap * dilation;
    if (offset < 0 || offset % stride != 0) return -1;
    return offset / stride < extent ? offset / stride : -1;
  }

  /// @brief The input row output row `oh` reads through kernel row `kh` (may lie in the padding).
  [[nodiscard]] constexpr std::int64_t input_row(std::int64_t oh, std::int64_t kh) const noexcept {
    return input_index(oh, kh, stride.h, padding.h, dilation.h);
  }
  /// @brief The input column output column `ow` reads through kernel column `kw`.
  [[nodiscard]] constexpr std::int64_t input_column(std::int64_t ow, std::int64_t kw) const noexcept {
    return input_index(ow, kw, stride.w, padding.w, dilation.w);
  }
  /// @brief The output row (of `rows`) that reads input row `h` through kernel row `kh`, or -1.
  [[nodiscard]] constexpr std::int64_t output_row(std::int64_t h, std::int64_t kh,
                                                  std::int64_t rows) const noexcept {
    return output_index(h, kh, stride.h, padding.h, dilation.h, rows);
  }
  /// @brief The output column (of `columns`) that reads input column `w` through kernel column `kw`, or -1.
  [[nodiscard]] constexpr std::int64_t output_column(std::int64_t w, std::int64_t kw,
                                                     std::int64_t columns) const noexcept {
    return output_index(w, kw, stride.w, padding.w, dilation.w, columns);
  }

  /// @brief Throws `mpx::invalid_argument` naming `where` and the values unless the kernel, stride
  /// and dilation are positive and the padding is not negative.
  void check(std::string_view where, std::string_view kernel_name = "kernel_size") const {
    const auto fail = [&](auto&&... what) { throw invalid_argument(detail::concat(where, ": ", what...)); };
    if (kernel.h <= 0 || kernel.w <= 0)
      fail(kernel_name, " ", kernel.h, " x ", kernel.w, " must be positive");
    if (stride.h <= 0 || stride.w <= 0) fail("stride ", stride.h, " x ", stride.w, " must be positive");
    if (dilation.h <= 0 || dilation.w <= 0) {
      fail("dilation ", dilation.h, " x ", dilation.w, " must be positive");
    }
    if (padding.h < 0 || padding.w < 0)
      fail("padding ", padding.h, " x ", padding.w, " must not be negative");
  }

 private:
  static constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
  }
};

}  // namespace mpx
