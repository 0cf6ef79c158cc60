// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What a layer is: the `Layer` concept every `nn` module satisfies, the activations a
/// `Linear` can fuse, weight initialisation, and the shape check with the layer's name in it.

#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/parameter.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

namespace detail {
// A visitor for the Layer concept's for_each_parameter requirement. A named type, not a lambda: nvcc
// rejects lambdas in a requires-expression, which would make every layer fail the concept in CUDA code.
struct AnyParameterVisitor {
  template <class Parameter>
  void operator()(std::string_view, Parameter&) const {}
};
}  // namespace detail

/// @brief A module with explicit forward and backward passes over tensors of fixed element types.
///
/// `forward(x)` returns the layer's output buffer (valid until the next forward) and remembers what
/// backward needs; `backward(dy, input_grad)` accumulates parameter gradients and returns a pointer
/// to dL/dx, or null when `input_grad` is false (the first layer of a model needs none).
/// `initialize(seed, stream)`, `set_label(name)` and `for_each_parameter(f(name, parameter))` let a
/// model initialise, name and visit its layers.
template <class L>
concept Layer = requires(L& layer, const Tensor<typename L::input_type, typename L::device_type>& x,
                         const Tensor<typename L::output_type, typename L::device_type>& dy) {
  typename L::input_type;
  typename L::output_type;
  typename L::device_type;
  { L::kind } -> std::convertible_to<std::string_view>;
  { layer.forward(x) } -> std::same_as<const Tensor<typename L::output_type, typename L::device_type>&>;
  {
    layer.backward(dy, true)
    } -> std::same_as<const Tensor<typename L::input_type, typename L::device_type>*>;
  layer.initialize(std::uint64_t{0}, std::uint64_t{0});
  layer.set_label(std::string{});
  layer.for_each_parameter(detail::AnyParameterVisitor{});
};

/// @brief What a layer hands the layer after it so that the latter's dx GEMM applies the former's
/// ReLU gradient in its epilogue (DRelu, cuBLASLt's DRELU) instead of a kernel of its own: the bit
/// mask of the last training forward (epilogue ReluAuxBias).
template <class Device>
struct ActivationGradientFusion {
  /// @brief [rows, relu_mask_words(features)]: bit set where the pre-activation was positive.
  Tensor<std::int32_t, Device>* relu_mask = nullptr;
};

/// @brief A layer whose activation gradient the next layer can apply: `activation_gradient_fusion()`
/// before the next layer's backward, then `backward_activation_applied(dz, input_grad)` with the dZ
/// that backward returned.
template <class L>
concept HandsOnActivationGradient =
    requires(L& layer, const Tensor<typename L::output_type, typename L::device_type>& dz) {
  layer.activation_gradient_fusion();
  {
    layer.backward_activation_applied(dz, true)
    } -> std::same_as<const Tensor<typename L::input_type, typename L::device_type>*>;
};

/// @brief A layer that can apply the previous layer's activation gradient (`Fusion`, what that
/// layer's `activation_gradient_fusion()` returns) in its dx GEMM: `backward(dy, fusion)`, and, when it
/// also hands its own on, `backward_activation_applied(dz, fusion)`.
template <class L, class Fusion>
concept AppliesActivationGradient = requires(
    L& layer, const Tensor<typename L::output_type, typename L::device_type>& dy, const Fusion& fusion) {
  {
    layer.backward(dy, fusion)
    } -> std::same_as<const Tensor<typename L::input_type, typename L::device_type>*>;
}
&&(!HandsOnActivationGradient<L> ||
   requires(L & layer, const Tensor<typename L::output_type, typename L::device_type>& dz,
            const Fusion& fusion) {
     {
       layer.backward_activation_applied(dz, fusion)
       } -> std::same_as<const Tensor<typename L::input_type, typename L::device_type>*>;
   });

/// @brief Whether layer `L` computes in fp16, or another format with fewer exponent bits than fp32,
/// anywhere (and so needs loss scaling): its own `has_half_compute` for a container, else whether
/// its precision's compute format is such a format (`narrower_range_than_fp32_v`).
template <class L>
constexpr bool computes_in_half() {
  if constexpr (requires { L::has_half_compute; }) {
    return L::has_half_compute;
  } else if constexpr (requires { typename L::precision::compute_type; }) {
    return narrower_range_than_fp32_v<typename L::precision::compute_type>;
  } else {
    return false;
  }
}

