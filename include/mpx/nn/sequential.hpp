// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Sequential<Layers...>`: a model as a static composition of layers held in a
/// `hana::tuple`, checked at compile time, with casts inserted between layers of different precision.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/at.hpp>
#include <boost/hana/tuple.hpp>

#include "mpx/backend/backend.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/cast.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/step_key.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

namespace detail {

/// Marks a link between two layers of the same element type: nothing to convert.
struct NoCast {};

/// The layer callback of a plain backward: does nothing, and compiles away.
struct NoLayerReport {
  template <class Layer>
  void operator()(const Layer&) const noexcept {}
};

// Each check is a class template so that, when it fails, the compiler's "in instantiation of"
// note spells out the layer's position and type (and both devices): static_assert messages cannot.
template <std::size_t Index, class L>
struct check_is_layer {
  static_assert(Layer<L>,
                "mpx::nn::Sequential: the layer at this index (see check_is_layer<index, type> above) is not "
                "a layer: it needs input_type, output_type, device_type, kind, forward(x) returning the "
                "output tensor and backward(dy, input_grad) returning a pointer to dx");
  static constexpr bool value = true;
};

template <std::size_t ProducerIndex, class Producer, class Consumer, class ProducerDevice,
          class ConsumerDevice>
struct check_same_device {
  static_assert(std::is_same_v<ProducerDevice, ConsumerDevice>,
                "mpx::nn::Sequential: neighbouring layers run on different devices (see "
                "check_same_device<index, producer layer, consumer layer, producer device, consumer device> "
                "above); give every layer of a model the same Device");
  static constexpr bool value = true;
};

template <std::size_t Index, class Producer, class Consumer>
struct link {
  static_assert(check_same_device<Index, Producer, Consumer, typename Producer::device_type,
                                  typename Consumer::device_type>::value);
  using produced = typename Producer::output_type;
  using expected = typename Consumer::input_type;
  using cast = std::conditional_t<std::is_same_v<produced, expected>, NoCast,
                                  Cast<produced, expected, typename Producer::device_type>>;
};

template <class LayerTuple, class Indices>
struct links;
template <class... L, std::size_t... I>
struct links<std::tuple<L...>, std::index_sequence<I...>> {
  using type = boost::hana::tuple<typename link<I, std::tuple_element_t<I, std::tuple<L...>>,
                                                std::tuple_element_t<I + 1, std::tuple<L...>>>::cast...>;
};

// forward's input checks, for a tensor that is not the model's input type on the model's device. A
// class template, so the "in instantiation of" note above the message names the four types; one
// message per kind of input (token ids, fp32, any other format), so that it says what to pass.
template <class Expected, class Received, class ModelDevice, class InputDevice>
struct check_input {
  static constexpr bool same_device = std::is_same_v<ModelDevice, InputDevice>;
  static_assert(same_device || !std::is_same_v<ModelDevice, Host>,
                "mpx::nn::Sequential::forward: the model runs on mpx::Host but the input is on another "
                "device (see check_input<expected element, received element, model device, input "
                "device> above); copy it to the host first: mpx::to_host(x)");
  static_assert(same_device || std::is_same_v<ModelDevice, Host>,
                "mpx::nn::Sequential::forward: the model runs on a GPU but the input is on another "
                "device (see check_input<expected element, received element, model device, input "
                "device> above); copy it to the GPU first: mpx::to_device(x)");

  static constexpr bool accepted = !same_device || std::is_same_v<Expected, Received> ||
                                   (std::is_same_v<Received, float> && FloatingElement<Expected>);
  static_assert(accepted || !std::is_same_v<Expected, std::int32_t>,
                "mpx::nn::Sequential::forward: this model starts with an Embedding and takes token ids, "
                "Tensor<std::int32_t> of shape [batch, sequence]; this tensor holds another element type "
                "(see check_input<expected element, received element, ...> above)");
  static_assert(accepted || !std::is_same_v<Expected, float>,
                "mpx::nn::Sequential::forward: this model takes fp32 input, Tensor<float>, and this "
                "tensor holds another element type (see check_input<expected element, received "
                "element, ...> above); convert it first: mpx::convert<mpx::Float>(x) (on a GPU, "
                "mpx::Backend<mpx::Cuda>::round_into<mpx::Float>(x, y))");
  static_assert(accepted || std::is_same_v<Expected, std::int32_t> || std::is_same_v<Expected, float>,
                "mpx::nn::Sequential::forward: this model takes input in its first layer's compute format "
                "(the expected element of check_input<expected element, received element, ...> above: "
                "Tensor<Eigen::bfloat16> for bf16, Tensor<double> for fp64, ...), or fp32, Tensor<float>, "
                "which forward rounds into it; this tensor holds another element type: pass fp32, or "
                "convert it first: mpx::convert<mpx::tag_of_t<expected element>>(x), e.g. "
                "mpx::convert<mpx::BFloat16>(x)");
  static constexpr bool value = true;
};

}  // namespace detail

