// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `StepKey`: which training step (and which of its micro-batches) a forward belongs to, for
/// layers that draw random numbers keyed by it (`Dropout`), and `bind_step`, which hands it to every
/// such layer of a model.
///
/// The step count is read from the memory of the model's device, where the training step keeps it
/// (`StepScalars::step`): a GPU kernel reads it when it runs, so a replayed CUDA graph draws new
/// random numbers at every step, and a run resumed from a checkpoint (which restores the step
/// count) draws the same numbers as the run it continues.

#include <cstdint>

namespace mpx::nn {

/// @brief The training step a forward belongs to.
struct StepKey {
  /// @brief The step count in the memory of the model's device (null: the layer counts its own
  /// forwards instead).
  const std::int64_t* step = nullptr;
  /// @brief The micro-batch within the step (0 for a step of one batch).
  std::int64_t micro_batch = 0;
};

/// @brief Hands `key` to `layer` (a layer or a whole model) if it draws random numbers; does
/// nothing otherwise. `Trainer` calls it before each micro-batch's forward.
template <class L>
void bind_step(L& layer, const StepKey& key) {
  if constexpr (requires { layer.bind_step(key); }) layer.bind_step(key);
}

}  // namespace mpx::nn
