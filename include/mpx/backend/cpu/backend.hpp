// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Backend<Host>`: the CPU implementations behind the device-neutral operation names.

#include <cstdint>
#include <utility>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/cpu/activation.hpp"
#include "mpx/backend/cpu/attention.hpp"
#include "mpx/backend/cpu/batch_norm.hpp"
#include "mpx/backend/cpu/block_quantize.hpp"
#include "mpx/backend/cpu/block_scaled_gemm.hpp"
#include "mpx/backend/cpu/channel_concat.hpp"
#include "mpx/backend/cpu/conv2d.hpp"
#include "mpx/backend/cpu/dropout.hpp"
#include "mpx/backend/cpu/elementwise.hpp"
#include "mpx/backend/cpu/embedding.hpp"
#include "mpx/backend/cpu/fp8_cast.hpp"
#include "mpx/backend/cpu/fp8_statistics.hpp"
#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/backend/cpu/gradient.hpp"
#include "mpx/backend/cpu/graph.hpp"
#include "mpx/backend/cpu/group_norm.hpp"
#include "mpx/backend/cpu/layer_norm.hpp"
#include "mpx/backend/cpu/mse_loss.hpp"
#include "mpx/backend/cpu/optimizer.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/cpu/pool2d.hpp"
#include "mpx/backend/cpu/positional_embedding.hpp"
#include "mpx/backend/cpu/row_gather.hpp"
#include "mpx/backend/cpu/sample_shift.hpp"
#include "mpx/backend/cpu/softmax_cross_entropy.hpp"
#include "mpx/backend/cpu/step_threads.hpp"
#include "mpx/backend/cpu/upsample.hpp"
#include "mpx/backend/cpu/weight_average.hpp"
#include "mpx/backend/normal_fill_spec.hpp"
#include "mpx/numeric/random.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/convert.hpp"
#include "mpx/tensor/device.hpp"

namespace mpx {

/// @brief The CPU backend: each operation forwards to the `mpx::cpu` kernel of the same name.
template <>
struct Backend<Host> {
  /// @brief Scratch memory of the multi-tensor `unscale_and_inspect` (none on the CPU).
  using GradientWorkspace = cpu::GradientWorkspace;
  /// @brief A captured training step, replayed by `launch()`; see `cpu::Graph`.
  using Graph = cpu::Graph;
  /// @brief What `embedding_backward` keeps between calls (nothing on the CPU); see
  /// `cpu::EmbeddingWorkspace`.
  using EmbeddingWorkspace = cpu::EmbeddingWorkspace;
  /// @brief Chooses each training step's thread count by the steps' measured times; see
  /// `cpu::StepThreads`.
  using StepThreads = cpu::StepThreads;

  /// @brief Runs `f(args...)` once, in order with the operations queued before and after: on the
  /// CPU, now. (The CUDA backend runs it in a one-thread kernel: `f` is a `MPX_HOST_DEVICE` functor
  /// and `args` are device pointers or values.)
  template <class F, class... Args>
  static void single_thread(const F& f, Args... args) {
    f(args...);
  }

