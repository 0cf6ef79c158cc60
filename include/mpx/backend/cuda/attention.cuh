// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Self-attention's own kernels on the GPU, with mpx::cpu's contracts and formulas
/// (backend/cpu/attention.hpp, backend/attention_spec.hpp): the head permutes, and the masked
/// (causal or bidirectional) softmax forward and backward with math in the accumulate type. The matmuls
/// around them are strided-batched `cuda::gemm` calls.
///
/// The softmax kernels give one block to each row (a query of one head): two block reductions for
/// the forward (max, then the sum of exponentials), one for the backward (sum of P dP), each in a
/// fixed order, so results do not vary from run to run. They may differ from the CPU's in the last
/// bits: the sums are ordered differently and the device's exp is not the host's.
///
/// The fused path (`attention_fused_forward`, `attention_fused_backward`, `attention_fused_applies`)
/// is cuDNN's scaled-dot-product attention, defined by the opt-in header
/// <mpx/backend/cuda/fused_attention.cuh> (the cuDNN frontend adds about 45 s to a translation
/// unit's compile, so <mpx/cuda.hpp> does not include it). These functions reach it through pointers
/// that header sets during static initialisation, as gemm.hpp reaches its unfused epilogues: one body
/// for every translation unit (a second body of an inline function would break the one-definition
/// rule), so the fused path is on in a program when any of its translation units includes the header,
/// and off (these return false) when none does.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/attention.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "mpx/backend/attention_spec.hpp"
#include "mpx/backend/cuda/context.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/reduce.cuh"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// One element per thread of the grid-stride loop: heads[row, j] <-> tokens[b, t, column + h d + j].
// ToHeads selects the direction (split when true, merge when false).
template <bool ToHeads, class T>
__global__ void attention_permute_kernel(const T* in, T* out, std::int64_t count, std::int64_t num_heads,
                                         std::int64_t sequence, std::int64_t head_dim, std::int64_t width,
                                         std::int64_t column) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t row = i / head_dim;  // (b, h, t)
    const std::int64_t j = i % head_dim;
    const std::int64_t t = row % sequence;
    const std::int64_t h = (row / sequence) % num_heads;
    const std::int64_t b = row / (sequence * num_heads);
    const std::int64_t token = (b * sequence + t) * width + column + h * head_dim + j;
    if constexpr (ToHeads) {
      out[i] = in[token];
    } else {
      out[token] = in[i];
    }
  }
}

template <class Acc, class T>
__global__ void attention_softmax_forward_kernel(const Acc* scores, T* probs, const std::int32_t* key_counts,
                                                 std::int64_t matrices_per_count, std::int64_t sequence,
                                                 AttentionMask mask) {
  const std::int64_t row = blockIdx.x;
  const Acc* s = scores + row * sequence;
  T* p = probs + row * sequence;
  const std::int64_t allowed = attention_allowed_keys(
      row, sequence,
      key_counts != nullptr ? key_counts[attention_key_count_index(row, sequence, matrices_per_count)]
                            : sequence,
      mask);
  Acc local = -static_cast<Acc>(INFINITY);
  for (std::int64_t j = threadIdx.x; j < allowed; j += blockDim.x) local = fmax(local, s[j]);
  const Acc max = block_reduce(local, Fmax{});
  local = 0;
  for (std::int64_t j = threadIdx.x; j < allowed; j += blockDim.x) local += std::exp(s[j] - max);
  const Acc sum = block_reduce(local, Plus{});
  for (std::int64_t j = threadIdx.x; j < sequence; j += blockDim.x) {
    p[j] = j < allowed ? round_to<tag_of_t<T>>(std::exp(s[j] - max) / sum) : T(0);
  }
}

