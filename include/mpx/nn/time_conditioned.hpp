// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::TimeConditioned<TimeNet, Body>`: a model conditioned on a timestep per sample, as a
/// diffusion UNet is: the body reads the time network's embedding of the timesteps wherever it has an
/// `nn::AddTimeEmbedding` layer.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpx/backend/backend.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/step_key.hpp"
#include "mpx/nn/time_embedding.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/tensor/tensor.hpp"
#include "mpx/tensor/transfer.hpp"

namespace mpx::nn {

namespace detail {
// A class template, so that the "in instantiation of" note above a failure names the parts.
template <class TimeNet, class Body>
struct check_time_conditioned {
  static_assert(
      Layer<TimeNet> && Layer<Body>,
      "mpx::nn::TimeConditioned<TimeNet, Body>: both parts (see check_time_conditioned above) must be "
      "layers: input_type, output_type, device_type, kind, forward(x) and backward(dy, input_grad)");
  static_assert(
      std::is_same_v<typename TimeNet::device_type, typename Body::device_type>,
      "mpx::nn::TimeConditioned<TimeNet, Body>: the time network and the body must run on one device");
  static_assert(
      std::is_same_v<typename TimeNet::input_type, typename TimeNet::output_type> &&
          FloatingElement<typename TimeNet::input_type>,
      "mpx::nn::TimeConditioned<TimeNet, Body>: the time network maps the timesteps' features to an "
      "embedding in one floating type (its layers' compute type), e.g. Sequential{linear(64, 256), "
      "silu(), linear(256, 256), silu()}");
  /// The body's precision; read through this check so that parts that are no layers fail it first.
  using precision = typename Body::precision;
};
}  // namespace detail

/// @brief y = body(x), every `nn::AddTimeEmbedding` inside the body adding a projection of
/// e = time_net(features(t)) to its input, t being the timestep of each sample.
///
/// `set_timesteps(t)` (one float per sample, from the host) comes before each forward: it computes
/// the sinusoidal features of t (`nn::timestep_features`, rounded into the time network's type) and
/// copies them to the device, into the same buffer every time (so a captured training step replays
/// with the new timesteps). Forward runs the time network, then the body; backward runs the body,
/// whose `AddTimeEmbedding` layers sum the embedding's gradient, then the time network on that sum.
/// The time network ends with the nonlinearity the blocks apply to the embedding (diffusers'
/// UNet2DModel: Linear, SiLU, Linear, then SiLU in each block; here the last SiLU once):
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed>;
/// mpx::nn::TimeConditioned model{
///     mpx::nn::TimestepFeatures{.dim = 64},
///     mpx::nn::Sequential{L::linear(64, 256), L::silu(), L::linear(256, 256), L::silu()},
///     mpx::nn::Sequential{L::conv2d(1, 64, 3, {.padding = 1}), L::add_time_embedding(256, 64), ...}};
/// model.set_timesteps(timesteps);        // std::span<const float>, one per sample
/// const auto& y = model.forward(x_t);    // x_t [N, 28, 28, 1]
/// @endcode
/// Parameters (and buffers) are named "time.<the time network's names>" and "body.<the body's>".
/// The model trains as a `Sequential` does (`Trainer`, checkpoints, `io::model_json`, data parallel):
/// set the timesteps of each batch before `trainer.step(x_t, noise)`. The timesteps are not split
/// across micro-batches (`MicroBatches{k}`): such a step is a shape error that says so.
/// @tparam TimeNet a layer from the features [N, dim] to the embedding [N, E], one floating type.
/// @tparam Body the conditioned model, with at least one `AddTimeEmbedding` reading an embedding of
///         E features in TimeNet's type.
template <class TimeNet, class Body>
class TimeConditioned
    : public LayerBase<TimeConditioned<TimeNet, Body>,
                       typename detail::check_time_conditioned<TimeNet, Body>::precision,
                       typename Body::device_type, typename Body::input_type, typename Body::output_type> {
  using In = typename Body::input_type;
  using Out = typename Body::output_type;
  using Device = typename Body::device_type;
  using Embedding = typename TimeNet::output_type;
  using Base = LayerBase<TimeConditioned, typename Body::precision, Device, In, Out>;
  using Slot = TimeEmbeddingSlot<Embedding, Device>;

 public:
  /// @brief Layer name used in messages and descriptions.
  static constexpr std::string_view kind = "TimeConditioned";
  using Base::forward;
  /// @brief Whether either part computes in fp16 anywhere (and so needs loss scaling).
  static constexpr bool has_half_compute = computes_in_half<TimeNet>() || computes_in_half<Body>();

  /// @brief Conditions `body` on timesteps through `time_net`, which reads `features` of each.
  /// @throws mpx::invalid_argument when the body has no `AddTimeEmbedding` layer.
  TimeConditioned(TimestepFeatures features, TimeNet time_net, Body body)
      : features_spec_(features),
        time_(std::move(time_net)),
        body_(std::move(body)),
        slot_(std::make_unique<Slot>()) {
    std::int64_t readers = 0;
    nn::for_each_layer(body_, [&](auto& layer) {
      using Layer = std::remove_cvref_t<decltype(layer)>;
      if constexpr (requires { typename Layer::slot_type; }) {
        static_assert(
            std::is_same_v<typename Layer::slot_type, Slot>,
            "mpx::nn::TimeConditioned: an AddTimeEmbedding in the body computes in another type, or on "
            "another device, than the time network's output; give it the time network's precision");
        layer.bind_time_embedding(slot_.get());
        ++readers;
      }
    });
    if (readers == 0) {
      throw invalid_argument(
          "mpx::nn::TimeConditioned: the body has no AddTimeEmbedding layer (with the time network's element "
          "type) to read the time embedding; add one to each block that is to be conditioned");
    }
    set_label(this->label());
  }

  /// @brief Initialises the time network from (seed, `nested_stream(stream, 0)`), the body from
  /// (seed, `nested_stream(stream, 1)`).
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    time_.initialize(seed, nested_stream(stream, 0));
    body_.initialize(seed, nested_stream(stream, 1));
  }
  /// @brief Initialises the model from `seed` (stream 0), as a `Sequential` model initialises.
  void initialize(std::uint64_t seed) { initialize(seed, 0); }

