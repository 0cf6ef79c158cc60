// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `cuda::LossSeed`: where a CUDA loss kernel finds dL/dloss, the value its backward is seeded
/// with, so that the loss scale of a running step never has to come back to the host.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error "mpx/backend/cuda/loss_seed.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA

namespace mpx::cuda {

/// @brief The gradient seed of a loss: `(*scale) / divisor`, read on the device, or
/// `numerator / divisor` when `scale` is null.
///
/// One float division, so `{&scalars->loss_scale, float(micro_batches)}` reproduces the CPU
/// trainer's `grad_seed = loss_scale / float(micro_batches)` bit for bit; the default seeds with 1.
struct LossSeed {
  /// @brief Device memory holding the loss scale of the running step, or null.
  const float* scale = nullptr;
  /// @brief What the numerator is divided by (the number of micro-batches of the step).
  float divisor = 1.0f;
  /// @brief The numerator used when `scale` is null (a seed known on the host).
  float numerator = 1.0f;

  /// @brief The seed; dereferences `scale`, so call it in device code when `scale` is set.
  [[nodiscard]] MPX_HOST_DEVICE float value() const {
    return (scale != nullptr ? *scale : numerator) / divisor;
  }
};

}  // namespace mpx::cuda
