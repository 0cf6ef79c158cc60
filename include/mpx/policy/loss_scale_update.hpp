// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `LossScalerState` and `update_loss_scale`: GradScaler's update rule as one function that
/// runs on the host (`LossScaler`) and, unchanged, in the CUDA step's one-thread scaler kernel.

#include <cstdint>

#include "mpx/config.hpp"
#include "mpx/policy/loss_scaling.hpp"

namespace mpx {

namespace detail {
// GradScaler's product: the fp32 scale times a double factor, in double, stored to fp32 once.
MPX_HOST_DEVICE inline float scaled(float scale, double factor) noexcept {
  return static_cast<float>(static_cast<double>(scale) * factor);
}
}  // namespace detail

/// @brief Everything a scaler needs to resume: GradScaler's five fields plus mpx's counters.
/// Trivially copyable: the CUDA training step keeps it in device memory. As in GradScaler, the scale
/// is fp32 (torch's `_scale` tensor) and the factors are doubles (torch's Python floats).
struct LossScalerState {
  /// @brief Current loss scale.
  float scale = 1.0f;
  /// @brief Scale multiplier after `growth_interval` clean steps (double, as GradScaler's).
  double growth_factor = 2.0;
  /// @brief Scale multiplier after an overflow (double, as GradScaler's).
  double backoff_factor = 0.5;
  /// @brief Clean steps before the scale grows.
  std::int64_t growth_interval = 2000;
  std::int64_t growth_tracker = 0;      ///< clean steps since the last growth or overflow
  std::int64_t hysteresis_tracker = 0;  ///< consecutive overflows not yet acted on (opt-in hysteresis)
  std::int64_t steps_taken = 0;         ///< optimizer steps applied
  std::int64_t steps_skipped = 0;       ///< steps skipped because a gradient was inf or NaN
  std::int64_t backoffs = 0;            ///< times the scale was reduced

  /// @brief Field-by-field equality.
  friend bool operator==(const LossScalerState&, const LossScalerState&) = default;
};

/// @brief Records the outcome of one step in `state` and, for `DynamicLossScaling`, updates the scale
/// exactly as `torch._amp_update_scale_` does: on an overflow `scale *= backoff_factor` and the
/// growth tracker resets; after a clean step the tracker counts up and, on reaching
/// `growth_interval`, `scale *= growth_factor` unless that product is not finite, and the tracker
/// resets either way. Each product is formed in double from the fp32 scale and the double factor and
/// stored to fp32 once, `scale = float(double(scale) * factor)`, as torch's kernel does; an fp32
/// factor such as `0.3f` would give another trajectory. The opt-in extensions act only when set: the
/// scale is clamped to [min_scale, max_scale], and with `hysteresis = N` the scale backs off only on
/// the N-th consecutive overflow. Other policies only count.
/// @tparam Policy the loss-scaling policy.
/// @param state the scaler's state, updated in place.
/// @param options the policy's knobs (min/max scale and hysteresis are read for dynamic scaling).
/// @param found_inf whether any gradient of the step was inf or NaN (the step was skipped).
template <LossScalingPolicy Policy>
MPX_HOST_DEVICE inline void update_loss_scale(LossScalerState& state, const typename Policy::Options& options,
                                              bool found_inf) noexcept {
  if (found_inf) {
    ++state.steps_skipped;
  } else {
    ++state.steps_taken;
  }
  if constexpr (Policy::is_dynamic) {
    if (found_inf) {
      state.growth_tracker = 0;
      if (++state.hysteresis_tracker >= options.hysteresis) {
        state.hysteresis_tracker = 0;
        state.scale = detail::scaled(state.scale, state.backoff_factor);
        if (state.scale < options.min_scale) state.scale = options.min_scale;
        ++state.backoffs;
      }
      return;
    }
    state.hysteresis_tracker = 0;  // overflows must be consecutive to count toward hysteresis
    if (++state.growth_tracker == state.growth_interval) {
      const float grown = detail::scaled(state.scale, state.growth_factor);
      // Finite test without <cmath>, so the same code compiles for the device: inf - inf and
      // NaN - NaN are NaN, and NaN compares unequal to itself.
      const bool grown_finite = (grown - grown) == (grown - grown);
      if (grown_finite) state.scale = grown < options.max_scale ? grown : options.max_scale;
      state.growth_tracker = 0;
    }
  }
}

}  // namespace mpx
