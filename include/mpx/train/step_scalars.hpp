// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `StepScalars`: the scalars of one training step, and the step's decisions written once as
/// host-and-device functions over them. They live in the memory of the device the step runs on
/// (`TrainingState`, train/training_state.hpp): on the CPU the functions are called in place; on a
/// GPU each runs in a one-thread kernel, so a queued step never waits for the device and the two
/// devices decide skips, clipping and the loss scale with the same code.
///
/// A step runs: `BeginStep` -> forward/backward (the loss is seeded by `loss_scale` and added to
/// `loss_sum`) -> the backend's `unscale_and_inspect` over all gradients -> `FinishGradients` ->
/// the optimizer's update (reading `update`) -> `EndStep<Policy>`. The trainer fuses them into the
/// kernels beside them (`Trainer`'s step on a GPU has no kernel of its own for them): `BeginStep`
/// runs in the input check's last block, and `FinishStep` (`FinishGradients`, the optimizer's
/// per-update scalars and `EndStep`, which only needs the skip decision) in the gradient pass's last
/// block, before the optimizer's update: the update reads `update.optimizer_step`, the count before
/// it, while `EndStep` counts in `updates`.

#include <cstdint>
#include <cstring>

#include "mpx/backend/optimizer_math.hpp"
#include "mpx/backend/update_control.hpp"
#include "mpx/config.hpp"
#include "mpx/error.hpp"
#include "mpx/policy/loss_scale_update.hpp"
#include "mpx/policy/loss_scaling.hpp"

