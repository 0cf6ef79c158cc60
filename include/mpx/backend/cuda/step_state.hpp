// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `cuda::StepScalars`: the scalars of one training step, kept in device memory so that a
/// CUDA training step needs no device-to-host copy. Kernels read and write them through a pointer;
/// the host reads them back only when asked (`Trainer::last_result()`).

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error "mpx/backend/cuda/step_state.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA

#include <cstdint>

#include "mpx/error.hpp"
#include "mpx/policy/loss_scale_update.hpp"

namespace mpx::cuda {

/// @brief One training step's scalars, in device memory. Trivially copyable: the host reads it back
/// with one copy.
struct StepScalars {
  LossScalerState scaler;           ///< the loss scaler's state (its scale seeds the backward)
  double loss_sum = 0.0;            ///< sum over the step's micro-batches of each one's mean loss
  double sum_of_squares = 0.0;      ///< of the unscaled gradients
  double lr = 0.0;                  ///< the optimizer's learning rate, read by its kernels
  double clip_coefficient = 1.0;    ///< the optimizer multiplies gradients by Grad(this) (1: not clipped)
  std::int64_t optimizer_step = 0;  ///< updates applied before this step (AdamW's t is this + 1)
  std::int64_t step = 0;            ///< steps attempted, this one included
  float loss_scale = 1.0f;          ///< the scale this step's backward used
  int gradients_nonfinite = 0;      ///< some gradient was inf or NaN after unscaling (found_inf)
  int inputs_nonfinite = 0;         ///< some input batch held inf or NaN
  int skip = 0;                     ///< the optimizer must not update: inputs, loss or gradients not finite
  int clipped = 0;                  ///< clipping scaled the gradients down
};

namespace detail {
// The step kernels' launchers take the scalars by pointer; a null one is a caller's bug that would
// otherwise surface as an illegal address at the next synchronisation, far from its cause.
inline void require_step_scalars(const char* where, const StepScalars* scalars) {
  if (scalars == nullptr) throw invalid_argument(mpx::detail::concat(where, ": the step scalars are null"));
}
}  // namespace detail

}  // namespace mpx::cuda