/// @brief Calls `f(name, tensor)` for each buffer of `layer` (state saved and loaded with the weights
/// but not trained: BatchNorm's running statistics), when it has any (`layer.for_each_buffer(f)`);
/// does nothing for a layer without buffers.
template <class L, class F>
void for_each_buffer(L& layer, F&& f) {
  if constexpr (requires { layer.for_each_buffer(f); }) layer.for_each_buffer(f);
}

/// @brief Calls `f(layer)` on `layer` and then, depth first in forward order, on every layer inside
/// it: containers (`Sequential`, `Residual`, `Concat`, `CausalSelfAttention`) show theirs through
/// `for_each_child(g)`. For what reaches into a model from outside by layer kind (the gradient
/// syncs handing each `BatchNorm2d` its reducer of statistics); `f` picks its layers with
/// `if constexpr`.
template <class L, class F>
void for_each_layer(L& layer, F&& f) {
  f(layer);
  if constexpr (requires { layer.for_each_child(f); }) {
    layer.for_each_child([&](auto& child) { nn::for_each_layer(child, f); });
  }
}

/// @brief The activation a `Linear` applies through its GEMM epilogue.
enum class Activation { None, ReLU, GELU };

/// @brief "None", "ReLU" or "GELU", as layer descriptions and messages spell the activation (GELU is
/// the tanh approximation: PyTorch's `GELU(approximate="tanh")`).
[[nodiscard]] constexpr std::string_view activation_name(Activation activation) noexcept {
  switch (activation) {
    case Activation::ReLU: return "ReLU";
    case Activation::GELU: return "GELU";
    case Activation::None: break;
  }
  return "None";
}

/// @brief How a weight is initialised.
enum class Init {
  KaimingUniform,  ///< U(-b, b), b = sqrt(6 / fan_in): He et al., for ReLU-family activations
  XavierUniform,   ///< U(-b, b), b = sqrt(6 / (fan_in + fan_out)): Glorot & Bengio
  Zeros,
  Ones,
};

/// @brief Fills `parameter`'s master weights as `init` says, deterministically from (seed, stream),
/// and refreshes its compute copy.
template <class Param>
void initialize(Param& parameter, Init init, std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed,
                std::uint64_t stream) {
  using Device = typename std::remove_cvref_t<decltype(parameter.master())>::device_type;
  auto& master = parameter.master();
  switch (init) {
    case Init::KaimingUniform:
    case Init::XavierUniform: {
      const double bound = init == Init::KaimingUniform
                               ? std::sqrt(6.0 / static_cast<double>(fan_in))
                               : std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
      Backend<Device>::fill_uniform(master, -bound, bound, seed, stream);
      break;
    }
    case Init::Zeros: master.set_zero(); break;
    case Init::Ones: Backend<Device>::fill_uniform(master, 1.0, 1.0, seed, stream); break;
  }
  parameter.refresh_compute_copy();
}

