// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Flatten`: [N, d1, d2, ...] to [N, d1 d2 ...], the same elements (no copy, no memory).

#include <cstdint>
#include <string_view>

#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief Views x [N, d1, ..., dk] as [N, d1 ... dk] and the gradient back; the outputs are views of
/// x's and dy's elements, so they are valid as long as those are.
///
/// The order is mpx's channels-last one: an image [N, H, W, C] flattens to (h, w, c), where
/// PyTorch's `nn.Flatten` of an NCHW image gives (c, h, w). A `Linear` after it therefore has its
/// weight's columns in (h, w, c) order; to load it into PyTorch, permute the columns (docs/cnn.md).
template <PrecisionPolicy P, class Device = Host>
class Flatten : public LayerBase<Flatten<P, Device>, P, Device> {
  using T = compute_t<P>;

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "Flatten";
  using LayerBase<Flatten, P, Device>::forward;

  /// @brief x as [N, d1 ... dk] (a view of x's elements).
  /// @throws mpx::shape_error naming the layer for an input of rank 1.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    if (x.rank() < 2) {
      throw shape_error(
          mpx::detail::concat(this->label(), ": expected input of shape [batch, ...], received ", x.shape()));
    }
    input_shape_ = x.shape();
    output_ =
        Tensor<T, Device>::view(const_cast<T*>(x.data()), Shape{x.shape()[0], x.numel() / x.shape()[0]});
    return output_;
  }

  /// @brief dy as the input's shape (a view of dy's elements); null when `input_grad` is false.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(input_shape_.rank() >= 2, dy.shape(), output_.shape());
    if (!input_grad) return nullptr;
    input_grad_ = Tensor<T, Device>::view(const_cast<T*>(dy.data()), input_shape_);
    return &input_grad_;
  }

  /// @brief No parameters.
  template <class F>
  void for_each_parameter(F&&) {}
  /// @brief Nothing to initialise.
  void initialize(std::uint64_t, std::uint64_t) {}
  /// @brief Forgets the input (its output view would point into it); backward then throws.
  void forget_input() noexcept {
    input_shape_ = Shape{};
    output_ = Tensor<T, Device>{};
  }
  /// @brief No settings (start_dim 1, end_dim -1, PyTorch's defaults).
  [[nodiscard]] LayerDescription describe() const { return {}; }

 private:
  Shape input_shape_;             // rank 0 until a forward ran
  Tensor<T, Device> output_;      // a view of the input
  Tensor<T, Device> input_grad_;  // a view of dy
};

}  // namespace mpx::nn