  /// @brief GEMM in the `Compute` precision; see `cpu::gemm`.
  template <NumericTag Compute, class... Args>
  static void gemm(Args&&... args) {
    cpu::gemm<Compute>(std::forward<Args>(args)...);
  }
  /// @brief `cpu::gemm_scaled` reads its operands in any layout, so FP8 operands need no transposed
  /// copies (the CUDA backend's cuBLASLt GEMMs do). `nn::Linear` reads it.
  static constexpr bool fp8_gemm_needs_k_major_operands = false;
  /// @brief Attention runs the batched-GEMM path only: no fused kernel on the CPU
  /// (`nn::BasicSelfAttention` reads it; the CUDA backend's is true).
  static constexpr bool has_fused_attention = false;
  /// @brief GEMM of two scaled operands in formats `AFormat` and `BFormat` (FP8); see
  /// `cpu::gemm_scaled`.
  template <NumericTag AFormat, NumericTag BFormat, AccumulationModel Accumulation = Fp32Accumulation,
            class... Args>
  static void gemm_scaled(Args&&... args) {
    cpu::gemm_scaled<AFormat, BFormat, Accumulation>(std::forward<Args>(args)...);
  }
  /// @brief Whether the backend runs block-scaled GEMMs (`nn::Linear` under a block-scaled precision).
  static constexpr bool has_block_scaled_gemm = true;
  /// @brief A matrix quantized into a block-scaling recipe's codes and scales; see
  /// `cpu::quantize_blocks`.
  template <class Recipe, class... Args>
  static void quantize_blocks(Args&&... args) {
    cpu::quantize_blocks<Recipe>(std::forward<Args>(args)...);
  }
  /// @brief GEMM of two block-quantized operands, summed as `Accumulation` says; see
  /// `cpu::gemm_block_scaled`.
  template <AccumulationModel Accumulation = Fp32Accumulation, class... Args>
  static void gemm_block_scaled(Args&&... args) {
    cpu::gemm_block_scaled<Accumulation>(std::forward<Args>(args)...);
  }
  /// @brief A tensor times its scale, cast into `Format` (FP8), its amax recorded; see
  /// `cpu::cast_scaled`.
  template <NumericTag Format, class... Args>
  static void cast_scaled(Args&&... args) {
    cpu::cast_scaled<Format>(std::forward<Args>(args)...);
  }
  /// @brief What a cast into `Format` does to a tensor, counted (saturated, flushed, amax); see
  /// `cpu::accumulate_fp8_statistics`.
  template <NumericTag Format, class... Args>
  static void accumulate_fp8_statistics(Args&&... args) {
    cpu::accumulate_fp8_statistics<Format>(std::forward<Args>(args)...);
  }
  /// @brief 2-D convolution (channels-last) in the `Compute` precision; see `cpu::conv2d_forward`
  /// and backend/conv2d_spec.hpp.
  template <NumericTag Compute, class... Args>
  static void conv2d_forward(Args&&... args) {
    cpu::conv2d_forward<Compute>(std::forward<Args>(args)...);
  }
  /// @brief A convolution's input gradient; see `cpu::conv2d_backward_input`.
  template <NumericTag Compute, class... Args>
  static void conv2d_backward_input(Args&&... args) {
    cpu::conv2d_backward_input<Compute>(std::forward<Args>(args)...);
  }
  /// @brief A convolution's weight gradient (accumulate type); see `cpu::conv2d_backward_weight`.
  template <NumericTag Compute, class... Args>
  static void conv2d_backward_weight(Args&&... args) {
    cpu::conv2d_backward_weight<Compute>(std::forward<Args>(args)...);
  }
  /// @brief Unscales gradients and reports non-finite values; see `cpu::unscale_and_inspect`.
  template <bool Scale, class... Args>
  static auto unscale_and_inspect(Args&&... args) {
    return cpu::unscale_and_inspect<Scale>(std::forward<Args>(args)...);
  }
  /// @brief Rounds a tensor into another precision; see `mpx::round_into`.
  template <NumericTag To, class... Args>
  static void round_into(Args&&... args) {
    mpx::round_into<To>(std::forward<Args>(args)...);
  }

// Each operation is a function object forwarding to the `mpx::cpu` kernel of the same name.
#define MPX_DETAIL_FORWARD_TO_CPU(name)                            \
  static constexpr auto name = [](auto&&... a) -> decltype(auto) { \
    return cpu::name(std::forward<decltype(a)>(a)...);             \
  }
  MPX_DETAIL_FORWARD_TO_CPU(relu_forward);
  MPX_DETAIL_FORWARD_TO_CPU(relu_backward);
  MPX_DETAIL_FORWARD_TO_CPU(gelu_forward);
  MPX_DETAIL_FORWARD_TO_CPU(gelu_backward);
  MPX_DETAIL_FORWARD_TO_CPU(silu_forward);
  MPX_DETAIL_FORWARD_TO_CPU(silu_backward);
  MPX_DETAIL_FORWARD_TO_CPU(layer_norm_forward);
  MPX_DETAIL_FORWARD_TO_CPU(layer_norm_backward);
  MPX_DETAIL_FORWARD_TO_CPU(softmax_cross_entropy);
  MPX_DETAIL_FORWARD_TO_CPU(count_correct);
  MPX_DETAIL_FORWARD_TO_CPU(argmax);
  MPX_DETAIL_FORWARD_TO_CPU(mse_loss);
  MPX_DETAIL_FORWARD_TO_CPU(sgd_update);
  MPX_DETAIL_FORWARD_TO_CPU(adamw_update);
  MPX_DETAIL_FORWARD_TO_CPU(sgd_updates);
  MPX_DETAIL_FORWARD_TO_CPU(adamw_updates);
  MPX_DETAIL_FORWARD_TO_CPU(weight_average_update);
  MPX_DETAIL_FORWARD_TO_CPU(weight_average_updates);
  MPX_DETAIL_FORWARD_TO_CPU(scale_in_place);
  MPX_DETAIL_FORWARD_TO_CPU(flag_nonfinite);
  MPX_DETAIL_FORWARD_TO_CPU(embedding_forward);
  MPX_DETAIL_FORWARD_TO_CPU(embedding_backward);
  MPX_DETAIL_FORWARD_TO_CPU(positional_embedding_forward);
  MPX_DETAIL_FORWARD_TO_CPU(positional_embedding_backward);
  MPX_DETAIL_FORWARD_TO_CPU(attention_split_heads);
  MPX_DETAIL_FORWARD_TO_CPU(attention_merge_heads);
  MPX_DETAIL_FORWARD_TO_CPU(attention_softmax_forward);
  MPX_DETAIL_FORWARD_TO_CPU(attention_softmax_backward);
  MPX_DETAIL_FORWARD_TO_CPU(dropout);
  MPX_DETAIL_FORWARD_TO_CPU(conv2d_backward_bias);
  MPX_DETAIL_FORWARD_TO_CPU(accumulate_amax);
  MPX_DETAIL_FORWARD_TO_CPU(max_pool2d_forward);
  MPX_DETAIL_FORWARD_TO_CPU(max_pool2d_backward);
  MPX_DETAIL_FORWARD_TO_CPU(avg_pool2d_forward);
  MPX_DETAIL_FORWARD_TO_CPU(avg_pool2d_backward);
  MPX_DETAIL_FORWARD_TO_CPU(global_avg_pool2d_forward);
  MPX_DETAIL_FORWARD_TO_CPU(global_avg_pool2d_backward);
  MPX_DETAIL_FORWARD_TO_CPU(batch_norm_forward_training);
  MPX_DETAIL_FORWARD_TO_CPU(batch_norm_forward_inference);
  MPX_DETAIL_FORWARD_TO_CPU(batch_norm_update_running_stats);
  MPX_DETAIL_FORWARD_TO_CPU(batch_norm_backward);
  MPX_DETAIL_FORWARD_TO_CPU(batch_norm_channel_sums);
  MPX_DETAIL_FORWARD_TO_CPU(batch_norm_squared_deviations);
  MPX_DETAIL_FORWARD_TO_CPU(batch_norm_normalize);
  MPX_DETAIL_FORWARD_TO_CPU(batch_norm_backward_sums);
  MPX_DETAIL_FORWARD_TO_CPU(batch_norm_backward_input);
  MPX_DETAIL_FORWARD_TO_CPU(group_norm_forward);
  MPX_DETAIL_FORWARD_TO_CPU(group_norm_backward);
  MPX_DETAIL_FORWARD_TO_CPU(upsample_nearest_forward);
  MPX_DETAIL_FORWARD_TO_CPU(upsample_nearest_backward);
  MPX_DETAIL_FORWARD_TO_CPU(concat_channels);
  MPX_DETAIL_FORWARD_TO_CPU(split_channels);
  MPX_DETAIL_FORWARD_TO_CPU(add_sample_shift);
  MPX_DETAIL_FORWARD_TO_CPU(sample_shift_backward);
  MPX_DETAIL_FORWARD_TO_CPU(gather_rows);
  MPX_DETAIL_FORWARD_TO_CPU(gather_rows_backward);
#undef MPX_DETAIL_FORWARD_TO_CPU