  /// @brief The timesteps of the next forward's samples, one each.
  /// @param timesteps the diffusion step of each sample (host memory)
  void set_timesteps(std::span<const float> timesteps) {
    const Shape shape{static_cast<std::int64_t>(timesteps.size()), features_spec_.dim};
    ensure_shape(features_, shape);
    if constexpr (std::is_same_v<Device, Host>) {
      timestep_features(timesteps, features_spec_, features_);
    } else {
      ensure_shape(host_features_, shape);
      timestep_features(timesteps, features_spec_, host_features_);
      mpx::copy(features_, host_features_);
    }
  }

  /// @brief y = body(x), conditioned on the timesteps of the last `set_timesteps`.
  /// @throws mpx::error before any `set_timesteps`; mpx::shape_error naming the layer when x's batch
  ///         is not the number of timesteps.
  const Tensor<Out, Device>& forward(const Tensor<In, Device>& x) {
    if (features_.rank() != 2) {
      throw error(mpx::detail::concat(this->label(), ": set_timesteps(...) must come before forward"));
    }
    const std::int64_t timesteps = features_.shape()[0];
    if (x.rank() < 1 || x.shape()[0] != timesteps) {
      const bool split = x.rank() >= 1 && x.shape()[0] > 0 && timesteps % x.shape()[0] == 0;
      throw shape_error(mpx::detail::concat(
          this->label(), ": x ", x.shape(), " has not one sample per timestep (", timesteps,
          " timesteps set)",
          split ? "; the timesteps are not split across micro-batches: train with one micro-batch per step"
                : ""));
    }
    slot_->embedding = &time_.forward(features_);
    return body_.forward(x);
  }

  /// @brief The body's gradients, then the time network's from the embedding's summed gradient;
  /// returns the body's dx when `input_grad`.
  const Tensor<In, Device>* backward(const Tensor<Out, Device>& dy, bool input_grad = true) {
    slot_->gradient_started = false;
    const Tensor<In, Device>* dx = body_.backward(dy, input_grad);
    if (!slot_->gradient_started) {
      throw error(mpx::detail::concat(this->label(), ": no AddTimeEmbedding layer ran backward; ",
                                      "the time network has no gradient"));
    }
    time_.backward(slot_->gradient, false);
    return dx;
  }

