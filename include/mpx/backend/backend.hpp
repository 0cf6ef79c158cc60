// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Backend<Device>`: the operations layers, losses, optimizers and the training step need
/// from a device. `Backend<Host>` is in backend/cpu/backend.hpp; `Backend<Cuda>` comes with
/// <mpx/cuda.hpp>.
///
/// Each backend provides, as static functions with the CPU versions' signatures:
/// `gemm<Compute>`, `relu_forward`, `relu_backward`, `gelu_forward`, `gelu_backward`,
/// `layer_norm_forward`, `layer_norm_backward`, `softmax_cross_entropy`, `count_correct`, `argmax`,
/// `mse_loss`, `sgd_update`, `adamw_update`, `unscale_and_inspect<Scale>`, `scale_in_place`,
/// `round_into<To>`, `add_into`, `fill_uniform`. `Backend<Cuda>` adds the training step's device-path
/// overloads, which leave their results in device memory instead of returning them: the losses with a
/// `LossSeed` and a device `loss_sum`, the optimizers with the step's `StepScalars`
/// (backend/cuda/backend.cuh).

namespace mpx {

/// @brief Device operations; specialised per device.
template <class Device>
struct Backend;

/// @brief What a device keeps for a `Trainer` beyond the trainer's own members: nothing on the host,
/// where each step's loss, finite check and scaler update are host values; on CUDA the step's scalars
/// in device memory, the gradient reduction's workspace and the captured step graph
/// (backend/cuda/training_state.cuh).
/// @tparam Grad the gradients' element type.
template <class Device, class Grad>
struct TrainingState {};

}  // namespace mpx
