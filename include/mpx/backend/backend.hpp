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
/// `round_into<To>`, `add_into`, `add`, `fill_uniform`, `flag_nonfinite`; and what the training step
/// (train/) is built from: `single_thread(f, args...)` (a host-and-device functor run once, in order
/// with the rest), the `GradientWorkspace` and `Graph` types, and the step's overloads that leave
/// their results in the device's memory instead of returning them: the losses with a seed and a
/// `loss_sum`, the optimizers with an `UpdateControl`, `unscale_and_inspect` over a list of gradients.
/// The step's fused forms: `sgd_updates` / `adamw_updates` (a whole optimizer step collected
/// parameter by parameter, queued as few launches on a GPU), `unscale_and_inspect` with a
/// continuation run once the pass is done, and `flag_nonfinite` with a functor run before it (on a
/// GPU both inside the pass's own kernel).
///
/// Embeddings: `fill_normal` (initial weights), `embedding_forward`, `embedding_backward` (with the
/// backend's `EmbeddingWorkspace` type), `positional_embedding_forward`,
/// `positional_embedding_backward`.
/// Causal self-attention adds `attention_split_heads`, `attention_merge_heads`,
/// `causal_softmax_forward` and `causal_softmax_backward` (backend/attention_spec.hpp).
/// Dropout: `dropout` (forward and backward, keyed as backend/dropout_spec.hpp says).

namespace mpx {

/// @brief Device operations; specialised per device.
template <class Device>
struct Backend;

}  // namespace mpx
