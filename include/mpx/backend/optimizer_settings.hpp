// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Optimizer hyper-parameters, shared by the backends' update kernels and `mpx::optim`.

#include <cstdint>

namespace mpx {

// Hyper-parameters are doubles, as Python floats are in PyTorch: derived scalars (1 - beta, bias
// corrections, lr / bias_correction) are computed in double and rounded once into the update's type.

/// @brief SGD hyper-parameters, with PyTorch's meanings and defaults except `lr`: 0.01 here,
/// `torch.optim.SGD`'s is 1e-3 (torch 2.15; docs/training.md tables both).
struct SgdSettings {
  /// @brief Learning rate.
  double lr = 0.01;
  /// @brief Momentum factor (0: plain SGD).
  double momentum = 0.0;
  /// @brief Dampening of the momentum update, as in `torch.optim.SGD`.
  double dampening = 0.0;
  double weight_decay = 0.0;  ///< L2: added to the gradient before momentum
  /// @brief Nesterov momentum.
  bool nesterov = false;
  /// Seed of the stochastic rounding of updates into fp16/bf16 master weights (pure precisions).
  std::uint64_t rounding_seed = 0;

  /// @brief Field-by-field equality.
  friend bool operator==(const SgdSettings&, const SgdSettings&) = default;
};

/// @brief AdamW hyper-parameters, with PyTorch's meanings and defaults (PyTorch's `betas` are
/// `beta1`, `beta2` here, its `eps` is `epsilon`).
struct AdamWSettings {
  /// @brief Learning rate.
  double lr = 1e-3;
  /// @brief Decay rate of the first moment.
  double beta1 = 0.9;
  /// @brief Decay rate of the second moment.
  double beta2 = 0.999;
  /// @brief Added to the square root of the second moment.
  double epsilon = 1e-8;
  double weight_decay = 1e-2;  ///< decoupled: the weight is multiplied by 1 - lr * weight_decay
  /// Seed of the stochastic rounding of updates into fp16/bf16 master weights (pure precisions).
  std::uint64_t rounding_seed = 0;

  /// @brief Field-by-field equality.
  friend bool operator==(const AdamWSettings&, const AdamWSettings&) = default;
};

}  // namespace mpx
