// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Backend<Cuda>`: the CUDA implementations behind the device-neutral operation names, so
/// that layers, losses and optimizers written against `Backend<Device>` run on the GPU unchanged.
///
/// Each name has `Backend<Host>`'s signature and meaning. The operations that return a value on the
/// host (`softmax_cross_entropy`, `count_correct`, `mse_loss`, the single-tensor
/// `unscale_and_inspect`) wait for the device to return it; they serve evaluation and tests. The
/// training step (train/) uses the overloads that leave their results in device memory instead (a
/// seed and a device `loss_sum` for the losses, an `UpdateControl` for the optimizers, the
/// multi-tensor `unscale_and_inspect`), runs its bookkeeping with `single_thread`, and never waits.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/backend.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>
#include <span>
#include <utility>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/cuda/activation.cuh"
#include "mpx/backend/cuda/attention.cuh"
#include "mpx/backend/cuda/batch_norm.cuh"
#include "mpx/backend/cuda/channel_concat.cuh"
#include "mpx/backend/cuda/device_array.hpp"
#include "mpx/backend/cuda/dropout.cuh"
#include "mpx/backend/cuda/embedding.cuh"
#include "mpx/backend/cuda/fp8_cast.cuh"
#include "mpx/backend/cuda/fp8_statistics.cuh"
#include "mpx/backend/cuda/gemm.hpp"
#include "mpx/backend/cuda/gemm_epilogue.cuh"  // sets gemm's unfused-path launchers
#include "mpx/backend/cuda/gemm_scaled.cuh"
#include "mpx/backend/cuda/gradient.cuh"
#include "mpx/backend/cuda/graph.hpp"
#include "mpx/backend/cuda/group_norm.cuh"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/layer_norm.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/mse_loss.cuh"
#include "mpx/backend/cuda/optimizer.cuh"
#include "mpx/backend/cuda/pool2d.cuh"
#include "mpx/backend/cuda/positional_embedding.cuh"
#include "mpx/backend/cuda/row_gather.cuh"
#include "mpx/backend/cuda/sample_shift.cuh"
#include "mpx/backend/cuda/softmax_cross_entropy.cuh"
#include "mpx/backend/cuda/tensor_ops.cuh"
#include "mpx/backend/cuda/upsample.cuh"
#include "mpx/backend/cuda/weight_average.cuh"
#include "mpx/tensor/device.hpp"

namespace mpx {

namespace cuda {
/// @brief The convolutions of `Backend<Cuda>`, defined by <mpx/backend/cuda/conv2d.cuh>, which
/// <mpx/cuda.hpp> does not include (the cuDNN frontend adds ~45 s to each translation unit's
/// compile); without it a convolution on mpx::Cuda stops here with a message saying what to include.
template <class Dependent, class Enable = void>
struct Conv2dPasses {
  static_assert(mpx::detail::always_false<Dependent>,
                "mpx::Backend<Cuda>: 2-D convolutions on the GPU run on cuDNN, whose frontend is not part of "
                "<mpx/cuda.hpp>: #include <mpx/backend/cuda/conv2d.cuh> in this translation unit, before the "
                "code that uses nn::Conv2d (or Backend<Cuda>::conv2d_*) on mpx::Cuda");
};
}  // namespace cuda

/// @brief The CUDA backend: each operation forwards to the `mpx::cuda` function of the same name,
/// queued on `cuda_context()`'s stream.
template <>
struct Backend<Cuda> {
  /// @brief Scratch memory of the multi-tensor `unscale_and_inspect`; see `cuda::GradientWorkspace`.
  using GradientWorkspace = cuda::GradientWorkspace;
  /// @brief A captured CUDA graph of queued work; see `cuda::Graph`.
  using Graph = cuda::Graph;
  /// @brief The sort buffers `embedding_backward` keeps between calls; see `cuda::EmbeddingWorkspace`.
  using EmbeddingWorkspace = cuda::EmbeddingWorkspace;
  /// @brief A GPU step is queued, not run, by the host thread: its host threads do not set its
  /// speed, so there is no count to choose (the CPU's is `cpu::StepThreads`).
  struct StepThreads {
    struct Scope {};  ///< nothing held during a step
    /// @brief Nothing to do.
    static Scope step(std::int64_t /*work*/, bool /*adapt*/ = true) noexcept { return {}; }
  };

  /// @brief Queues `f(args...)` in one device thread; see `cuda::single_thread`.
  template <class F, class... Args>
  static void single_thread(const F& f, Args... args) {
    cuda::single_thread(f, args...);
  }