  /// @brief Calls f("time.<name>", parameter) for the time network's parameters, then
  /// f("body.<name>", parameter) for the body's.
  template <class F>
  void for_each_parameter(F&& f) {
    for_each_part([&](const char* prefix, auto& part) {
      part.for_each_parameter([&](std::string_view local, auto& parameter) {
        f(std::string_view(prefixed(prefix, local)), parameter);
      });
    });
  }
  /// @brief Calls f("time.<name>", tensor) for each of the time network's buffers, then the body's.
  template <class F>
  void for_each_buffer(F&& f) {
    for_each_part([&](const char* prefix, auto& part) {
      nn::for_each_buffer(part, [&](std::string_view local, auto& tensor) {
        f(std::string_view(prefixed(prefix, local)), tensor);
      });
    });
  }
  /// @brief Names the layer in messages; the parts' layers are named under "<label>.time" and
  /// "<label>.body".
  void set_label(std::string label) {
    Base::set_label(std::move(label));
    time_.set_label(mpx::detail::concat(label_path(this->label()), ".time (", TimeNet::kind, ")"));
    body_.set_label(mpx::detail::concat(label_path(this->label()), ".body (", Body::kind, ")"));
  }
  /// @brief Calls `f(time network)`, then `f(body)` (nn::for_each_layer).
  template <class F>
  void for_each_child(F&& f) {
    for_each_part([&](const char*, auto& part) { f(part); });
  }
  /// @brief Passes the mode to both parts (see nn/training_mode.hpp).
  void set_training(bool training) {
    Base::set_training(training);
    for_each_part([&](const char*, auto& part) { nn::set_training(part, training); });
  }
  /// @brief Passes the running step to the layers that draw random numbers.
  void bind_step(const StepKey& key) {
    for_each_part([&](const char*, auto& part) { nn::bind_step(part, key); });
  }
  /// @brief Drops what the parts saved for backward.
  void forget_input() noexcept {
    for_each_part([](const char*, auto& part) {
      if constexpr (requires { part.forget_input(); }) part.forget_input();
    });
  }
  /// @brief `forget_input()`, under the name a top-level model uses (as `Sequential`'s).
  void forget_inputs() noexcept { forget_input(); }

  /// @brief Sets every gradient to zero (a top-level model's duty, as `Sequential`'s).
  void zero_grad() {
    for_each_parameter([](std::string_view, auto& parameter) { parameter.zero_grad(); });
  }
  /// @brief Number of trainable scalars.
  [[nodiscard]] std::int64_t parameter_count() {
    std::int64_t count = 0;
    for_each_parameter([&](std::string_view, auto& parameter) { count += parameter.master().numel(); });
    return count;
  }

  /// @brief Three descriptions, as a model describes its layers: the features ({"kind":
  /// "TimestepFeatures", "dim", "max_period"}), the time network's and the body's.
  [[nodiscard]] std::vector<LayerDescription> describe() const {
    return {LayerDescription{{"kind", std::string("TimestepFeatures")},
                             {"dim", features_spec_.dim},
                             {"max_period", features_spec_.max_period}},
            describe_layer(time_), describe_layer(body_)};
  }

  /// @brief The time network.
  [[nodiscard]] TimeNet& time_net() noexcept { return time_; }
  /// @brief The conditioned body.
  [[nodiscard]] Body& body() noexcept { return body_; }
  /// @brief The features of the timesteps.
  [[nodiscard]] const TimestepFeatures& features() const noexcept { return features_spec_; }

 private:
  template <class Visit>
  void for_each_part(Visit&& visit) {
    visit("time.", time_);
    visit("body.", body_);
  }
  static std::string prefixed(const char* prefix, std::string_view local) {
    std::string name = prefix;
    name.append(local);
    return name;
  }

  TimestepFeatures features_spec_;
  TimeNet time_;
  Body body_;
  // On the heap, so that the body's layers keep pointing at it when the model moves.
  std::unique_ptr<Slot> slot_;
  Tensor<Embedding, Host> host_features_;  // staging for a GPU's features_
  Tensor<Embedding, Device> features_;     // [N, dim]: the time network's input
};

/// @brief `TimeConditioned{features, time_net, body}`.
template <class TimeNet, class Body>
TimeConditioned(TimestepFeatures, TimeNet, Body) -> TimeConditioned<TimeNet, Body>;

}  // namespace mpx::nn
