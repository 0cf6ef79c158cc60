// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Conv2d`: a 2-D convolution over channels-last images, in the compute type with
/// accumulate-type sums (autocast's rule); fp32 weight and bias gradients.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/conv2d_spec.hpp"
#include "mpx/backend/window2d_spec.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/parameter.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief How a `Conv2d`'s kernel moves and what it holds; PyTorch's `nn.Conv2d` arguments and
/// defaults, with one value meaning both dimensions (`.padding = 1`) or two (`.stride = {2, 1}`).
struct Conv2dOptions {
  Size2d stride{1};                  ///< rows and columns between two outputs' windows
  Size2d padding{0};                 ///< zeros added on each side of the input
  Size2d dilation{1};                ///< rows and columns between two taps of the kernel
  std::int64_t groups = 1;           ///< independent channel groups (in_channels for a depthwise convolution)
  bool bias = true;                  ///< whether a learned bias [out_channels] is added
  Init init = Init::KaimingUniform;  ///< the weight's initialisation, fan_in = in_channels / groups KH KW
};

/// @brief y = conv2d(x, W) + b over images in the channels-last layout, x [N, H, W, C] and
/// y [N, OH, OW, O], weight [O, KH, KW, C / groups] (backend/conv2d_spec.hpp, with the map from
/// PyTorch's NCHW and OIHW: `permute(0, 2, 3, 1)` for both).
///
/// Forward runs in the compute type with every output one accumulate-type sum of exact products,
/// rounded once, the bias added before that rounding. Backward adds the weight and bias gradients in
/// fp32 (accumulating across micro-batches) and returns dx in the compute type, each element one
/// sum rounded once. On the CPU each pass is a patch gather feeding mpx's GEMM (cpu/conv2d.hpp).
/// Settings are checked at construction, the input's shape at each forward; the errors name the
/// layer and the values. In evaluation mode (nn/training_mode.hpp) forward keeps no input pointer
/// and backward throws until a training-mode forward has run.
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed>;
/// auto stem = L::conv2d(1, 32, 3, {.padding = 1, .bias = false});  // [N, 28, 28, 1] -> [N, 28, 28, 32]
/// @endcode
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
class Conv2d : public LayerBase<Conv2d<P, Device>, P, Device> {
  using Compute = typename P::compute_type;
  using T = compute_t<P>;
  using Param = Parameter<P, Device>;

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "Conv2d";
  using LayerBase<Conv2d, P, Device>::forward;
  /// @brief Construction options (see `Conv2dOptions`).
  using Options = Conv2dOptions;

