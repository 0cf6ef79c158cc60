// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Cast<From, To>`: converts activations between precisions (round to nearest) and the
/// gradient back; `Sequential` inserts one wherever neighbouring layers' types differ.

#include <string>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx::nn {

/// @brief Identity in value, change of element type: forward rounds `From` into `To`, backward
/// rounds the gradient from `To` into `From`.
template <FloatingElement From, FloatingElement To, class Device = Host>
class Cast {
 public:
  /// @brief Device the layer runs on.
  using device_type = Device;
  /// @brief Element type of the input.
  using input_type = From;
  /// @brief Element type of the output.
  using output_type = To;
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "Cast";

  /// @brief Returns `x` rounded to `To`.
  const Tensor<To, Device>& forward(const Tensor<From, Device>& x) {
    ensure_shape(output_, x.shape());
    Backend<Device>::template round_into<tag_of_t<To>>(x, output_);
    return output_;
  }

  /// @brief Returns `dy` converted back to `From` (null when `input_grad` is false).
  const Tensor<From, Device>* backward(const Tensor<To, Device>& dy, bool input_grad = true) {
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, dy.shape());
    Backend<Device>::template round_into<tag_of_t<From>>(dy, input_grad_);
    return &input_grad_;
  }

  /// @brief The element types converted between: "from" and "to" ("bf16", "fp32", ...).
  [[nodiscard]] LayerDescription describe() const {
    return {{"from", std::string(numeric_traits<tag_of_t<From>>::name)},
            {"to", std::string(numeric_traits<tag_of_t<To>>::name)}};
  }

  /// @brief No parameters.
  template <class F>
  void for_each_parameter(F&&) {}
  /// @brief Nothing to initialise.
  void initialize(std::uint64_t, std::uint64_t) {}
  /// @brief Nothing to label.
  void set_label(std::string) {}

 private:
  Tensor<To, Device> output_;
  Tensor<From, Device> input_grad_;
};

}  // namespace mpx::nn