namespace mpx {

/// @brief One training step's scalars. Trivially copyable: reading them back is one copy.
struct StepScalars {
  LossScalerState scaler;       ///< the loss scaler's state (its scale seeds the backward)
  UpdateControl update;         ///< what the optimizer reads: lr, update count, clipping, skip
  std::int64_t updates = 0;     ///< optimizer updates applied so far (EndStep counts them)
  double loss_sum = 0.0;        ///< sum over the step's micro-batches of each one's mean loss
  double sum_of_squares = 0.0;  ///< of the unscaled gradients
  std::int64_t step = 0;        ///< steps attempted, this one included
  float loss_scale = 1.0f;      ///< the scale this step's backward used
  int gradients_nonfinite = 0;  ///< some gradient was inf or NaN after unscaling (found_inf)
  int inputs_nonfinite = 0;     ///< some input batch held inf or NaN
};

namespace detail {
// inf or NaN, from the exponent bits: the same answer on the host and in device code, whatever the
// compiler's floating-point flags.
MPX_HOST_DEVICE inline bool finite_bits(double value) {
#if MPX_DEVICE_PASS
  const auto bits = static_cast<std::uint64_t>(__double_as_longlong(value));
#else
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
#endif  // MPX_DEVICE_PASS
  return (bits & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
}  // namespace detail

/// @brief Starts a step: `loss_scale = scaler.scale` (the scale this step's backward uses), zeroes
/// `loss_sum` and `sum_of_squares`, clears the non-finite, skip and clipped flags, sets the clipping
/// coefficient to 1 and counts the step.
struct BeginStep {
  /// @brief Applies it to `s`.
  MPX_HOST_DEVICE void operator()(StepScalars* s) const {
    s->loss_scale = s->scaler.scale;
    s->loss_sum = 0.0;
    s->sum_of_squares = 0.0;
    s->gradients_nonfinite = 0;
    s->inputs_nonfinite = 0;
    s->update.skip = 0;
    s->update.clipped = 0;
    s->update.clip_coefficient = 1.0;
    ++s->step;
  }
};

/// @brief Decides what the optimizer does with the step's gradients: skip when a gradient, an input
/// or the loss is not finite; otherwise, when `max_grad_norm > 0`, PyTorch's `clip_grad_norm_`
/// coefficient `max_grad_norm / (norm + 1e-6)` and, when it is below 1, `clipped` (the optimizer
/// multiplies each gradient by it, rounded into the gradient's type). Sets the update's count to the
/// updates applied before it.
struct FinishGradients {
  double max_grad_norm = 0.0;  ///< clipping threshold; <= 0: no clipping

  /// @brief Applies it to `s`.
  MPX_HOST_DEVICE void operator()(StepScalars* s) const {
    s->update.optimizer_step = s->updates;
    const bool skip =
        s->gradients_nonfinite != 0 || s->inputs_nonfinite != 0 || !detail::finite_bits(s->loss_sum);
    s->update.skip = skip ? 1 : 0;
    if (!skip && max_grad_norm > 0.0) {
      const double coefficient = clip_coefficient(max_grad_norm, detail::sqrt_rn(s->sum_of_squares));
      if (coefficient < 1.0) {
        s->update.clipped = 1;
        s->update.clip_coefficient = coefficient;
      }
    }
  }
};

/// @brief Ends a step: records it in the scaler with `update_loss_scale<Policy>` (GradScaler's
/// update, the same function `LossScaler<Policy>::update` runs) and counts an applied update in
/// `updates` unless the step was skipped. It reads only the skip decision, so it may run before the
/// optimizer's update (which reads `update`, untouched here).
template <LossScalingPolicy Policy>
struct EndStep {
  typename Policy::Options options;  ///< the scaler's knobs

  /// @brief Applies it to `s`.
  MPX_HOST_DEVICE void operator()(StepScalars* s) const {
    const bool skipped = s->update.skip != 0;
    update_loss_scale<Policy>(s->scaler, options, skipped);
    if (!skipped) ++s->updates;
  }
};

/// @brief Everything a step decides once its gradients are inspected, in one call: `FinishGradients`,
/// then `prepare(s->update)` (the optimizer's per-update scalars, e.g. `AdamWBiasCorrections`; it
/// sees the update count), then `EndStep<Policy>`. The trainer runs it in the gradient pass's last
/// block, so the step's decisions cost no kernel of their own.
template <LossScalingPolicy Policy, class Prepare = NoUpdatePreparation>
struct FinishStep {
  FinishGradients gradients;  ///< the skip and clipping decisions
  Prepare prepare;            ///< the optimizer's per-update scalars
  EndStep<Policy> end;        ///< the scaler update and the update count

  /// @brief Applies it to `s`.
  MPX_HOST_DEVICE void operator()(StepScalars* s) const {
    gradients(s);
    prepare(s->update);
    end(s);
  }
};

/// @brief The fields of `StepScalars` the host owns and may change between steps: a scaler state or
/// update count loaded from a checkpoint, the learning rate a schedule sets, the step count.
struct HostOwnedScalars {
  LossScalerState scaler;            ///< the trainer's `LossScaler` state
  std::int64_t optimizer_steps = 0;  ///< the optimizer's update count
  double lr = 0.0;                   ///< the optimizer's learning rate
  std::int64_t steps = 0;            ///< the trainer's step count (steps queued)

  /// @brief Which fields a `StoreHostOwned` overwrites.
  enum Field : unsigned {
    scaler_field = 1,           ///< `scaler`
    optimizer_steps_field = 2,  ///< `optimizer_steps` (into `updates` and `update.optimizer_step`)
    lr_field = 4,               ///< `lr` (into `update.lr`)
    steps_field = 8,            ///< `steps` (into `step`)
  };
};

/// @brief Overwrites the fields of `StepScalars` that `fields` names with the host's values.
struct StoreHostOwned {
  HostOwnedScalars host;  ///< the values
  unsigned fields = 0;    ///< a mask of `HostOwnedScalars::Field`

  /// @brief Applies it to `s`.
  MPX_HOST_DEVICE void operator()(StepScalars* s) const {
    if (fields & HostOwnedScalars::scaler_field) s->scaler = host.scaler;
    if (fields & HostOwnedScalars::optimizer_steps_field)
      s->updates = s->update.optimizer_step = host.optimizer_steps;
    if (fields & HostOwnedScalars::lr_field) s->update.lr = host.lr;
    if (fields & HostOwnedScalars::steps_field) s->step = host.steps;
  }
};

}  // namespace mpx
