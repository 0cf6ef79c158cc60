// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What every optimizer shares: its model, validated hyper-parameters, the learning-rate
/// setter and the update count.

#include <cstdint>
#include <type_traits>

#include "mpx/backend/optimizer_math.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"

namespace mpx::optim::detail {

/// The common part of `SGD` and `AdamW` (CRTP: `Derived::validate(options)` throws for bad values;
/// `Derived::update(control)` visits the parameters, with a null control on the host and the CUDA
/// step's scalars on the device).
template <class Derived, class Model, class Settings>
class OptimizerBase {
 public:
  using Options = Settings;

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

  /// @brief Applies one update to every parameter from its (unscaled) gradient.
  void step() {
    static_cast<Derived&>(*this).update(static_cast<const void*>(nullptr));
    ++steps_;
  }

  /// @brief Queues one update on the device, where `scalars` (the CUDA training step's, in device
  /// memory) decides whether it applies and holds the update count, the learning rate and the
  /// clipping coefficient; `steps()` catches up when the trainer reads its result.
  template <class StepScalars>
  void enqueue_step(const StepScalars* scalars) {
    static_cast<Derived&>(*this).update(scalars);
  }

  /// @brief Updates applied so far (on CUDA, as of the trainer's last `last_result()`).
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  /// @brief Restores the update count (checkpoints).
  void set_steps(std::int64_t steps) noexcept { steps_ = steps; }

 protected:
  template <class Parameter>
  static constexpr bool stochastic_updates =
      std::is_same_v<typename Parameter::precision::update_rounding, RoundStochastic>;

  OptimizerBase(Model& model, const Options& options) : model_(model), options_(options) {
    Derived::validate(options_);
  }

  /// How update number `update` (from 1) rounds parameter number `index` (visit order) into its
  /// master type, as the parameter's precision policy says. Stochastic rounding draws its bits at
  /// (rounding_seed, optimizer_rounding_stream(update, index), element): the stream's top bit keeps it
  /// apart from the streams the data loader and the initialisers draw from, and it holds the update
  /// number and the parameter index, so no two (update, parameter) pairs share bits.
  template <class Parameter>
  [[nodiscard]] auto update_rounding(std::int64_t update, int index) const {
    if constexpr (stochastic_updates<Parameter>) {
      return RoundStochastic{options_.rounding_seed, optimizer_rounding_stream(update, index)};
    } else {
      return RoundNearest{};
    }
  }

  /// The same rounding for a device step, whose update number only the device knows: its kernels
  /// complete the stream from the update count in device memory, so a replayed CUDA graph draws
  /// fresh bits at every update.
  template <class Parameter>
  [[nodiscard]] auto device_update_rounding(int index) const {
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

  Model& model_;
  Options options_;
  std::int64_t steps_ = 0;
};

}  // namespace mpx::optim::detail
