// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `UpdateControl`: what decides one optimizer update besides the optimizer's own settings.
/// It lives in the memory of the device the update runs on, so that a training step queued on a GPU
/// (or replayed from a CUDA graph) reads the learning rate, the update count, the clipping factor and
/// the skip decision of *this* step without a host round trip.

#include <cstdint>

namespace mpx {

/// @brief One update's control values, read by the optimizer kernels of every backend. Trivially
/// copyable: a device copy is one memcpy.
struct UpdateControl {
  double lr = 0.0;                  ///< learning rate of this update (the settings' lr is not read)
  double clip_coefficient = 1.0;    ///< gradients are multiplied by Grad(this) when `clipped`
  std::int64_t optimizer_step = 0;  ///< updates applied before this one (AdamW's t is this + 1)
  /// AdamW's 1 - beta1^t for this update, derived once per step where the step's decisions are taken
  /// (`AdamWBiasCorrections`, backend/optimizer_math.hpp) so that no update kernel computes the
  /// power itself; 0 when not derived (the update then derives it from `optimizer_step`).
  double bias_correction1 = 0.0;
  double bias_correction2 = 0.0;  ///< AdamW's 1 - beta2^t, as `bias_correction1`
  int clipped = 0;                ///< clipping scaled the gradients down
  int skip = 0;                   ///< do not update: the step's inputs, loss or gradients were not finite
};

}  // namespace mpx