  /// @brief GEMM in the `Compute` precision through cuBLASLt; see `cuda::gemm`.
  template <NumericTag Compute, class... Args>
  static void gemm(Args&&... args) {
    cuda::gemm<Compute>(std::forward<Args>(args)...);
  }
  /// @brief cuBLASLt's FP8 GEMMs read both operands along K (`cuda::gemm_scaled`: A [M, K] and B
  /// [N, K] with `transpose_b = Yes`), so an operand read along its other dimension by another GEMM
  /// is cast with its transpose (`cast_transpose_scaled`). `nn::Linear` reads it.
  static constexpr bool fp8_gemm_needs_k_major_operands = true;
  /// @brief GEMM of two scaled FP8 operands through cuBLASLt (compute capability 8.9 or newer); see
  /// `cuda::gemm_scaled`.
  template <NumericTag AFormat, NumericTag BFormat, AccumulationModel Accumulation = Fp32Accumulation,
            class... Args>
  static void gemm_scaled(Args&&... args) {
    cuda::gemm_scaled<AFormat, BFormat, Accumulation>(std::forward<Args>(args)...);
  }
  /// @brief A tensor times its scale, cast into `Format` (FP8), its amax recorded; see
  /// `cuda::cast_scaled`.
  template <NumericTag Format, class... Args>
  static void cast_scaled(Args&&... args) {
    cuda::cast_scaled<Format>(std::forward<Args>(args)...);
  }
  /// @brief `cast_scaled` with the codes' transpose written in the same pass; see
  /// `cuda::cast_transpose_scaled`.
  template <NumericTag Format, class... Args>
  static void cast_transpose_scaled(Args&&... args) {
    cuda::cast_transpose_scaled<Format>(std::forward<Args>(args)...);
  }
  /// @brief What a cast into `Format` does to a tensor, counted (saturated, flushed, amax); see
  /// `cuda::accumulate_fp8_statistics`.
  template <NumericTag Format, class... Args>
  static void accumulate_fp8_statistics(Args&&... args) {
    cuda::accumulate_fp8_statistics<Format>(std::forward<Args>(args)...);
  }
  /// @brief 2-D convolution (channels-last) in the `Compute` precision on cuDNN; see
  /// `cuda::conv2d_forward` (needs <mpx/backend/cuda/conv2d.cuh>).
  template <NumericTag Compute, class... Args>
  static void conv2d_forward(Args&&... args) {
    cuda::Conv2dPasses<Compute>::template forward<Compute>(std::forward<Args>(args)...);
  }
  /// @brief A convolution's input gradient; see `cuda::conv2d_backward_input`.
  template <NumericTag Compute, class... Args>
  static void conv2d_backward_input(Args&&... args) {
    cuda::Conv2dPasses<Compute>::template backward_input<Compute>(std::forward<Args>(args)...);
  }
  /// @brief A convolution's weight gradient (fp32); see `cuda::conv2d_backward_weight`.
  template <NumericTag Compute, class... Args>
  static void conv2d_backward_weight(Args&&... args) {
    cuda::Conv2dPasses<Compute>::template backward_weight<Compute>(std::forward<Args>(args)...);
  }
  /// @brief A convolution's bias gradient (accumulate type); see `cuda::conv2d_backward_bias`.
  template <Element T, Element Acc>
  static void conv2d_backward_bias(const Tensor<T, Cuda>& dy, Tensor<Acc, Cuda>& dbias, bool overwrite) {
    cuda::Conv2dPasses<T>::backward_bias(dy, dbias, overwrite);
  }
  /// @brief Attention has a fused path here (cuDNN's SDPA: `attention_fused_applies`,
  /// `attention_fused_forward`, `attention_fused_backward`), on when the program includes
  /// <mpx/backend/cuda/fused_attention.cuh>; `nn::BasicSelfAttention` reads it.
  static constexpr bool has_fused_attention = true;
  /// @brief No block-scaled GEMMs on the GPU yet: `nn::Linear` refuses a block-scaled precision on
  /// `mpx::Cuda` at compile time (docs/block_scaling.md).
  static constexpr bool has_block_scaled_gemm = false;
  /// @brief Whether the fused attention may take heads of `head_dim` with operands of T on the
  /// current context's device; see `cuda::attention_fused_applies`.
  template <Element T>
  static bool attention_fused_applies(std::int64_t head_dim) {
    return cuda::attention_fused_applies<T>(head_dim);
  }
  /// @brief Unscales one gradient and reports non-finite values (waits for the device); see
  /// `cuda::unscale_and_inspect`.
  template <bool Scale, class... Args>
  static auto unscale_and_inspect(Args&&... args) {
    return cuda::unscale_and_inspect<Scale>(std::forward<Args>(args)...);
  }
  /// @brief Rounds a tensor into another precision; see `cuda::round_into`.
  template <NumericTag To, class... Args>
  static void round_into(Args&&... args) {
    cuda::round_into<To>(std::forward<Args>(args)...);
  }

// Each operation is a function object forwarding to the `mpx::cuda` function of the same name.
#define MPX_DETAIL_FORWARD_TO_CUDA(name)                           \
  static constexpr auto name = [](auto&&... a) -> decltype(auto) { \
    return cuda::name(std::forward<decltype(a)>(a)...);            \
  }
  MPX_DETAIL_FORWARD_TO_CUDA(relu_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(relu_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(gelu_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(gelu_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(layer_norm_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(layer_norm_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(softmax_cross_entropy);
  MPX_DETAIL_FORWARD_TO_CUDA(count_correct);
  MPX_DETAIL_FORWARD_TO_CUDA(argmax);
  MPX_DETAIL_FORWARD_TO_CUDA(mse_loss);
  MPX_DETAIL_FORWARD_TO_CUDA(sgd_update);
  MPX_DETAIL_FORWARD_TO_CUDA(adamw_update);
  MPX_DETAIL_FORWARD_TO_CUDA(sgd_updates);
  MPX_DETAIL_FORWARD_TO_CUDA(adamw_updates);
  MPX_DETAIL_FORWARD_TO_CUDA(weight_average_update);
  MPX_DETAIL_FORWARD_TO_CUDA(weight_average_updates);
  MPX_DETAIL_FORWARD_TO_CUDA(scale_in_place);
  MPX_DETAIL_FORWARD_TO_CUDA(add_into);
  MPX_DETAIL_FORWARD_TO_CUDA(add);
  MPX_DETAIL_FORWARD_TO_CUDA(fill_uniform);
  MPX_DETAIL_FORWARD_TO_CUDA(flag_nonfinite);
  MPX_DETAIL_FORWARD_TO_CUDA(accumulate_amax);
  MPX_DETAIL_FORWARD_TO_CUDA(fill_normal);
  MPX_DETAIL_FORWARD_TO_CUDA(embedding_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(embedding_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(positional_embedding_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(positional_embedding_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(attention_split_heads);
  MPX_DETAIL_FORWARD_TO_CUDA(attention_merge_heads);
  MPX_DETAIL_FORWARD_TO_CUDA(attention_softmax_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(attention_softmax_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(attention_fused_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(attention_fused_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(dropout);
  MPX_DETAIL_FORWARD_TO_CUDA(silu_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(silu_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(max_pool2d_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(max_pool2d_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(avg_pool2d_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(avg_pool2d_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(global_avg_pool2d_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(global_avg_pool2d_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(batch_norm_forward_training);
  MPX_DETAIL_FORWARD_TO_CUDA(batch_norm_forward_inference);
  MPX_DETAIL_FORWARD_TO_CUDA(batch_norm_update_running_stats);
  MPX_DETAIL_FORWARD_TO_CUDA(batch_norm_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(batch_norm_channel_sums);
  MPX_DETAIL_FORWARD_TO_CUDA(batch_norm_squared_deviations);
  MPX_DETAIL_FORWARD_TO_CUDA(batch_norm_normalize);
  MPX_DETAIL_FORWARD_TO_CUDA(batch_norm_backward_sums);
  MPX_DETAIL_FORWARD_TO_CUDA(batch_norm_backward_input);
  MPX_DETAIL_FORWARD_TO_CUDA(group_norm_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(group_norm_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(upsample_nearest_forward);
  MPX_DETAIL_FORWARD_TO_CUDA(upsample_nearest_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(concat_channels);
  MPX_DETAIL_FORWARD_TO_CUDA(split_channels);
  MPX_DETAIL_FORWARD_TO_CUDA(add_sample_shift);
  MPX_DETAIL_FORWARD_TO_CUDA(sample_shift_backward);
  MPX_DETAIL_FORWARD_TO_CUDA(gather_rows);
  MPX_DETAIL_FORWARD_TO_CUDA(gather_rows_backward);
#undef MPX_DETAIL_FORWARD_TO_CUDA
};

}  // namespace mpx
