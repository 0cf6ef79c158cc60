// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `optim::AdamW`: PyTorch's AdamW (bias-corrected moments, decoupled weight decay) with its
/// state in fp32, over the master weights, refreshing the compute copy in the same pass.

#include <cmath>
#include <cstdint>
#include <string>

#include "mpx/backend/cpu/backend.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/error.hpp"

namespace mpx::optim {

/// @brief AdamW over every parameter of `Model`.
/// @code
/// mpx::optim::AdamW optimizer(model, {.lr = 1e-3f, .weight_decay = 1e-4f});
/// @endcode
template <class Model>
class AdamW {
  using Device = typename Model::device_type;

 public:
  using Options = AdamWSettings;

  /// @brief Throws `mpx::invalid_argument` naming a bad hyper-parameter.
  AdamW(Model& model, Options options) : model_(model), options_(options) { validate(options_); }

  /// @brief Applies one update to every parameter from its (unscaled) gradient.
  void step() {
    ++steps_;
    model_.for_each_parameter([&](const std::string&, auto& p) {
      Backend<Device>::adamw_update(p.master(), p.compute_copy(), p.grad(), p.state(0), p.state(1), steps_,
                                    options_);
    });
  }

  [[nodiscard]] const Options& options() const noexcept { return options_; }
  void set_lr(float lr) {
    Options changed = options_;
    changed.lr = lr;
    validate(changed);
    options_ = changed;
  }
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  void set_steps(std::int64_t steps) noexcept { steps_ = steps; }

 private:
  static void validate(const Options& o) {
    const auto fail = [](const char* field, auto value, const char* expected) {
      throw invalid_argument(mpx::detail::concat("mpx::optim::AdamW: ", field, " = ", value,
                                                 " is invalid; expected ", expected));
    };
    if (!(std::isfinite(o.lr) && o.lr > 0.0f)) fail("lr", o.lr, "a finite value > 0");
    if (!(o.beta1 >= 0.0f && o.beta1 < 1.0f)) fail("beta1", o.beta1, "a value in [0, 1)");
    if (!(o.beta2 >= 0.0f && o.beta2 < 1.0f)) fail("beta2", o.beta2, "a value in [0, 1)");
    if (!(std::isfinite(o.epsilon) && o.epsilon > 0.0f)) fail("epsilon", o.epsilon, "a finite value > 0");
    if (!(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0f))
      fail("weight_decay", o.weight_decay, "a finite value >= 0");
  }

  Model& model_;
  Options options_;
  std::int64_t steps_ = 0;
};

}  // namespace mpx::optim
