// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Backend<Device>`: the operations layers, losses, optimizers and the training step need
/// from a device. `Backend<Host>` is in backend/cpu/backend.hpp; `Backend<Cuda>` comes with
/// <mpx/cuda.hpp>.
///
/// Each backend provides, as static functions with the CPU versions' signatures:
/// `gemm<Compute>`, `relu_forward`, `relu_backward`, `gelu_forward`, `gelu_backward`, `silu_forward`,
/// `silu_backward`,
/// `layer_norm_forward`, `layer_norm_backward`, `softmax_cross_entropy`, `count_correct`, `argmax`,
/// `mse_loss`, `sgd_update`, `adamw_update`, `unscale_and_inspect<Scale>`, `scale_in_place`,
/// `round_into<To>`, `add_into`, `add`, `fill_uniform`, `flag_nonfinite`; and what the training step
/// (train/) is built from: `single_thread(f, args...)` (a host-and-device functor run once, in order
/// with the rest), the `GradientWorkspace`, `Graph` and `StepThreads` types, and the step's overloads that
/// leave their results in the device's memory instead of returning them: the losses with a seed and a
/// `loss_sum`, the optimizers with an `UpdateControl`, `unscale_and_inspect` over a list of gradients.
/// The step's fused forms: `sgd_updates` / `adamw_updates` (a whole optimizer step collected
/// parameter by parameter, queued as few launches on a GPU), `unscale_and_inspect` with a
/// continuation run once the pass is done, and `flag_nonfinite` with a functor run before it (on a
/// GPU both inside the pass's own kernel).
///
/// Embeddings: `fill_normal` (initial weights), `embedding_forward`, `embedding_backward` (with the
/// backend's `EmbeddingWorkspace` type), `positional_embedding_forward`,
/// `positional_embedding_backward`.
/// Self-attention adds `attention_split_heads`, `attention_merge_heads`,
/// `attention_softmax_forward` and `attention_softmax_backward` (causal or bidirectional mask;
/// backend/attention_spec.hpp), and the constant `has_fused_attention`; where it is true,
/// `attention_fused_applies<T>`, `attention_fused_forward` (returns whether it ran) and
/// `attention_fused_backward` too.
/// Dropout: `dropout` (forward and backward, keyed as backend/dropout_spec.hpp says).
/// Convolutions (backend/conv2d_spec.hpp): `conv2d_forward<Compute>`, `conv2d_backward_input<Compute>`,
/// `conv2d_backward_weight<Compute>`, `conv2d_backward_bias`. Pooling (backend/pool2d_spec.hpp):
/// `max_pool2d_forward`, `max_pool2d_backward`, `avg_pool2d_forward`, `avg_pool2d_backward`,
/// `global_avg_pool2d_forward`, `global_avg_pool2d_backward`. Batch normalisation
/// (backend/batch_norm_spec.hpp): `batch_norm_forward_training`, `batch_norm_forward_inference`,
/// `batch_norm_update_running_stats`, `batch_norm_backward`, and the steps those two take, for
/// statistics summed over ranks between them: `batch_norm_channel_sums`,
/// `batch_norm_squared_deviations`, `batch_norm_normalize`, `batch_norm_backward_sums`,
/// `batch_norm_backward_input`; `group_norm_forward`, `group_norm_backward`
/// (backend/group_norm_spec.hpp); `upsample_nearest_forward`, `upsample_nearest_backward`;
/// `concat_channels`, `split_channels` (backend/channel_concat_spec.hpp; a UNet's skip).
/// Time conditioning: `add_sample_shift`, `sample_shift_backward` (backend/sample_shift_spec.hpp; a
/// diffusion UNet's timestep embedding added to every pixel).
/// Sequences: `gather_rows`, `gather_rows_backward` (backend/row_gather_spec.hpp; an encoder's
/// [CLS] tokens, its masked tokens).
/// Weight averages (backend/weight_average_spec.hpp): `weight_average_update`, and
/// `weight_average_updates` (a whole step's, collected like `sgd_updates`).
/// FP8 (nn::Linear under an FP8 precision): `gemm_scaled<AFormat, BFormat, Accumulation>`,
/// `cast_scaled<Format>`, `accumulate_amax`, `accumulate_fp8_statistics<Format>`, and the constant
/// `fp8_gemm_needs_k_major_operands`; where it is true (cuBLASLt's FP8 GEMMs read both operands
/// along K), `cast_transpose_scaled<Format>` too.
/// Block scaling (nn::Linear under a block-scaled precision; backend/block_quantize_spec.hpp): the
/// constant `has_block_scaled_gemm`, and where it is true `quantize_blocks<Recipe>` and
/// `gemm_block_scaled<Accumulation>`.

#include "mpx/error.hpp"

namespace mpx {

/// @brief Device operations; specialised per device by the backend's own header. Layers, optimizers
/// and the training step name only this interface; the concrete backends come with the umbrellas
/// (<mpx/mpx.hpp> brings `Backend<Host>`, <mpx/cuda.hpp> also `Backend<Cuda>`), so a program that
/// includes single headers and reaches this primary template is told which one to add.
template <class Device>
struct Backend {
  static_assert(detail::always_false<Device>,
                "mpx::Backend<Device>: no backend for this device is included; include <mpx/mpx.hpp> "
                "(or <mpx/backend/cpu/backend.hpp>) for mpx::Host, <mpx/cuda.hpp> for mpx::Cuda");
};

}  // namespace mpx
