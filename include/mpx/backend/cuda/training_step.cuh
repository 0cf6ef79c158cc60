// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The bookends of a CUDA training step, as one-thread kernels on the step's device scalars
/// (`StepScalars`): `begin_step` resets what a step accumulates, `end_step` updates the loss scale and
/// the update count, `set_learning_rate` writes the optimizer's learning rate. No host
/// synchronisation, so a whole step can be captured in a CUDA graph and replayed.
///
/// A step queues: begin_step -> forward/backward (the loss is seeded by `loss_scale` and added to
/// `loss_sum`) -> `unscale_and_inspect` over all gradients -> `finish_gradients` -> the optimizer's
/// update per parameter -> `end_step<Policy>`.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/training_step.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/step_state.hpp"
#include "mpx/policy/loss_scale_update.hpp"
#include "mpx/policy/loss_scaling.hpp"

namespace mpx::cuda {

namespace detail {

// (Kernels in headers are templates: a plain __global__ function would be defined again in every
// translation unit that includes the header.)
template <class Scalars>
__global__ void begin_step_kernel(Scalars* scalars) {
  scalars->loss_scale = scalars->scaler.scale;
  scalars->loss_sum = 0.0;
  scalars->sum_of_squares = 0.0;
  scalars->gradients_nonfinite = 0;
  scalars->inputs_nonfinite = 0;
  scalars->skip = 0;
  scalars->clipped = 0;
  scalars->clip_coefficient = 1.0;
  ++scalars->step;
}

template <LossScalingPolicy Policy, class Scalars>
__global__ void end_step_kernel(Scalars* scalars, typename Policy::Options options) {
  const bool skipped = scalars->skip != 0;
  update_loss_scale<Policy>(scalars->scaler, options, skipped);
  if (!skipped) ++scalars->optimizer_step;
}

template <class Scalars>
__global__ void set_learning_rate_kernel(Scalars* scalars, double lr) {
  scalars->lr = lr;
}

}  // namespace detail

/// @brief Starts a step: `loss_scale = scaler.scale` (the scale this step's backward uses), zeroes
/// `loss_sum` and `sum_of_squares`, clears the non-finite, skip and clipped flags, sets
/// `clip_coefficient = 1` and counts the step (`step += 1`). One thread; no synchronisation.
inline void begin_step(StepScalars* scalars) {
  detail::require_step_scalars("mpx::cuda::begin_step", scalars);
  detail::begin_step_kernel<<<1, 1, 0, detail::stream()>>>(scalars);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::begin_step_kernel");
}

/// @brief Ends a step: records it in the scaler with `update_loss_scale<Policy>(scaler, options, skip)`
/// (the same function `LossScaler<Policy>::update` runs on the host) and counts an applied update
/// (`optimizer_step += 1`) unless the step was skipped. One thread; no synchronisation.
template <LossScalingPolicy Policy>
void end_step(StepScalars* scalars, const typename Policy::Options& options) {
  detail::require_step_scalars("mpx::cuda::end_step", scalars);
  detail::end_step_kernel<Policy><<<1, 1, 0, detail::stream()>>>(scalars, options);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::end_step_kernel");
}

/// @brief Writes the optimizer's learning rate into `scalars->lr` with a one-thread kernel whose
/// argument is `lr`: ordered on the stream like the rest of the step, with no host copy. Queued
/// outside a captured step (before replaying its graph), it changes the rate the replays read, since
/// the optimizer kernels read `lr` from device memory. No synchronisation.
inline void set_learning_rate(StepScalars* scalars, double lr) {
  detail::require_step_scalars("mpx::cuda::set_learning_rate", scalars);
  detail::set_learning_rate_kernel<<<1, 1, 0, detail::stream()>>>(scalars, lr);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::set_learning_rate_kernel");
}

}  // namespace mpx::cuda
