// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What every optimizer shares: the parameters it updates, validated hyper-parameters, the
/// learning-rate setter, the update count, and the one way an update is applied: under an
/// `UpdateControl` in the memory of the parameters' device.

#include <cstdint>
#include <type_traits>

#include "mpx/backend/optimizer_math.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/backend/update_control.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/parameter_list.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/device_value.hpp"

namespace mpx::optim::detail {

/// The common part of `SGD` and `AdamW` (CRTP: `Derived::validate(options)` throws for bad values;
/// `Derived::update(control)` visits the parameters). `Model` is anything with
/// `for_each_parameter(f)` and a `device_type`: a model, or an `nn::ParameterList`.
template <class Derived, class Model, class Settings>
class OptimizerBase {
 public:
  using Options = Settings;
  /// @brief Device the parameters live on.
  using device_type = typename Model::device_type;

  /// @brief The hyper-parameters in use.
  [[nodiscard]] const Options& options() const noexcept { return options_; }

  /// @brief Changes the learning rate (for schedules); throws like the constructor and then keeps
  /// the old value.
  void set_lr(double lr) {
    Options changed = options_;
    changed.lr = lr;
    Derived::validate(changed);
    options_ = changed;
  }

  /// @brief Changes the seed of stochastic rounding into fp16/bf16 master weights (checkpoints).
  void set_rounding_seed(std::uint64_t seed) noexcept { options_.rounding_seed = seed; }

  /// @brief Applies one update to every parameter from its (unscaled) gradient, at the current
  /// learning rate, outside a training step (a `Trainer` calls `step(control)`).
  void step() {
    UpdateControl control{.lr = options_.lr, .optimizer_step = steps_};
    static_cast<const Derived&>(*this).update_preparation()(control);
    control_.write(control);
    step(control_.get());
    ++steps_;
  }

  /// @brief Queues one update under `control`, an `UpdateControl` in the parameters' device memory
  /// (a training step's): it decides whether the update applies and holds the update count, the
  /// learning rate and the clipping coefficient. `steps()` is not changed: the owner of `control`
  /// (the trainer, when it reads its result) sets it.
  void step(const UpdateControl* control) { static_cast<Derived&>(*this).update(control); }

  /// @brief What a training step derives for each update once it knows the update count, on the
  /// step's device, before the update runs (none here; AdamW's bias corrections: see `AdamW`).
  [[nodiscard]] NoUpdatePreparation update_preparation() const noexcept { return {}; }

  /// @brief Updates applied so far (under a trainer, as of its last `read_result()`).
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  /// @brief Restores the update count (checkpoints).
  void set_steps(std::int64_t steps) noexcept { steps_ = steps; }

 protected:
  template <class Parameter>
  static constexpr bool stochastic_updates =
      std::is_same_v<typename Parameter::precision::update_rounding, RoundStochastic>;

  /// Over the parameters of `model`, held by reference.
  OptimizerBase(Model& model, const Options& options) : model_(model), options_(options) {
    Derived::validate(options_);
  }
  /// Over a parameter list, held by value (it holds pointers to the parameters); a temporary model
  /// is refused at compile time.
  OptimizerBase(Model&& parameters, const Options& options)
      : model_(parameter_list(parameters)), options_(options) {
    Derived::validate(options_);
  }

  /// A temporary handed to the constructor: only a parameter list may be one (the list is copied;
  /// a model would be held by a reference that dangles).
  static Model& parameter_list(Model& parameters) {
    static_assert(nn::is_parameter_list_v<Model>,
                  "mpx::optim: an optimizer keeps a reference to its model, so the model cannot be a "
                  "temporary; pass a named model, or the parameters to update as an mpx::nn::ParameterList");
    return parameters;
  }

  /// How parameter number `index` (visit order) is rounded into its master type, as the parameter's
  /// precision policy says. Stochastic rounding draws its bits at (rounding_seed,
  /// optimizer_rounding_stream(update, index), element), with the update number read from the
  /// `UpdateControl` where the update runs (so a replayed CUDA graph draws fresh bits at every
  /// update): the stream's top bit keeps it apart from the streams the data loader and the
  /// initialisers draw from, and it holds the update number and the parameter index, so no two
  /// (update, parameter) pairs share bits.
  template <class Parameter>
  [[nodiscard]] auto update_rounding(int index) const {
    if constexpr (stochastic_updates<Parameter>) {
      return RoundStochasticPerUpdate{options_.rounding_seed, index};
    } else {
      return RoundNearest{};
    }
  }

  /// Throws `mpx::invalid_argument`: "<optimizer>: <field> = <value> is invalid; expected <...>".
  template <class Value>
  [[noreturn]] static void fail(const char* optimizer, const char* field, const Value& value,
                                const char* expected) {
    throw invalid_argument(
        mpx::detail::concat(optimizer, ": ", field, " = ", value, " is invalid; expected ", expected));
  }

  // A model is held by reference, a parameter list (a few pointers) by value.
  std::conditional_t<nn::is_parameter_list_v<Model>, Model, Model&> model_;
  Options options_;
  std::int64_t steps_ = 0;

 private:
  DeviceValue<UpdateControl, device_type> control_;  // the control of standalone `step()` calls
};

}  // namespace mpx::optim::detail
