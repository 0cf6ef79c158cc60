// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Optimizer hyper-parameters, shared by the backends' update kernels and `mpx::optim`.

namespace mpx {

/// @brief SGD hyper-parameters, with PyTorch's names, meanings and defaults (lr has none there).
struct SgdSettings {
  float lr = 0.01f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;  ///< L2: added to the gradient before momentum
  bool nesterov = false;
};

/// @brief AdamW hyper-parameters, with PyTorch's names, meanings and defaults.
struct AdamWSettings {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 1e-2f;  ///< decoupled: the weight is multiplied by 1 - lr * weight_decay
};

}  // namespace mpx
