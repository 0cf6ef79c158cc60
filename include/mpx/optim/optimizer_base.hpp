// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What every optimizer shares: its model, validated hyper-parameters, the learning-rate
/// setter and the update count.

#include <cstdint>

#include "mpx/error.hpp"

namespace mpx::optim::detail {

/// The common part of `SGD` and `AdamW` (CRTP: `Derived::validate(options)` throws for bad values).
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

  /// @brief Updates applied so far.
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  /// @brief Restores the update count (checkpoints).
  void set_steps(std::int64_t steps) noexcept { steps_ = steps; }

 protected:
  OptimizerBase(Model& model, const Options& options) : model_(model), options_(options) {
    Derived::validate(options_);
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
