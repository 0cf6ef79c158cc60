// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::LayerBase`: what every layer states the same way (its precision, device, input and
/// output element types, its name in messages, its mode, and why a temporary cannot be its input),
/// so that a layer's own header holds only what differs.

#include <string>
#include <utility>

#include "mpx/error.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

/// @brief The preamble of a layer, as a base class: a layer derives from it, names its `kind`, and
/// brings the base's `forward` overload into scope next to its own.
/// @code
/// template <PrecisionPolicy P, class Device = Host>
/// class LayerNorm : public LayerBase<LayerNorm<P, Device>, P, Device> {
///  public:
///   static constexpr std::string_view kind = "LayerNorm";
///   using LayerBase<LayerNorm, P, Device>::forward;  // forward(temporary) does not compile
///   const Tensor<compute_t<P>, Device>& forward(const Tensor<compute_t<P>, Device>& x);
///   ...
/// };
/// @endcode
/// @tparam Derived the layer; its `kind` ("LayerNorm") is its label until a model names it
///         ("layers.2 (LayerNorm)").
/// @tparam P the layer's precision policy; @tparam Device `Host` or `Cuda`.
/// @tparam Input, Output the element types forward reads and writes (the compute type by default;
///         an embedding reads token ids).
template <class Derived, PrecisionPolicy P, class Device, class Input = compute_t<P>,
          class Output = compute_t<P>>
class LayerBase {
 public:
  /// @brief The layer's precision policy.
  using precision = P;
  /// @brief Device the layer runs on.
  using device_type = Device;
  /// @brief Element type of the input.
  using input_type = Input;
  /// @brief Element type of the output.
  using output_type = Output;

  /// @brief Does not compile: the layer's backward reads its input (or, in evaluation mode, its
  /// output is the input itself), so a temporary would be gone by then; see `reject_temporary_input`.
  const Tensor<Output, Device>& forward(Tensor<Input, Device>&& x) {
    reject_temporary_input<Derived>();
    return static_cast<Derived&>(*this).forward(std::as_const(x));
  }

  /// @brief Names the layer in messages; an enclosing model sets "layers.2 (Linear)".
  void set_label(std::string label) { label_ = std::move(label); }
  /// @brief The layer's name in messages.
  [[nodiscard]] const std::string& label() const noexcept { return label_; }

  /// @brief Training (`true`, the default) or evaluation mode (nn/training_mode.hpp); a layer whose
  /// forward differs between them reads `training()`, a container also passes the mode on.
  void set_training(bool training) noexcept { training_ = training; }
  /// @brief Whether the layer is in training mode.
  [[nodiscard]] bool training() const noexcept { return training_; }

 protected:
  /// @brief What a backward checks first: throws `mpx::error` naming the layer unless a forward ran
  /// (`forward_ran`), and `mpx::shape_error` unless the upstream gradient has the output's shape.
  void check_backward(bool forward_ran, const Shape& upstream, const Shape& output) const {
    if (!forward_ran) throw error(mpx::detail::concat(label_, ": backward called before forward"));
    require_shape(label_.c_str(), "upstream gradient", upstream, output);
  }

 private:
  std::string label_{Derived::kind};
  bool training_ = true;
};

}  // namespace mpx::nn
