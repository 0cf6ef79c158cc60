// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `LossScaler<Policy>`: the runtime state of a loss-scaling policy, with exactly PyTorch
/// `torch.amp.GradScaler`'s update rule for `DynamicLossScaling`.

#include <cmath>
#include <cstdint>

#include "mpx/error.hpp"
#include "mpx/policy/loss_scale_update.hpp"
#include "mpx/policy/loss_scaling.hpp"

namespace mpx {

/// @brief Holds the loss scale and updates it after each step.
///
/// For `DynamicLossScaling` the update is GradScaler's (`torch._amp_update_scale_`): on an overflow
/// the step is skipped, `scale *= backoff_factor` and the growth tracker resets; after a clean step
/// the tracker counts up and, on reaching `growth_interval`, `scale *= growth_factor` unless that
/// product is not finite, and the tracker resets either way. The scale is fp32 and the factors are
/// doubles, as in torch: each product is `float(double(scale) * factor)`. The opt-in extensions act
/// only when set: the scale is clamped to [min_scale, max_scale], and with `hysteresis = N` the scale
/// backs off only on the N-th consecutive overflow (each overflowing step is still skipped).
///
/// `StaticLossScaling` keeps its scale; `NoLossScaling` has scale 1 and compiles to nothing but the
/// counters. Every policy counts taken and skipped steps: a step with a non-finite gradient is
/// never applied, whatever the policy.
template <LossScalingPolicy Policy>
class LossScaler {
 public:
  /// @brief The scaling policy.
  using policy = Policy;
  /// @brief The policy's knobs.
  using Options = typename Policy::Options;

  /// @brief A scaler with validated options (throws `mpx::invalid_argument` naming a bad field).
  explicit LossScaler(const Options& options = {}) : options_(options) {
    options_.validate();
    if constexpr (Policy::is_dynamic) {
      state_.scale = options_.init_scale;
      state_.growth_factor = options_.growth_factor;
      state_.backoff_factor = options_.backoff_factor;
      state_.growth_interval = options_.growth_interval;
    } else if constexpr (Policy::scales_loss) {
      state_.scale = options_.scale;
    }
  }

  /// @brief The factor the loss is multiplied by before backward.
  [[nodiscard]] float scale() const noexcept {
    if constexpr (Policy::scales_loss) {
      return state_.scale;
    } else {
      return 1.0f;
    }
  }

  /// @brief The factor gradients are multiplied by to unscale them: `float(1.0 / double(scale))`,
  /// computed in double as GradScaler does so that the product is correctly rounded.
  [[nodiscard]] float inverse_scale() const noexcept {
    return static_cast<float>(1.0 / static_cast<double>(scale()));
  }

  /// @brief Records the outcome of a step and updates the scale.
  /// @param found_inf whether any gradient of the step was inf or NaN (the step was skipped).
  void update(bool found_inf) noexcept { update_loss_scale<Policy>(state_, options_, found_inf); }

  /// @brief The resumable state (for checkpoints).
  [[nodiscard]] const LossScalerState& state() const noexcept { return state_; }

  /// @brief Restores a state saved by `state()`; throws `mpx::invalid_argument` for a state no
  /// scaler could have produced (a negative or non-finite scale, factors outside the ranges
  /// `Options::validate` allows, a tracker outside [0, growth_interval), negative counters). A scale
  /// of 0 is accepted: enough consecutive overflows back GradScaler's scale off to 0 too, and such a
  /// run must still be resumable (and visibly stuck: every step is skipped).
  void load_state(const LossScalerState& state) {
    const auto fail = [](const char* field, auto value) {
      throw invalid_argument(detail::concat("mpx::LossScaler::load_state: ", field, " = ",
                                            detail::exact_text(value), " is not a valid saved state"));
    };
    if (!(std::isfinite(state.scale) && state.scale >= 0.0f)) fail("scale", state.scale);
    if (!(std::isfinite(state.growth_factor) && state.growth_factor > 1.0)) {
      fail("growth_factor", state.growth_factor);
    }
    if (!(state.backoff_factor > 0.0 && state.backoff_factor < 1.0)) {
      fail("backoff_factor", state.backoff_factor);
    }
    if (state.growth_interval < 1) fail("growth_interval", state.growth_interval);
    if (state.growth_tracker < 0 || state.growth_tracker >= state.growth_interval) {
      fail("growth_tracker", state.growth_tracker);
    }
    if (state.hysteresis_tracker < 0) fail("hysteresis_tracker", state.hysteresis_tracker);
    if (state.steps_taken < 0) fail("steps_taken", state.steps_taken);
    if (state.steps_skipped < 0) fail("steps_skipped", state.steps_skipped);
    if (state.backoffs < 0) fail("backoffs", state.backoffs);
    state_ = state;
  }

  /// @brief The knobs this scaler was built with.
  [[nodiscard]] const Options& options() const noexcept { return options_; }

 private:
  Options options_;
  LossScalerState state_;
};

}  // namespace mpx