/// @brief Layers applied in order; backward runs them in reverse.
///
/// Where a layer's output type differs from the next layer's input type (a classifier kept in fp32
/// after bf16 layers, say), an `nn::Cast` is inserted, so keeping one layer in another precision is a
/// one-word change to its type. Every element must satisfy `nn::Layer` and all must share a device;
/// both are checked at compile time. Parameters are named "layers.<index>.<name>", as PyTorch's
/// `nn.Sequential` names them.
/// @code
/// using P = mpx::bf16_mixed;
/// mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(784, 256),
///                           mpx::nn::Linear<mpx::fp32>(256, 10)};  // classifier in fp32
/// @endcode
template <class... Layers>
class Sequential {
  static_assert(sizeof...(Layers) > 0, "mpx::nn::Sequential needs at least one layer");

  template <std::size_t... I>
  static constexpr bool all_layers(std::index_sequence<I...>) {
    return (detail::check_is_layer<I, Layers>::value && ...);
  }
  static_assert(all_layers(std::index_sequence_for<Layers...>{}));

  using layer_list = std::tuple<Layers...>;
  template <std::size_t I>
  using layer_at = std::tuple_element_t<I, layer_list>;
  using link_tuple =
      typename detail::links<layer_list, std::make_index_sequence<sizeof...(Layers) - 1>>::type;

 public:
  /// @brief Number of layers.
  static constexpr std::size_t size = sizeof...(Layers);
  /// @brief The model's kind in descriptions (`describe`, checkpoints' `model` metadata).
  static constexpr std::string_view kind = "Sequential";
  /// @brief Device the layers run on.
  using device_type = typename layer_at<0>::device_type;
  /// @brief Element type of the first layer's input.
  using input_type = typename layer_at<0>::input_type;
  /// @brief Element type of the last layer's output.
  using output_type = typename layer_at<size - 1>::output_type;
  /// The precision of the first layer: the model's nominal precision.
  using precision = typename layer_at<0>::precision;
  /// Whether any layer computes in fp16 (and so needs loss scaling).
  static constexpr bool has_half_compute = (computes_in_half<Layers>() || ...);

  /// @brief Holds `layers`, run in order.
  explicit Sequential(Layers... layers) : layers_(std::move(layers)...) { set_label(""); }

  /// @brief Initialises every layer deterministically: layer I draws from stream I under `seed`.
  void initialize(std::uint64_t seed) {
    for_each_index([&]<std::size_t I>() { boost::hana::at_c<I>(layers_).initialize(seed, I); });
  }