  /// @brief destination += source, elementwise (same shape), in the destination's type.
  template <Element T>
  static void add_into(Tensor<T, Host>& destination, const Tensor<T, Host>& source) {
    require_shape("mpx::Backend<Host>::add_into", "source", source.shape(), destination.shape());
    destination.vector() += source.vector();
  }

  /// @brief sum = a + b, elementwise (same shapes): added in the accumulate type, rounded once into T
  /// (a residual connection's forward, and its backward's two gradient paths).
  template <FloatingElement T>
  static void add(const Tensor<T, Host>& a, const Tensor<T, Host>& b, Tensor<T, Host>& sum) {
    require_shape("mpx::Backend<Host>::add", "b", b.shape(), a.shape());
    require_shape("mpx::Backend<Host>::add", "sum", sum.shape(), a.shape());
    cpu::detail::map_pairs(a, b, sum, [](auto x, auto y) { return x + y; });
  }

  /// @brief Fills with values uniform on [low, high): element i from random_bits(seed, stream, i).
  template <FloatingElement T>
  static void fill_uniform(Tensor<T, Host>& tensor, double low, double high, std::uint64_t seed,
                           std::uint64_t stream) {
    const std::int64_t count = tensor.numel();
    for (std::int64_t i = 0; i < count; ++i) {
      tensor[i] = round_to<tag_of_t<T>>(
          uniform_between(low, high, random_bits(seed, stream, static_cast<std::uint64_t>(i))));
    }
  }

  /// @brief Fills with values normal with the given mean and standard deviation: element i is
  /// `round_to(normal_at(mean, stddev, seed, stream, i))` (backend/normal_fill_spec.hpp).
  template <FloatingElement T>
  static void fill_normal(Tensor<T, Host>& tensor, double mean, double stddev, std::uint64_t seed,
                          std::uint64_t stream) {
    T* out = tensor.data();
    cpu::parallel_for_chunks(tensor.numel(), cpu::parallel_grain, [&](std::int64_t begin, std::int64_t end) {
      normal_values_into(out, begin, end, mean, stddev, seed, stream);
    });
  }
};

}  // namespace mpx