template <class T, class Acc>
__global__ void attention_softmax_backward_kernel(const T* probs, const Acc* dprobs, T* dscores,
                                                  const std::int32_t* key_counts,
                                                  std::int64_t matrices_per_count, std::int64_t sequence,
                                                  AttentionMask mask) {
  const std::int64_t row = blockIdx.x;
  const T* p = probs + row * sequence;
  const Acc* dp = dprobs + row * sequence;
  T* ds = dscores + row * sequence;
  const std::int64_t allowed = attention_allowed_keys(
      row, sequence,
      key_counts != nullptr ? key_counts[attention_key_count_index(row, sequence, matrices_per_count)]
                            : sequence,
      mask);
  Acc local = 0;
  for (std::int64_t j = threadIdx.x; j < allowed; j += blockDim.x) local += static_cast<Acc>(p[j]) * dp[j];
  const Acc dot = block_reduce(local, Plus{});
  for (std::int64_t j = threadIdx.x; j < sequence; j += blockDim.x) {
    ds[j] = j < allowed ? round_to<tag_of_t<T>>(static_cast<Acc>(p[j]) * (dp[j] - dot)) : T(0);
  }
}

// Where backend/cuda/fused_attention.cuh puts its entry points for operands of T (Eigen::half or
// Eigen::bfloat16): constant-initialised to null, set during static initialisation by that header;
// the signatures are those of `attention_fused_applies`, `attention_fused_forward` and
// `attention_fused_backward` below, the operands validated.
template <class T>
struct FusedAttentionEntry {
  using Applies = bool (*)(std::int64_t head_dim, const CudaContext& context);
  using Forward = bool (*)(const Tensor<T, Cuda>& qkv, const Tensor<std::int32_t, Cuda>* key_counts,
                           Tensor<T, Cuda>& out, Tensor<float, Cuda>* stats, std::int64_t num_heads,
                           CudaContext& context);
  using Backward = void (*)(const Tensor<T, Cuda>& qkv, const Tensor<std::int32_t, Cuda>* key_counts,
                            const Tensor<T, Cuda>& out, const Tensor<T, Cuda>& d_out,
                            const Tensor<float, Cuda>& stats, Tensor<T, Cuda>& d_qkv, std::int64_t num_heads,
                            CudaContext& context);
  static inline Applies applies = nullptr;
  static inline Forward forward = nullptr;
  static inline Backward backward = nullptr;
};

// The operand types the fused path takes: cuDNN's SDPA runs on fp16 and bf16 only.
template <class T>
inline constexpr bool fused_attention_operand =
    std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

template <bool ToHeads, class T>
void launch_attention_permute(const T* in, T* out, const Shape& heads, std::int64_t width,
                              std::int64_t column) {
  const std::int64_t count = heads.numel();
  if (count == 0) return;
  attention_permute_kernel<ToHeads><<<elementwise_blocks(count), elementwise_threads, 0, stream()>>>(
      in, out, count, heads[1], heads[2], heads[3], width, column);
  MPX_CUDA_CHECK_LAUNCH("attention_permute_kernel");
}

}  // namespace detail

/// @brief heads[b, h, t, :] = tokens[b, t, column + h * head_dim + :]; see `cpu::attention_split_heads`.
/// @param tokens [batch, sequence, width] (or [batch, d1, ..., dk, width]).
/// @param column the first column of the group to read.
/// @param heads  [batch, heads, sequence, head_dim], written.
template <Element T>
void attention_split_heads(const Tensor<T, Cuda>& tokens, std::int64_t column, Tensor<T, Cuda>& heads) {
  validate_attention_heads("mpx::cuda::attention_split_heads", tokens, column, heads);
  detail::launch_attention_permute<true>(tokens.data(), heads.data(), heads.shape(), tokens.shape().cols(),
                                         column);
}

/// @brief tokens[b, t, column + h * head_dim + :] = heads[b, h, t, :]; see `cpu::attention_merge_heads`.
/// @param heads  [batch, heads, sequence, head_dim].
/// @param column the first column of the group to write.
/// @param tokens [batch, sequence, width] (or [batch, d1, ..., dk, width]), written in that group.
template <Element T>
void attention_merge_heads(const Tensor<T, Cuda>& heads, std::int64_t column, Tensor<T, Cuda>& tokens) {
  validate_attention_heads("mpx::cuda::attention_merge_heads", tokens, column, heads);
  detail::launch_attention_permute<false>(heads.data(), tokens.data(), heads.shape(), tokens.shape().cols(),
                                          column);
}

