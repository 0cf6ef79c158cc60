// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What a 2-D convolution call means on every device: the geometry (sizes, stride, padding,
/// dilation, groups), the layouts, the output size and the checks with their messages.
///
/// Layouts (channels-last, the layout Tensor Cores read without a transpose):
///   input  x [N, H, W, C]            (PyTorch's NCHW tensor `x.permute(0, 2, 3, 1)`)
///   weight   [O, KH, KW, C / groups] (PyTorch's OIHW weight `w.permute(0, 2, 3, 1)`; cuDNN's KRSC)
///   output y [N, OH, OW, O],  OH = (H + 2 pad_h - dil_h (KH - 1) - 1) / stride_h + 1  (floor), same for W
/// Output channel o belongs to group o / (O / groups) and reads input channels
/// [g C / groups, (g + 1) C / groups) of that group, as in PyTorch.
///
/// Numerics (autocast's rule for convolutions): x, the weight and dy in the compute type; every
/// output element (and every element of dx and dweight) is one sum of exact products in the
/// accumulate type, rounded once; the bias and weight gradients are in the accumulate type.

#include <cstdint>
#include <string_view>

#include "mpx/backend/window2d_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/tensor/shape.hpp"

namespace mpx {

/// @brief Everything about a convolution but its tensors: the input's batch and spatial size and
/// channels, the output channels, the kernel and how it moves.
struct Conv2dGeometry {
  std::int64_t batch = 0;         ///< N
  Size2d input;                   ///< H, W
  std::int64_t in_channels = 0;   ///< C
  std::int64_t out_channels = 0;  ///< O
  Window2d window;                ///< the kernel (KH, KW) and how it moves: stride, zero padding, dilation
  std::int64_t groups = 1;        ///< C and O are split into this many independent groups

  /// @brief Input channels each output channel reads: C / groups.
  [[nodiscard]] constexpr std::int64_t group_in_channels() const noexcept { return in_channels / groups; }
  /// @brief Output channels per group: O / groups.
  [[nodiscard]] constexpr std::int64_t group_out_channels() const noexcept { return out_channels / groups; }
  /// @brief OH and OW (PyTorch's formula; 0 or negative for an input the kernel does not fit, which
  /// `check_input` rejects).
  [[nodiscard]] constexpr Size2d output() const noexcept { return window.output(input); }
  /// @brief Terms of one output's sum: KH KW C / groups (the GEMM's K).
  [[nodiscard]] constexpr std::int64_t patch_size() const noexcept {
    return window.kernel.h * window.kernel.w * group_in_channels();
  }

  /// @brief [N, H, W, C].
  [[nodiscard]] Shape input_shape() const { return Shape{batch, input.h, input.w, in_channels}; }
  /// @brief [N, OH, OW, O].
  [[nodiscard]] Shape output_shape() const {
    const Size2d out = output();
    return Shape{batch, out.h, out.w, out_channels};
  }
  /// @brief [O, KH, KW, C / groups].
  [[nodiscard]] Shape weight_shape() const {
    return Shape{out_channels, window.kernel.h, window.kernel.w, group_in_channels()};
  }

  /// @brief Throws `mpx::invalid_argument` naming `where` and the values unless the settings are
  /// valid on their own (they do not involve the input): positive channels divisible by `groups`
  /// and a valid window (`Window2d::check`).
  void check_settings(std::string_view where) const {
    if (in_channels <= 0 || out_channels <= 0 || groups <= 0) {
      throw invalid_argument(detail::concat(where, ": in_channels = ", in_channels, ", out_channels = ",
                                            out_channels, " and groups = ", groups, " must be positive"));
    }
    if (in_channels % groups != 0 || out_channels % groups != 0) {
      throw invalid_argument(detail::concat(where, ": groups = ", groups, " must divide in_channels = ",
                                            in_channels, " and out_channels = ", out_channels));
    }
    window.check(where);
  }

  /// @brief Throws `mpx::shape_error` naming `where` and the shapes unless an input of this
  /// geometry gives an output: a batch of at least one image, and a dilated kernel no larger than
  /// the padded input along each dimension.
  void check_input(std::string_view where) const {
    if (batch <= 0 || input.h <= 0 || input.w <= 0) {
      throw shape_error(detail::concat(where, ": the input ", input_shape(), " is empty"));
    }
    const Size2d out = output();
    if (out.h <= 0 || out.w <= 0) {
      const Window2d& w = window;
      throw shape_error(detail::concat(
          where, ": the kernel ", w.kernel.h, " x ", w.kernel.w, " (dilation ", w.dilation.h, " x ",
          w.dilation.w, ", so it spans ", Window2d::span(w.kernel.h, w.dilation.h), " x ",
          Window2d::span(w.kernel.w, w.dilation.w), ") is larger than the padded input ",
          input.h + 2 * w.padding.h, " x ", input.w + 2 * w.padding.w, " (input ", input_shape(),
          ", padding ", w.padding.h, " x ", w.padding.w, "): no output"));
    }
  }
};

}  // namespace mpx
