// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What updating an exponential moving average (EMA) of the weights means on every device:
/// diffusers' `EMAModel.step`, element by element,
///
///   a <- a - (1 - decay) * (a - w),
///
/// for each element a of the average and w of the parameter's master weights (read in the average's
/// type: fp32, fp64 under fp64), each operation rounded to nearest on its own in that type (a - w,
/// then the product with `(1 - decay)`, itself computed in double and rounded once into the type,
/// then the difference), never fused into an FMA, so that the CPU and the GPU give the same bits.
/// The decay of update number t (from 1) is `decay`, or with `warmup` diffusers' schedule
/// `min(decay, (1 + s) / (10 + s))` with s = t - 1 the updates before it (0 for s = 0), in double.
///
/// The update applies only when the training step's `UpdateControl` does not say `skip`: a skipped
/// step leaves the average and its update count unchanged, as it leaves the optimizer's state.

#include <concepts>
#include <cstdint>

#include "mpx/backend/optimizer_math.hpp"
#include "mpx/backend/update_control.hpp"
#include "mpx/config.hpp"

namespace mpx {

/// @brief How a `WeightAverage` (train/weight_average.hpp) averages: the decay and its warmup.
struct WeightAverageOptions {
  /// @brief The decay of every update (diffusers' `decay`, torch's `get_ema_multi_avg_fn(decay)`);
  /// in [0, 1]. 1 keeps the starting weights; 0 follows the weights.
  double decay = 0.9999;
  /// @brief Ramp the decay up as diffusers' `EMAModel` does by default: update number t (from 1)
  /// uses `min(decay, (1 + s) / (10 + s))`, s = t - 1, and 0 for t = 1 (so the first update takes
  /// the weights as they are after it). Off: every update uses `decay`.
  bool warmup = false;

  /// @brief Field-by-field equality.
  friend bool operator==(const WeightAverageOptions&, const WeightAverageOptions&) = default;
};

/// @brief The average's scalars, in the memory of the device the average lives on (trivially
/// copyable: one copy reads them back).
struct WeightAverageControl {
  std::int64_t updates = 0;  ///< updates applied so far (this step's counted once it is decided)
  double decay = 0.0;        ///< the decay of the last update (0 before the first)
};

/// @brief The decay of the update that follows `updates_before` updates, in double: `decay`, or
/// with `warmup` 0 for the first update and `min(decay, (1 + s) / (10 + s))` after, s =
/// `updates_before` (diffusers' `EMAModel.get_decay` with `update_after_step = 0`,
/// `min_decay = 0`).
/// @param decay the options' decay
/// @param warmup the options' warmup
/// @param updates_before the updates applied before this one
[[nodiscard]] MPX_HOST_DEVICE inline double weight_average_decay(double decay, bool warmup,
                                                                 std::int64_t updates_before) {
  if (!warmup) return decay;
  if (updates_before <= 0) return 0.0;
  const auto s = static_cast<double>(updates_before);
  const double ramp = detail::div_rn(detail::add_rn(1.0, s), detail::add_rn(10.0, s));
  return ramp < decay ? ramp : decay;
}

/// @brief 1 - decay of the update `control` describes, computed in double and rounded once into
/// `Acc` (as PyTorch rounds the Python float `one_minus_decay` into an fp32 tensor's operation).
/// @tparam Acc the average's element type
/// @param control the average's scalars after the step's decision
template <std::floating_point Acc>
[[nodiscard]] MPX_HOST_DEVICE inline Acc weight_average_factor(const WeightAverageControl& control) {
  return static_cast<Acc>(detail::sub_rn(1.0, control.decay));
}

/// @brief One element of the update: `average - factor * (average - weight)`, three roundings in
/// `Acc`, no FMA.
/// @tparam Acc the average's element type
/// @param average the element of the average
/// @param weight the master weight, in `Acc`
/// @param factor 1 - decay (`weight_average_factor`)
template <std::floating_point Acc>
[[nodiscard]] MPX_HOST_DEVICE inline Acc weight_average_step(Acc average, Acc weight, Acc factor) {
  return detail::sub_rn(average, detail::mul_rn(factor, detail::sub_rn(average, weight)));
}

/// @brief Decides the average's update of a training step once the step's skip decision is known
/// (in `FinishStep`, beside the optimizer's per-update scalars): unless `control.skip`, writes the
/// update's decay and counts it. Nothing without an average (`average` null).
struct PrepareWeightAverage {
  WeightAverageOptions options{};           ///< the decay and its warmup
  WeightAverageControl* average = nullptr;  ///< the average's scalars (device memory); null: none

  /// @brief Applies it after the step's decision in `control`.
  MPX_HOST_DEVICE void operator()(const UpdateControl& control) const {
    if (average == nullptr || control.skip != 0) return;
    average->decay = weight_average_decay(options.decay, options.warmup, average->updates);
    ++average->updates;
  }
  /// @brief The same, with the control at `control` (for `Backend::single_thread`).
  MPX_HOST_DEVICE void operator()(const UpdateControl* control) const { (*this)(*control); }
};

}  // namespace mpx
