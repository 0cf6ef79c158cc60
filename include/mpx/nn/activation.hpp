// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Standalone activation layers (`ReLU`, `GELU`, `SiLU`) for when no GEMM precedes them to fuse into:
/// compute type in and out, fp32 math in registers.

#include <string>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

namespace detail {
// The shared body of the elementwise activation layers; `Derived` supplies the kernels.
template <class Derived, PrecisionPolicy P, class Device>
class ElementwiseActivation : public LayerBase<Derived, P, Device> {
  using T = compute_t<P>;

 public:
  using LayerBase<Derived, P, Device>::forward;
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    ensure_shape(output_, x.shape());
    Derived::forward_kernel(x, output_);
    input_ = &x;
    return output_;
  }

  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(!input_.empty(), dy.shape(), output_.shape());
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, dy.shape());
    Derived::backward_kernel(*input_, output_, dy, input_grad_);
    return &input_grad_;
  }

  template <class F>
  void for_each_parameter(F&&) {}
  void initialize(std::uint64_t, std::uint64_t) {}
  /// @brief No settings: kind and precision (which `describe_layer` adds) say everything.
  [[nodiscard]] LayerDescription describe() const { return {}; }
  /// @brief Drops the saved input pointer; backward then throws until the next forward.
  void forget_input() noexcept { input_ = nullptr; }

 private:
  SavedPointer<Tensor<T, Device>> input_;
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};
}  // namespace detail

/// @brief y = max(x, 0); backward uses the saved output.
template <PrecisionPolicy P, class Device = Host>
class ReLU : public detail::ElementwiseActivation<ReLU<P, Device>, P, Device> {
 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "ReLU";
  /// @brief y = max(x, 0).
  static void forward_kernel(const auto& x, auto& y) { Backend<Device>::relu_forward(x, y); }
  /// @brief dx = dy where y > 0, else 0.
  static void backward_kernel(const auto&, const auto& y, const auto& dy, auto& dx) {
    Backend<Device>::relu_backward(y, dy, dx);
  }
};

/// @brief y = gelu_tanh(x) (the form cuBLASLt's epilogue uses); backward uses the saved input.
template <PrecisionPolicy P, class Device = Host>
class GELU : public detail::ElementwiseActivation<GELU<P, Device>, P, Device> {
 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "GELU";
  /// @brief y = GELU(x) (tanh approximation).
  static void forward_kernel(const auto& x, auto& y) { Backend<Device>::gelu_forward(x, y); }
  /// @brief dx = dy * GELU'(x).
  static void backward_kernel(const auto& x, const auto&, const auto& dy, auto& dx) {
    Backend<Device>::gelu_backward(x, dy, dx);
  }
};

/// @brief y = silu(x) = x sigmoid(x) (PyTorch's `nn.SiLU`); backward uses the saved input.
template <PrecisionPolicy P, class Device = Host>
class SiLU : public detail::ElementwiseActivation<SiLU<P, Device>, P, Device> {
 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "SiLU";
  /// @brief y = x / (1 + exp(-x)).
  static void forward_kernel(const auto& x, auto& y) { Backend<Device>::silu_forward(x, y); }
  /// @brief dx = dy * silu'(x).
  static void backward_kernel(const auto& x, const auto&, const auto& dy, auto& dx) {
    Backend<Device>::silu_backward(x, dy, dx);
  }
};

}  // namespace mpx::nn