/// @brief The masked softmax of each row of `scores` into `probs`; masked keys and rows with no
/// allowed key give 0, never NaN. See `cpu::attention_softmax_forward`.
/// @param scores     [matrices * sequence, sequence] in the accumulate type.
/// @param probs      same shape, compute type, written.
/// @param mask       `AttentionMask::Causal` or `AttentionMask::Bidirectional`.
/// @param key_counts optional [g] int32, g dividing the number of matrices: the first keys each group
///                   of matrices may attend to (g = batch: the sequences' lengths).
template <Element Acc, Element T>
void attention_softmax_forward(const Tensor<Acc, Cuda>& scores, Tensor<T, Cuda>& probs, AttentionMask mask,
                               const Tensor<std::int32_t, Cuda>* key_counts = nullptr) {
  validate_attention_softmax("mpx::cuda::attention_softmax_forward", scores, "probs", probs, key_counts);
  const std::int64_t rows = scores.shape().rows();
  const std::int64_t sequence = scores.shape().cols();
  if (rows == 0 || sequence == 0) return;
  detail::attention_softmax_forward_kernel<<<static_cast<unsigned>(rows), detail::row_threads(sequence), 0,
                                             detail::stream()>>>(
      scores.data(), probs.data(), key_counts != nullptr ? key_counts->data() : nullptr,
      attention_matrices_per_count(scores, key_counts), sequence, mask);
  MPX_CUDA_CHECK_LAUNCH("attention_softmax_forward_kernel");
}

/// @brief dscores = P * (dP - sum_k P_k dP_k) over the allowed keys, 0 elsewhere. See
/// `cpu::attention_softmax_backward`.
/// @param probs      [matrices * sequence, sequence], the forward's output in the compute type.
/// @param dprobs     same shape, dL/dP in the accumulate type.
/// @param dscores    same shape, dL/dS in the compute type, written.
/// @param mask       the forward's mask.
/// @param key_counts the forward's key counts, or null.
template <Element T, Element Acc>
void attention_softmax_backward(const Tensor<T, Cuda>& probs, const Tensor<Acc, Cuda>& dprobs,
                                Tensor<T, Cuda>& dscores, AttentionMask mask,
                                const Tensor<std::int32_t, Cuda>* key_counts = nullptr) {
  constexpr const char* where = "mpx::cuda::attention_softmax_backward";
  validate_attention_softmax(where, dprobs, "probs", probs, key_counts);
  require_shape(where, "dscores", dscores.shape(), probs.shape());
  const std::int64_t rows = probs.shape().rows();
  const std::int64_t sequence = probs.shape().cols();
  if (rows == 0 || sequence == 0) return;
  detail::attention_softmax_backward_kernel<<<static_cast<unsigned>(rows), detail::row_threads(sequence), 0,
                                              detail::stream()>>>(
      probs.data(), dprobs.data(), dscores.data(), key_counts != nullptr ? key_counts->data() : nullptr,
      attention_matrices_per_count(probs, key_counts), sequence, mask);
  MPX_CUDA_CHECK_LAUNCH("attention_softmax_backward_kernel");
}

/// @brief Whether `attention_fused_forward` may run attention over heads of `head_dim` with operands of
/// T on `context`'s device: T is Eigen::half or Eigen::bfloat16; some translation unit of the program
/// includes <mpx/backend/cuda/fused_attention.cuh>; and its limits allow it (see that header:
/// head_dim a multiple of 8, at most 128, 256 on compute capability 9.x; compute capability 8.0 or
/// newer; cuDNN 9 at run time). cuDNN may still refuse a particular shape, and the forward then
/// returns false.
/// @param head_dim the width d of one head.
/// @param context  the device.
template <Element T>
[[nodiscard]] bool attention_fused_applies(std::int64_t head_dim,
                                           const CudaContext& context = cuda_context()) {
  if constexpr (detail::fused_attention_operand<T>) {
    const auto applies = detail::FusedAttentionEntry<T>::applies;
    return applies != nullptr && applies(head_dim, context);
  } else {
    return false;
  }
}