  /// @brief Initialises a model nested in another one (its `Layer` form): layer I draws from
  /// `nested_stream(stream, I)`, so no two layers of the whole model share a stream.
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    for_each_index(
        [&]<std::size_t I>() { boost::hana::at_c<I>(layers_).initialize(seed, nested_stream(stream, I)); });
  }

  /// @brief Names the layers in messages after this model's place in an enclosing one: the label
  /// "layers.3 (Sequential)" makes layer I "layers.3.layers.I (<kind>)".
  void set_label(const std::string& label) {
    const std::string prefix = label_path(label).empty() ? "" : std::string(label_path(label)) + ".";
    for_each_index([&]<std::size_t I>() {
      boost::hana::at_c<I>(layers_).set_label(
          mpx::detail::concat(prefix, "layers.", I, " (", layer_at<I>::kind, ")"));
    });
  }

  /// @brief Calls `f(layer)` on each layer, in order (nn::for_each_layer).
  template <class F>
  void for_each_child(F&& f) {
    for_each_index([&]<std::size_t I>() { f(boost::hana::at_c<I>(layers_)); });
  }

  /// @brief Puts every layer into training (`true`) or evaluation mode (see nn/training_mode.hpp).
  void set_training(bool training) {
    training_ = training;
    for_each_index([&]<std::size_t I>() { nn::set_training(boost::hana::at_c<I>(layers_), training); });
  }
  /// @brief Whether the model is in training mode (the default).
  [[nodiscard]] bool training() const noexcept { return training_; }

  /// @brief Hands the running training step to every layer that draws random numbers.
  void bind_step(const StepKey& key) {
    for_each_index([&]<std::size_t I>() { nn::bind_step(boost::hana::at_c<I>(layers_), key); });
  }

  /// @brief Runs every layer; returns the last layer's output buffer. The first layer keeps a
  /// pointer to `x` for backward: `x` must stay alive until then.
  const Tensor<output_type, device_type>& forward(const Tensor<input_type, device_type>& x) {
    const auto& y = forward_from<0>(x);
    last_output_ = &y;
    return y;
  }

  /// @brief Runs every layer on fp32 input for a model whose input type is another (bf16, fp16,
  /// fp64): `x` is rounded to nearest-even into a buffer the model owns, which is what the first
  /// layer sees and what backward reads, so `x` itself may be a temporary. The bits are those of
  /// forward on `mpx::convert<Tag>(x)`.
  const Tensor<output_type, device_type>& forward(const Tensor<float, device_type>& x) requires(
      FloatingElement<input_type> && !std::is_same_v<input_type, float>) {
    ensure_shape(rounded_input_, x.shape());
    Backend<device_type>::template round_into<tag_of_t<input_type>>(x, rounded_input_);
    return forward(rounded_input_);
  }

  /// @brief Does not compile: the first layer keeps a pointer to its input for backward, so a
  /// temporary cannot be an input (see `reject_temporary_input`).
  const Tensor<output_type, device_type>& forward(Tensor<input_type, device_type>&&) {
    reject_temporary_input<Sequential>();
    return last_output();
  }

  /// @brief Does not compile: an input of another element type (other than fp32, which the
  /// overload above rounds) or on another device. The message names the type the model takes and
  /// the conversion to write.
  template <Element Received, class InputDevice>
  const Tensor<output_type, device_type>& forward(const Tensor<Received, InputDevice>&) {
    static_assert(detail::check_input<input_type, Received, device_type, InputDevice>::value);
    return last_output();
  }

  /// @brief Drops what the last forward saved for backward (pointers to inputs that may be about to
  /// go away, e.g. an evaluation batch); a backward before the next forward then throws.
  void forget_inputs() noexcept {
    for_each_index([&]<std::size_t I>() {
      if constexpr (requires { boost::hana::at_c<I>(layers_).forget_input(); }) {
        boost::hana::at_c<I>(layers_).forget_input();
      }
    });
  }

  /// @brief `forget_inputs()`, under the name the layers use, for a model nested in another.
  void forget_input() noexcept { forget_inputs(); }

  /// @brief The output of the last forward (e.g. the logits a training step computed).
  [[nodiscard]] const Tensor<output_type, device_type>& last_output() const {
    if (last_output_.empty()) throw error("mpx::nn::Sequential::last_output: no forward has run yet");
    return *last_output_;
  }

  /// @brief Runs every layer's backward in reverse order, accumulating parameter gradients.
  /// @return dL/dx for the model's input when `input_grad` is true, else null.
  const Tensor<input_type, device_type>* backward(const Tensor<output_type, device_type>& dy,
                                                  bool input_grad = false) {
    return backward_from<size - 1>(dy, input_grad, detail::NoLayerReport{});
  }

  /// @brief `backward`, calling `layer_done(layer)` right after each layer's backward, last layer
  /// first: that layer's parameter gradients are then final for this backward, so data parallelism
  /// can start reducing them while the layers below run (see train/gradient_sync.hpp).
  template <class LayerDone>
  const Tensor<input_type, device_type>* backward(const Tensor<output_type, device_type>& dy, bool input_grad,
                                                  const LayerDone& layer_done) {
    return backward_from<size - 1>(dy, input_grad, layer_done);
  }

  /// @brief Whether backward fuses layer I - 1's activation gradient into layer I's dx GEMM (a
  /// Linear right after a Linear<ReLU> of the same compute type: see `ActivationGradientFusion`).
  template <std::size_t I>
  static constexpr bool fuses_previous_activation() {
    if constexpr (I == 0) {
      return false;
    } else {
      using Previous = layer_at<I - 1>;
      using Current = layer_at<I>;
      if constexpr (!std::is_same_v<typename detail::link<I - 1, Previous, Current>::cast, detail::NoCast> ||
                    !HandsOnActivationGradient<Previous>) {
        return false;
      } else {
        return AppliesActivationGradient<Current,
                                         decltype(std::declval<Previous&>().activation_gradient_fusion())>;
      }
    }
  }

  /// @brief Calls f(name, parameter) for every parameter, in a stable order ("layers.0.weight", ...);
  /// `name` is a `std::string_view` valid during the call.
  template <class F>
  void for_each_parameter(F&& f) {
    for_each_index([&]<std::size_t I>() {
      boost::hana::at_c<I>(layers_).for_each_parameter([&](std::string_view local, auto& parameter) {
        std::string name = "layers.";
        name.append(std::to_string(I)).append(".").append(local);
        f(std::string_view(name), parameter);
      });
    });
  }

  /// @brief Calls f(name, tensor) for every buffer of every layer ("layers.1.running_mean", ...): the
  /// untrained state saved and loaded with the weights (nn::for_each_buffer).
  template <class F>
  void for_each_buffer(F&& f) {
    for_each_index([&]<std::size_t I>() {
      nn::for_each_buffer(boost::hana::at_c<I>(layers_), [&](std::string_view local, auto& tensor) {
        std::string name = "layers.";
        name.append(std::to_string(I)).append(".").append(local);
        f(std::string_view(name), tensor);
      });
    });
  }

  /// @brief Sets every gradient to zero.
  void zero_grad() {
    for_each_parameter([](std::string_view, auto& parameter) { parameter.zero_grad(); });
  }

  /// @brief Number of trainable scalars.
  [[nodiscard]] std::int64_t parameter_count() {
    std::int64_t count = 0;
    for_each_parameter([&](std::string_view, auto& parameter) { count += parameter.master().numel(); });
    return count;
  }

  /// @brief The layer at index I.
  template <std::size_t I>
  [[nodiscard]] auto& layer() noexcept {
    return boost::hana::at_c<I>(layers_);
  }

  /// @brief Each layer's `describe_layer` in order: element I describes "layers.I" (the casts
  /// Sequential inserts are not listed; the layers' precisions imply them). `io::model_json` turns
  /// it into the JSON that checkpoints carry.
  [[nodiscard]] std::vector<LayerDescription> describe() const {
    std::vector<LayerDescription> descriptions;
    descriptions.reserve(size);
    for_each_index(
        [&]<std::size_t I>() { descriptions.push_back(describe_layer(boost::hana::at_c<I>(layers_))); });
    return descriptions;
  }

 private:
  template <class F>
  static void for_each_index(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (f.template operator()<I>(), ...);
    }
    (std::make_index_sequence<size>{});
  }

  template <std::size_t I, class In>
  const Tensor<output_type, device_type>& forward_from(const In& x) {
    const auto& y = boost::hana::at_c<I>(layers_).forward(x);
    if constexpr (I + 1 == size) {
      return y;
    } else {
      auto& cast = boost::hana::at_c<I>(links_);
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(cast)>, detail::NoCast>) {
        return forward_from<I + 1>(y);
      } else {
        return forward_from<I + 1>(cast.forward(y));
      }
    }
  }

  // Layer I's backward from dy, or from its dZ when the layer above applied its activation gradient
  // (`ActivationApplied`); then the layers below it.
  template <std::size_t I, bool ActivationApplied = false, class Grad, class LayerDone>
  const Tensor<input_type, device_type>* backward_from(const Grad& dy, bool input_grad,
                                                       const LayerDone& layer_done) {
    auto& layer = boost::hana::at_c<I>(layers_);
    const auto* dx = [&] {
      if constexpr (fuses_previous_activation<I>()) {
        const auto fusion = boost::hana::at_c<I - 1>(layers_).activation_gradient_fusion();
        if constexpr (ActivationApplied) {
          return layer.backward_activation_applied(dy, fusion);
        } else {
          return layer.backward(dy, fusion);
        }
      } else if constexpr (ActivationApplied) {
        return layer.backward_activation_applied(dy, I > 0 || input_grad);
      } else {
        return layer.backward(dy, I > 0 || input_grad);
      }
    }();
    layer_done(layer);
    if constexpr (I == 0) {
      return dx;
    } else if constexpr (fuses_previous_activation<I>()) {
      return backward_from<I - 1, true>(*dx, input_grad, layer_done);
    } else {
      auto& cast = boost::hana::at_c<I - 1>(links_);
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(cast)>, detail::NoCast>) {
        return backward_from<I - 1>(*dx, input_grad, layer_done);
      } else {
        return backward_from<I - 1>(*cast.backward(*dx, true), input_grad, layer_done);
      }
    }
  }

  boost::hana::tuple<Layers...> layers_;
  link_tuple links_;
  Tensor<input_type, device_type> rounded_input_;  // fp32 input rounded to input_type (stays empty
                                                   // when the model takes fp32)
  SavedPointer<Tensor<output_type, device_type>> last_output_;
  bool training_ = true;
};

}  // namespace mpx::nn
