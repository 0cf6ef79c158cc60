// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Upsample`: nearest-neighbour upsampling of channels-last images by integer factors.

#include <cstdint>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/window2d_spec.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief y [N, H sh, W sw, C] from x [N, H, W, C], each pixel repeated sh x sw times (PyTorch's
/// `nn.Upsample(scale_factor=(sh, sw), mode="nearest")`, the decoder side of a UNet); backward sums
/// each block of dy in fp32, rounded once. Backward needs only x's shape, so x may be a temporary.
template <PrecisionPolicy P, class Device = Host>
class Upsample : public LayerBase<Upsample<P, Device>, P, Device> {
  using T = compute_t<P>;

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "Upsample";

  /// @brief Upsampling by `scale_factor` (one value for both dimensions, or height and width).
  /// @throws mpx::invalid_argument naming the values unless both factors are positive.
  explicit Upsample(Size2d scale_factor = 2) : scale_(scale_factor) {
    if (scale_factor.h <= 0 || scale_factor.w <= 0) {
      throw invalid_argument(mpx::detail::concat("mpx::nn::Upsample: scale_factor ", scale_factor.h, " x ",
                                                 scale_factor.w, " must be positive"));
    }
  }

  /// @brief The upsampled image.
  /// @throws mpx::shape_error naming the layer for an input of another rank.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    if (x.rank() != 4) {
      throw shape_error(mpx::detail::concat(this->label(),
                                            ": expected input of shape [batch, height, width, "
                                            "channels] (channels last), received ",
                                            x.shape()));
    }
    input_shape_ = x.shape();
    ensure_shape(output_,
                 Shape{x.shape()[0], x.shape()[1] * scale_.h, x.shape()[2] * scale_.w, x.shape()[3]});
    Backend<Device>::upsample_nearest_forward(x, output_, scale_);
    return output_;
  }

  /// @brief dx: each block of dy summed; null when `input_grad` is false.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(input_shape_.rank() == 4, dy.shape(), output_.shape());
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, input_shape_);
    Backend<Device>::upsample_nearest_backward(dy, input_grad_, scale_);
    return &input_grad_;
  }

  /// @brief No parameters.
  template <class F>
  void for_each_parameter(F&&) {}
  /// @brief Nothing to initialise.
  void initialize(std::uint64_t, std::uint64_t) {}
  /// @brief scale_factor_h, scale_factor_w and mode ("nearest"), `torch.nn.Upsample`'s names.
  [[nodiscard]] LayerDescription describe() const {
    return {{"scale_factor_h", scale_.h}, {"scale_factor_w", scale_.w}, {"mode", std::string("nearest")}};
  }

 private:
  Size2d scale_;
  Shape input_shape_;  // rank 0 until a forward ran
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};

}  // namespace mpx::nn