/// @brief Bidirectional attention over the heads of a QKV projection's output in one fused kernel
/// (cuDNN's scaled-dot-product attention), when the fused path takes it: out = the merged heads of
/// softmax(Q K^T / sqrt(d) + mask) V, the mask allowing key j of sequence b when j < key_counts[b]
/// (every key without counts); Q, K and V are read in place from qkv. With `stats`, the softmax
/// statistics backward needs are written too (training). Queued on `context`'s stream.
/// Returns false, having queued nothing, when the fused path does not take it (see
/// `attention_fused_applies`; also when cuDNN refuses the shape, or, with `stats`, its backward);
/// the caller then runs the batched-GEMM path.
/// @param qkv        [batch, ..., 3C]: Q, K, V the three C-wide column groups, head h at columns
///                   h d .. (h + 1) d of each (d = C / num_heads).
/// @param key_counts [batch] int32, each sequence's length (keys from there on masked), or null.
/// @param out        [batch, ..., C], written: the heads' outputs merged. A sequence of length 0 gives
///                   zeros, never NaN; queries at padded positions attend to the real keys, as
///                   `attention_softmax_forward` defines.
/// @param stats      [batch, num_heads, sequence] fp32, written: each query's log-sum-exp of its
///                   scaled scores over the allowed keys (unspecified for a sequence of length 0); or
///                   null (evaluation: no backward follows).
/// @param num_heads  the number of heads H.
/// @param context    the device, stream and cuDNN handle.
/// @throws mpx::shape_error when the operands do not fit (backend/attention_spec.hpp's
///         `validate_fused_attention`); mpx::cuda_error when cuDNN fails; mpx::error when a plan would be
///         built while the stream is being captured.
template <Element T>
bool attention_fused_forward(const Tensor<T, Cuda>& qkv, const Tensor<std::int32_t, Cuda>* key_counts,
                             Tensor<T, Cuda>& out, Tensor<float, Cuda>* stats, std::int64_t num_heads,
                             CudaContext& context = cuda_context()) {
  validate_fused_attention("mpx::cuda::attention_fused_forward", qkv, out, stats, key_counts, num_heads);
  if constexpr (detail::fused_attention_operand<T>) {
    const auto forward = detail::FusedAttentionEntry<T>::forward;
    return forward != nullptr && forward(qkv, key_counts, out, stats, num_heads, context);
  } else {
    return false;
  }
}

/// @brief The backward of an `attention_fused_forward` that returned true with `stats`: d_qkv = dL/dQ,
/// dL/dK, dL/dV in qkv's layout, from the forward's operands and d_out = dL/d(out). The gradients of
/// padded keys and values, and all of a length-0 sequence's, are exactly 0, as the batched-GEMM
/// path gives them. Queued on `context`'s stream.
/// @param qkv, key_counts, out, stats, num_heads as the forward had them (unchanged since).
/// @param d_out  out's shape: the upstream gradient.
/// @param d_qkv  qkv's shape, written (every element).
/// @param context the forward's.
/// @throws mpx::shape_error when the operands do not fit; mpx::error when the fused path is not in
///         the program (no forward could have run fused); mpx::cuda_error when cuDNN fails.
template <Element T>
void attention_fused_backward(const Tensor<T, Cuda>& qkv, const Tensor<std::int32_t, Cuda>* key_counts,
                              const Tensor<T, Cuda>& out, const Tensor<T, Cuda>& d_out,
                              const Tensor<float, Cuda>& stats, Tensor<T, Cuda>& d_qkv,
                              std::int64_t num_heads, CudaContext& context = cuda_context()) {
  constexpr const char* where = "mpx::cuda::attention_fused_backward";
  validate_fused_attention(where, qkv, out, &stats, key_counts, num_heads);
  require_shape(where, "d_out", d_out.shape(), out.shape());
  require_shape(where, "d_qkv", d_qkv.shape(), qkv.shape());
  if constexpr (detail::fused_attention_operand<T>) {
    const auto backward = detail::FusedAttentionEntry<T>::backward;
    if (backward != nullptr) {
      backward(qkv, key_counts, out, d_out, stats, d_qkv, num_heads, context);
      return;
    }
  }
  throw error(mpx::detail::concat(where, ": no fused attention for these operands in this program (",
                                  "fp16 or bf16, with <mpx/backend/cuda/fused_attention.cuh> included); ",
                                  "run the backward of the path the forward took"));
}

}  // namespace mpx::cuda