/// @brief The random stream of the layer at `index` inside a container whose own stream is
/// `stream`: a fixed mix of the two (splitmix64's finaliser), so that layers at every depth of a
/// nested model draw from distinct streams while a flat model's layer I keeps stream I.
[[nodiscard]] constexpr std::uint64_t nested_stream(std::uint64_t stream, std::uint64_t index) noexcept {
  std::uint64_t z = (stream + 1) * 0x9e3779b97f4a7c15ull + index;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// @brief The place of a layer in its model, from its label: "layers.2" from "layers.2 (Linear)"
/// (the label itself when it has no " (kind)" suffix).
[[nodiscard]] inline std::string_view label_path(std::string_view label) noexcept {
  const auto open = label.rfind(" (");
  return open == std::string_view::npos ? label : label.substr(0, open);
}

/// @brief Throws `mpx::shape_error` naming the layer, the expected and the received shape unless
/// `x` is [batch, features] or, for sequences, [batch, sequence, features] (any rank from 2: the
/// layer acts on the last dimension, every leading one is a row).
template <class T, class Device>
void require_features(const std::string& layer, const Tensor<T, Device>& x, std::int64_t features) {
  if (x.rank() < 2 || x.shape().cols() != features) {
    throw shape_error(mpx::detail::concat(layer, ": expected input of shape [batch, ", features,
                                          "] or [batch, sequence, ", features, "], received ", x.shape()));
  }
}

/// @brief A pointer, saved by forward, to a tensor another object owns (the previous layer's output);
/// backward reads through it. Moving the holder clears it, so a moved layer demands a new forward
/// instead of reading a buffer that now belongs to someone else.
template <class T>
class SavedPointer {
 public:
  SavedPointer() = default;
  SavedPointer(const SavedPointer&) = delete;
  SavedPointer& operator=(const SavedPointer&) = delete;
  /// @brief Moving a layer leaves its saved pointer empty (it pointed into the old layer's buffers).
  SavedPointer(SavedPointer&&) noexcept {}
  /// @brief Moving a layer leaves its saved pointer empty.
  SavedPointer& operator=(SavedPointer&&) noexcept {
    pointer_ = nullptr;
    return *this;
  }
  /// @brief Remembers `pointer`.
  SavedPointer& operator=(const T* pointer) noexcept {
    pointer_ = pointer;
    return *this;
  }
  /// @brief The remembered pointer (null when empty).
  [[nodiscard]] const T* get() const noexcept { return pointer_; }
  /// @brief The remembered tensor.
  [[nodiscard]] const T& operator*() const noexcept { return *pointer_; }
  /// @brief Member access to the remembered tensor.
  [[nodiscard]] const T* operator->() const noexcept { return pointer_; }
  /// @brief Whether nothing is remembered.
  [[nodiscard]] bool empty() const noexcept { return pointer_ == nullptr; }

 private:
  const T* pointer_ = nullptr;
};

/// @brief Throws `mpx::error` for a backward that has no saved state to read: either no forward
/// ran, or the last one ran in evaluation mode, which saves nothing for backward (training_mode.hpp).
/// @param label the layer's name in messages; @param training whether the layer is in training mode.
[[noreturn]] inline void throw_backward_without_saved_state(std::string_view label, bool training) {
  if (training) throw error(mpx::detail::concat(label, ": backward called before forward"));
  throw error(mpx::detail::concat(
      label,
      ": backward called after an evaluation-mode forward, which saves nothing for backward; "
      "put the model back into training mode (nn::set_training(model, true), or leave the "
      "nn::EvaluationMode scope) and run forward again"));
}

/// @brief A compile error saying why an input cannot be a temporary and what to write instead.
///
/// Called by the `forward(Tensor&&)` overload of layers that save a pointer to their input for
/// backward (a temporary would be gone by then). An overload that calls this, rather than one
/// declared `= delete`, makes the compiler print the reason instead of "use of deleted function".
/// @tparam Module the layer or model whose forward was given a temporary (named in the compiler's
/// "In instantiation of" note).
template <class Module>
constexpr void reject_temporary_input() {
  static_assert(mpx::detail::always_false<Module>,
                "mpx::nn: forward(temporary): the model keeps a pointer to its input for backward, so "
                "the input cannot be a temporary; keep the input tensor alive in a named variable "
                "(auto x = ...; model.forward(x);) until backward has run");
}

/// @brief How many times `ensure_shape` has replaced (and so freed) a buffer on `Device` in this
/// process; a first allocation frees nothing and is not counted. A
/// recorded training step (a CUDA graph) holds the addresses of the layers' buffers, so it compares
/// this count with the one at its capture before each replay (train/step_graph.hpp): a model run on
/// another batch size since (an evaluation) has freed buffers the recording would write into.
template <class Device>
[[nodiscard]] std::atomic<std::uint64_t>& buffer_generation() noexcept {
  static std::atomic<std::uint64_t> generation{0};
  return generation;
}

/// @brief Makes `tensor` hold `shape`, reallocating only when the shape changed (e.g. the last,
/// smaller batch of an epoch); layers keep their activation buffers across steps this way. Replacing
/// a buffer advances `buffer_generation<Device>()`.
template <class T, class Device>
void ensure_shape(Tensor<T, Device>& tensor, const Shape& shape) {
  if (!(tensor.shape() == shape)) {
    if (!tensor.empty()) buffer_generation<Device>().fetch_add(1, std::memory_order_relaxed);
    tensor = Tensor<T, Device>::uninitialized(shape);
  }
}

}  // namespace mpx::nn
