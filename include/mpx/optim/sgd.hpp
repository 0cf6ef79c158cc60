// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `optim::SGD`: PyTorch's SGD (momentum, dampening, Nesterov, L2 weight decay) over the
/// master weights, refreshing the compute copy in the same pass.

#include <cmath>
#include <cstdint>
#include <string>

#include "mpx/backend/cpu/backend.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/error.hpp"

namespace mpx::optim {

/// @brief Stochastic gradient descent over every parameter of `Model`.
/// @code
/// mpx::optim::SGD optimizer(model, {.lr = 0.05f, .momentum = 0.9f, .nesterov = true});
/// @endcode
template <class Model>
class SGD {
  using Device = typename Model::device_type;

 public:
  using Options = SgdSettings;

  /// @brief Throws `mpx::invalid_argument` naming a bad hyper-parameter.
  SGD(Model& model, Options options) : model_(model), options_(options) { validate(options_); }

  /// @brief Applies one update to every parameter from its (unscaled) gradient.
  void step() {
    model_.for_each_parameter([&](const std::string&, auto& p) {
      auto* momentum = options_.momentum != 0.0f ? &p.state(0) : nullptr;
      Backend<Device>::sgd_update(p.master(), p.compute_copy(), p.grad(), momentum, steps_ == 0, options_);
    });
    ++steps_;
  }

  [[nodiscard]] const Options& options() const noexcept { return options_; }
  /// @brief Changes the learning rate (for schedules).
  void set_lr(float lr) {
    Options changed = options_;
    changed.lr = lr;
    validate(changed);
    options_ = changed;
  }
  /// @brief Updates applied so far.
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  /// @brief Restores the update count (checkpoints).
  void set_steps(std::int64_t steps) noexcept { steps_ = steps; }

 private:
  static void validate(const Options& o) {
    const auto fail = [](const char* field, auto value, const char* expected) {
      throw invalid_argument(
          mpx::detail::concat("mpx::optim::SGD: ", field, " = ", value, " is invalid; expected ", expected));
    };
    if (!(std::isfinite(o.lr) && o.lr > 0.0f)) fail("lr", o.lr, "a finite value > 0");
    if (!(o.momentum >= 0.0f && o.momentum < 1.0f)) fail("momentum", o.momentum, "a value in [0, 1)");
    if (!(o.dampening >= 0.0f && o.dampening <= 1.0f)) fail("dampening", o.dampening, "a value in [0, 1]");
    if (!(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0f))
      fail("weight_decay", o.weight_decay, "a finite value >= 0");
    if (o.nesterov && (o.momentum == 0.0f || o.dampening != 0.0f)) {
      fail("nesterov", "true", "momentum > 0 and dampening = 0 (as PyTorch requires)");
    }
  }

  Model& model_;
  Options options_;
  std::int64_t steps_ = 0;
};

}  // namespace mpx::optim
