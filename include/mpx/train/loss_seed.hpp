// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `LossSeed`: where a loss finds dL/dloss, the value its backward is seeded with, so that
/// the loss scale of a running step is read where it lives (device memory on a GPU) and never has to
/// come back to the host.

#include "mpx/config.hpp"

namespace mpx {

/// @brief The gradient seed of a loss: `(*scale) / divisor`, read in the memory of the device the
/// loss runs on, or `numerator / divisor` when `scale` is null.
///
/// One float division, the same on every device, bit for bit; the default seeds with 1. `mpx::Trainer`
/// seeds every micro-batch with the whole loss scale (`divisor` 1) and takes the mean over micro-batches
/// once, on the fp32 sum of their gradients.
struct LossSeed {
  /// @brief Memory of the loss's device holding the loss scale of the running step, or null.
  const float* scale = nullptr;
  /// @brief What the numerator is divided by (the number of micro-batches of the step).
  float divisor = 1.0f;
  /// @brief The numerator used when `scale` is null (a seed known on the host).
  float numerator = 1.0f;

  /// @brief The seed; dereferences `scale`, so call it where `scale` points (device code on CUDA).
  [[nodiscard]] MPX_HOST_DEVICE float value() const {
    return (scale != nullptr ? *scale : numerator) / divisor;
  }
};

}  // namespace mpx
