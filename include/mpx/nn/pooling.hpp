// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Pooling over channels-last images: `MaxPool2d`, `AvgPool2d` ([N, H, W, C] to
/// [N, OH, OW, C]) and `GlobalAvgPool2d` ([N, H, W, C] to [N, C]); compute type in and out, sums in
/// the accumulate type rounded once (backend/pool2d_spec.hpp has the exact rules).

#include <cstdint>
#include <string>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/pool2d_spec.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief How a pooling window moves: PyTorch's `nn.MaxPool2d` / `nn.AvgPool2d` arguments.
struct Pool2dOptions {
  Size2d stride{0};   ///< rows and columns between two windows; 0 (the default) means the kernel size
  Size2d padding{0};  ///< rows and columns added on each side, at most half the kernel
  bool count_include_pad = true;  ///< AvgPool2d: divide by the kernel's area (true) or by the taps inside
};

namespace detail {
// The shared body of MaxPool2d and AvgPool2d: the window, its checks and the layer's buffers;
// `Derived` runs the backend's kernels.
template <class Derived, PrecisionPolicy P, class Device>
class WindowPool : public LayerBase<Derived, P, Device> {
  using T = compute_t<P>;

 public:
  using LayerBase<Derived, P, Device>::forward;

  /// @brief y [N, OH, OW, C] from x [N, H, W, C]; keeps a pointer to x for backward.
  /// @throws mpx::shape_error naming the layer and the shapes for an input of another rank, or one
  ///         the window does not fit once padded.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    input_ = nullptr;  // until this forward has succeeded
    if (x.rank() != 4) {
      throw shape_error(mpx::detail::concat(this->label(),
                                            ": expected input of shape [batch, height, width, "
                                            "channels] (channels last), received ",
                                            x.shape()));
    }
    geometry_ = Pool2dGeometry{.batch = x.shape()[0],
                               .input = {x.shape()[1], x.shape()[2]},
                               .channels = x.shape()[3],
                               .window = window_};
    geometry_.check_input(this->label());
    ensure_shape(output_, geometry_.output_shape());
    static_cast<Derived&>(*this).forward_kernel(x, output_, geometry_);
    input_ = &x;
    return output_;
  }

  /// @brief Returns dx (valid until the next backward), or null when `input_grad` is false.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(!input_.empty(), dy.shape(), output_.shape());
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, input_->shape());
    static_cast<Derived&>(*this).backward_kernel(*input_, dy, input_grad_, geometry_);
    return &input_grad_;
  }

  /// @brief No parameters.
  template <class F>
  void for_each_parameter(F&&) {}
  /// @brief Nothing to initialise.
  void initialize(std::uint64_t, std::uint64_t) {}
  /// @brief Drops the saved input pointer; backward then throws until the next forward.
  void forget_input() noexcept { input_ = nullptr; }
  /// @brief The window.
  [[nodiscard]] const Window2d& window() const noexcept { return window_; }

 protected:
  WindowPool(Size2d kernel_size, const Pool2dOptions& options)
      : window_{.kernel = kernel_size,
                .stride = options.stride == Size2d{0} ? kernel_size : options.stride,
                .padding = options.padding,
                .dilation = Size2d{1}} {
    Pool2dGeometry{.batch = 0, .input = {}, .channels = 0, .window = window_}.check_settings(
        mpx::detail::concat("mpx::nn::", Derived::kind));
  }

  // torch.nn's names: kernel_size, stride, padding, each as its _h and _w.
  [[nodiscard]] LayerDescription describe_window() const {
    return {{"kernel_size_h", window_.kernel.h}, {"kernel_size_w", window_.kernel.w},
            {"stride_h", window_.stride.h},      {"stride_w", window_.stride.w},
            {"padding_h", window_.padding.h},    {"padding_w", window_.padding.w}};
  }

 private:
  Window2d window_;
  Pool2dGeometry geometry_;  // of the last forward's input
  SavedPointer<Tensor<T, Device>> input_;
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};
}  // namespace detail

/// @brief y = the largest value of each window (PyTorch's `nn.MaxPool2d`, NaN propagating); backward
/// sends dy to the value forward took, found again from the saved input (no index tensor is kept).
/// @code
/// auto pool = mpx::nn::MaxPool2d<mpx::bf16_mixed>(3, {.stride = 2, .padding = 1});  // ResNet's stem pool
/// @endcode
template <PrecisionPolicy P, class Device = Host>
class MaxPool2d : public detail::WindowPool<MaxPool2d<P, Device>, P, Device> {
 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "MaxPool2d";
  /// @brief Construction options (`count_include_pad` does not apply).
  using Options = Pool2dOptions;

