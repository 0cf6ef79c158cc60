// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Global-norm gradient clipping's coefficient, the same function on the host and the device.

#include "mpx/config.hpp"

namespace mpx {

/// @brief PyTorch's `clip_grad_norm_` coefficient: `max_norm / (norm + 1e-6)`; gradients are scaled
/// by it when it is below 1.
MPX_HOST_DEVICE inline double clip_coefficient(double max_norm, double norm) noexcept {
  return max_norm / (norm + 1e-6);
}

}  // namespace mpx