  /// @brief A convolution from `in_channels` to `out_channels` with a `kernel_size` kernel.
  /// @throws mpx::invalid_argument naming the layer and the values unless the channels are positive
  ///         and divisible by `groups`, and the kernel, stride and dilation positive, the padding not
  ///         negative.
  // `options` by reference, never by value: copying a by-value `Options` into its stack slot, GCC
  // 12.2 (-O2 -march=native on an AVX-512 Intel CPU) loaded the first 32 bytes, {stride, padding}
  // = {s, s, 0, 0}, as a broadcast of s, so that a convolution with the default padding got padding
  // s (GCC bug 108599; the test "Conv2d keeps the options it is given" in nn_conv2d_test.cpp).
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size, const Options& options = {})
      : settings_(checked_settings(in_channels, out_channels, kernel_size, options)),
        options_(options),
        weight_("weight", settings_.weight_shape()) {
    if (options.bias) bias_.emplace("bias", Shape{out_channels});
    initialize(0, 0);
  }

  /// @brief Re-initialises the weight as `Options::init` says (fan_in = in_channels / groups KH KW,
  /// fan_out = out_channels KH KW, PyTorch's fans) and the bias to zero, from (seed, stream).
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    const std::int64_t taps = settings_.window.kernel.h * settings_.window.kernel.w;
    nn::initialize(weight_, options_.init, settings_.group_in_channels() * taps,
                   settings_.out_channels * taps, seed, 2 * stream);
    if (bias_) nn::initialize(*bias_, Init::Zeros, 1, 1, seed, 2 * stream + 1);
  }

  /// @brief y [N, OH, OW, out_channels] from x [N, H, W, in_channels]; in training mode, keeps a
  /// pointer to x for backward.
  /// @throws mpx::shape_error naming the layer and the shapes for an input of another rank or
  ///         channel count, or one the (dilated) kernel does not fit once padded.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    input_ = nullptr;  // until this forward has succeeded
    geometry_ = geometry_for(x.shape());
    ensure_shape(output_, geometry_.output_shape());
    Backend<Device>::template conv2d_forward<Compute>(
        x, weight_.compute(), bias_ ? &bias_->compute() : nullptr, output_, geometry_);
    input_ = this->training() ? &x : nullptr;
    return output_;
  }

  /// @brief Adds dW and db (fp32) from dy and, if asked, returns dx (valid until the next backward).
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    if (input_.empty()) throw_backward_without_saved_state(this->label(), this->training());
    require_shape(this->label().c_str(), "upstream gradient", dy.shape(), output_.shape());
    const auto weight_grad = weight_.grad_for_update();
    Backend<Device>::template conv2d_backward_weight<Compute>(*input_, dy, weight_grad.tensor,
                                                              weight_grad.overwrite, geometry_);
    if (bias_) {
      const auto bias_grad = bias_->grad_for_update();
      Backend<Device>::conv2d_backward_bias(dy, bias_grad.tensor, bias_grad.overwrite);
    }
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, input_->shape());
    Backend<Device>::template conv2d_backward_input<Compute>(dy, weight_.compute(), input_grad_, geometry_);
    return &input_grad_;
  }

  /// @brief Calls f(name, parameter) for the weight, then the bias.
  template <class F>
  void for_each_parameter(F&& f) {
    f(std::string_view("weight"), weight_);
    if (bias_) f(std::string_view("bias"), *bias_);
  }

  /// @brief Drops the saved input pointer; backward then throws until the next forward.
  void forget_input() noexcept { input_ = nullptr; }

  /// @brief The settings another tool needs to rebuild the layer, under `torch.nn.Conv2d`'s names
  /// (each pair as its _h and _w): in_channels, out_channels, kernel_size_h/_w, stride_h/_w,
  /// padding_h/_w, dilation_h/_w, groups, bias.
  [[nodiscard]] LayerDescription describe() const {
    const Window2d& s = settings_.window;
    return {{"in_channels", settings_.in_channels},
            {"out_channels", settings_.out_channels},
            {"kernel_size_h", s.kernel.h},
            {"kernel_size_w", s.kernel.w},
            {"stride_h", s.stride.h},
            {"stride_w", s.stride.w},
            {"padding_h", s.padding.h},
            {"padding_w", s.padding.w},
            {"dilation_h", s.dilation.h},
            {"dilation_w", s.dilation.w},
            {"groups", settings_.groups},
            {"bias", bias_.has_value()}};
  }

  /// @brief Input channels.
  [[nodiscard]] std::int64_t in_channels() const noexcept { return settings_.in_channels; }
  /// @brief Output channels.
  [[nodiscard]] std::int64_t out_channels() const noexcept { return settings_.out_channels; }
  /// @brief The settings, with no input yet (batch and input size 0).
  [[nodiscard]] const Conv2dGeometry& settings() const noexcept { return settings_; }
  /// @brief The weight parameter, [out_channels, KH, KW, in_channels / groups].
  [[nodiscard]] Param& weight() noexcept { return weight_; }
  /// @brief The bias parameter, or null without one.
  [[nodiscard]] Param* bias() noexcept { return bias_ ? &*bias_ : nullptr; }

 private:
  static Conv2dGeometry checked_settings(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel,
                                         const Options& options) {
    const Conv2dGeometry settings{.batch = 0,
                                  .input = Size2d{0},
                                  .in_channels = in_channels,
                                  .out_channels = out_channels,
                                  .window = {.kernel = kernel,
                                             .stride = options.stride,
                                             .padding = options.padding,
                                             .dilation = options.dilation},
                                  .groups = options.groups};
    settings.check_settings("mpx::nn::Conv2d");
    return settings;
  }

  // The settings applied to an input of shape `x`, checked: [N, H, W, in_channels] that the kernel fits.
  Conv2dGeometry geometry_for(const Shape& x) const {
    if (x.rank() != 4 || x[3] != settings_.in_channels) {
      throw shape_error(mpx::detail::concat(this->label(),
                                            ": expected input of shape [batch, height, width, ",
                                            settings_.in_channels, "] (channels last), received ", x));
    }
    Conv2dGeometry geometry = settings_;
    geometry.batch = x[0];
    geometry.input = Size2d{x[1], x[2]};
    geometry.check_input(this->label());
    return geometry;
  }

  Conv2dGeometry settings_;  // no input: batch and input size 0
  Options options_;
  Param weight_;
  std::optional<Param> bias_;
  Conv2dGeometry geometry_;  // of the last forward's input
  SavedPointer<Tensor<T, Device>> input_;
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};

}  // namespace mpx::nn