  /// @brief Windows of `kernel_size`; stride the kernel size unless `options.stride` says otherwise.
  /// @throws mpx::invalid_argument naming the layer and the values for a kernel or stride that is
  ///         not positive, or padding that is negative or more than half the kernel.
  // `options` by reference, never by value: `Conv2d`'s constructor says why (GCC bug 108599).
  explicit MaxPool2d(Size2d kernel_size, const Options& options = {})
      : detail::WindowPool<MaxPool2d, P, Device>(kernel_size, options) {}

  /// @brief The backend's max pooling.
  static void forward_kernel(const auto& x, auto& y, const Pool2dGeometry& g) {
    Backend<Device>::max_pool2d_forward(x, y, g);
  }
  /// @brief The backend's max pooling gradient.
  static void backward_kernel(const auto& x, const auto& dy, auto& dx, const Pool2dGeometry& g) {
    Backend<Device>::max_pool2d_backward(x, dy, dx, g);
  }
  /// @brief kernel_size, stride and padding (`torch.nn.MaxPool2d`'s names, each pair as _h and _w).
  [[nodiscard]] LayerDescription describe() const { return this->describe_window(); }
};

/// @brief y = the mean of each window (PyTorch's `nn.AvgPool2d`), divided by the kernel's area or,
/// with `count_include_pad = false`, by the taps inside the image.
template <PrecisionPolicy P, class Device = Host>
class AvgPool2d : public detail::WindowPool<AvgPool2d<P, Device>, P, Device> {
 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "AvgPool2d";
  /// @brief Construction options.
  using Options = Pool2dOptions;

  /// @brief Windows of `kernel_size`; stride the kernel size unless `options.stride` says otherwise.
  /// @throws mpx::invalid_argument as `MaxPool2d`'s constructor.
  explicit AvgPool2d(Size2d kernel_size, const Options& options = {})
      : detail::WindowPool<AvgPool2d, P, Device>(kernel_size, options),
        count_include_pad_(options.count_include_pad) {}

  /// @brief The backend's average pooling.
  void forward_kernel(const auto& x, auto& y, const Pool2dGeometry& g) const {
    Backend<Device>::avg_pool2d_forward(x, y, g, count_include_pad_);
  }
  /// @brief The backend's average pooling gradient (it does not read x).
  void backward_kernel(const auto&, const auto& dy, auto& dx, const Pool2dGeometry& g) const {
    Backend<Device>::avg_pool2d_backward(dy, dx, g, count_include_pad_);
  }
  /// @brief kernel_size, stride, padding and count_include_pad (`torch.nn.AvgPool2d`'s names).
  [[nodiscard]] LayerDescription describe() const {
    LayerDescription d = this->describe_window();
    d.push_back({"count_include_pad", count_include_pad_});
    return d;
  }

 private:
  bool count_include_pad_;
};

/// @brief y[n, c] = the mean of x[n, ., ., c]: [N, H, W, C] to [N, C], ready for a `Linear` head
/// (PyTorch's `nn.AdaptiveAvgPool2d(1)` followed by `nn.Flatten()`).
template <PrecisionPolicy P, class Device = Host>
class GlobalAvgPool2d : public LayerBase<GlobalAvgPool2d<P, Device>, P, Device> {
  using T = compute_t<P>;

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "GlobalAvgPool2d";

  /// @brief y [N, C] from x [N, H, W, C]. Backward needs only x's shape, so x may be a temporary.
  /// @throws mpx::shape_error naming the layer for an input of another rank or an empty one.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    if (x.rank() != 4 || x.numel() == 0) {
      throw shape_error(mpx::detail::concat(this->label(),
                                            ": expected a non-empty input of shape [batch, height, "
                                            "width, channels] (channels last), received ",
                                            x.shape()));
    }
    input_shape_ = x.shape();
    ensure_shape(output_, Shape{x.shape()[0], x.shape()[3]});
    Backend<Device>::global_avg_pool2d_forward(x, output_);
    return output_;
  }

  /// @brief dx = dy / (H W) at every pixel; null when `input_grad` is false.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(input_shape_.rank() == 4, dy.shape(), output_.shape());
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, input_shape_);
    Backend<Device>::global_avg_pool2d_backward(dy, input_grad_);
    return &input_grad_;
  }

  /// @brief No parameters.
  template <class F>
  void for_each_parameter(F&&) {}
  /// @brief Nothing to initialise.
  void initialize(std::uint64_t, std::uint64_t) {}
  /// @brief No settings: kind and precision say everything.
  [[nodiscard]] LayerDescription describe() const { return {}; }

 private:
  Shape input_shape_;  // rank 0 until a forward ran
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};

}  // namespace mpx::nn
