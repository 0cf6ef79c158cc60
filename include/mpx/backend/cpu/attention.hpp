// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Self-attention's own kernels on the CPU (its matmuls are batched `cpu::gemm` calls): the
/// permutes between token-major [batch, sequence, width] and head-major [batch, heads, sequence,
/// head_dim] layouts, and the masked (causal or bidirectional) softmax forward and backward, whose
/// math is in the accumulate type (fp32; fp64 for double) whatever the compute type (autocast's rule).
/// Masks and shapes are those of backend/attention_spec.hpp; these are the references the CUDA
/// kernels (backend/cuda/attention.cuh) are tested against.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mpx/backend/attention_spec.hpp"
#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/numeric/exp.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief heads[b, h, t, :] = tokens[b, t, column + h * head_dim + :]: one of the q, k, v column
/// groups of a QKV projection's output [batch, sequence, 3C] into head-major [batch, heads, sequence,
/// head_dim] (GPT-2's split + view(B, T, H, d) + transpose(1, 2)), or an upstream gradient of width C.
/// Tokens [batch, d1, ..., dk, width] are read as [batch, d1 * ... * dk, width].
/// @param tokens [batch, sequence, width] (or [batch, d1, ..., dk, width]).
/// @param column the first column of the group to read.
/// @param heads  [batch, heads, sequence, head_dim], written.
/// @throws mpx::shape_error when the shapes do not fit (see `validate_attention_heads`).
template <Element T>
void attention_split_heads(const Tensor<T, Host>& tokens, std::int64_t column, Tensor<T, Host>& heads) {
  validate_attention_heads("mpx::cpu::attention_split_heads", tokens, column, heads);
  const std::int64_t num_heads = heads.shape()[1];
  const std::int64_t sequence = heads.shape()[2];
  const std::int64_t head_dim = heads.shape()[3];
  const std::int64_t width = tokens.shape().cols();
  const T* in = tokens.data();
  T* out = heads.data();
  const std::int64_t rows = heads.shape().rows();  // (b, h, t)
  parallel_for_chunks(rows, rows_per_chunk(head_dim), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t t = row % sequence;
      const std::int64_t h = (row / sequence) % num_heads;
      const std::int64_t b = row / (sequence * num_heads);
      const T* source = in + (b * sequence + t) * width + column + h * head_dim;
      std::copy(source, source + head_dim, out + row * head_dim);
    }
  });
}

/// @brief tokens[b, t, column + h * head_dim + :] = heads[b, h, t, :]: the inverse of
/// `attention_split_heads` (the heads' outputs merged into [batch, sequence, C], or the q, k, v
/// gradients into the QKV gradient's column groups). Columns outside the heads' range are untouched.
/// @param heads  [batch, heads, sequence, head_dim].
/// @param column the first column of the group to write.
/// @param tokens [batch, sequence, width] (or [batch, d1, ..., dk, width]), written in that group.
/// @throws mpx::shape_error when the shapes do not fit (see `validate_attention_heads`).
template <Element T>
void attention_merge_heads(const Tensor<T, Host>& heads, std::int64_t column, Tensor<T, Host>& tokens) {
  validate_attention_heads("mpx::cpu::attention_merge_heads", tokens, column, heads);
  const std::int64_t num_heads = heads.shape()[1];
  const std::int64_t sequence = heads.shape()[2];
  const std::int64_t head_dim = heads.shape()[3];
  const std::int64_t width = tokens.shape().cols();
  const T* in = heads.data();
  T* out = tokens.data();
  const std::int64_t rows = heads.shape().rows();
  parallel_for_chunks(rows, rows_per_chunk(head_dim), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t t = row % sequence;
      const std::int64_t h = (row / sequence) % num_heads;
      const std::int64_t b = row / (sequence * num_heads);
      const T* source = in + row * head_dim;
      std::copy(source, source + head_dim, out + (b * sequence + t) * width + column + h * head_dim);
    }
  });
}

/// @brief probs = softmax over each row's allowed keys of `scores` (already scaled by 1/sqrt(d)),
/// 0 at masked keys; math in the accumulate type, one rounding into the compute type.
///
/// Row r allows keys j <= r % sequence (causal) or every key (bidirectional) and, with
/// `key_counts`, only j below its matrix's count (the mask of attention_spec.hpp). p_j = exp(s_j - max) /
/// sum_k exp(s_k - max), max and sum over the allowed keys; the largest term is exp(0) = 1, so the
/// sum is at least 1 and no finite score overflows. A row with no allowed key is all zeros (never NaN).
/// @param scores     [matrices * sequence, sequence] in the accumulate type (fp32, fp64 for double).
/// @param probs      same shape, compute type, written.
/// @param mask       `AttentionMask::Causal` or `AttentionMask::Bidirectional`.
/// @param key_counts optional [g] int32, g dividing the number of matrices: the first keys each group
///                   of matrices may attend to (g = batch: the sequences' lengths, a key-padding mask).
template <FloatingElement Acc, FloatingElement T>
void attention_softmax_forward(const Tensor<Acc, Host>& scores, Tensor<T, Host>& probs, AttentionMask mask,
                               const Tensor<std::int32_t, Host>* key_counts = nullptr) {
  validate_attention_softmax("mpx::cpu::attention_softmax_forward", scores, "probs", probs, key_counts);
  const std::int64_t per_count = attention_matrices_per_count(scores, key_counts);
  const std::int64_t rows = scores.shape().rows();
  const std::int64_t sequence = scores.shape().cols();
  if (sequence == 0) return;
  parallel_for_chunks(rows, rows_per_chunk(sequence), [&](std::int64_t begin, std::int64_t end) {
    std::vector<Acc> exps(static_cast<std::size_t>(sequence));
    for (std::int64_t row = begin; row < end; ++row) {
      const Acc* s = scores.data() + row * sequence;
      T* p = probs.data() + row * sequence;
      const std::int64_t allowed = attention_allowed_keys(
          row, sequence,
          key_counts != nullptr ? (*key_counts)[attention_key_count_index(row, sequence, per_count)]
                                : sequence,
          mask);
      const Acc max = detail::row_max(s, allowed);
      Acc* e = exps.data();
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t j = 0; j < allowed; ++j) e[j] = softmax_exp(s[j] - max);
      const Acc sum = detail::lane_sum(allowed, [e](std::int64_t j) { return e[j]; });
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t j = 0; j < allowed; ++j) e[j] = e[j] / sum;
      detail::round_range(e, p, 0, allowed);  // round_to, vectorised
      std::fill(p + allowed, p + sequence, T(0));
    }
  });
}

/// @brief dscores = P * (dP - sum_k P_k dP_k) over each row's allowed keys, 0 at masked keys (and in
/// rows with none): the softmax's backward, math in the accumulate type, one rounding into the
/// compute type (dscores is the next GEMMs' operand).
/// @param probs      [matrices * sequence, sequence], the forward's output in the compute type.
/// @param dprobs     same shape, dL/dP in the accumulate type.
/// @param dscores    same shape, dL/dS in the compute type, written (S is the scaled score).
/// @param mask       the forward's mask.
/// @param key_counts the forward's key counts, or null.
template <FloatingElement T, FloatingElement Acc>
void attention_softmax_backward(const Tensor<T, Host>& probs, const Tensor<Acc, Host>& dprobs,
                                Tensor<T, Host>& dscores, AttentionMask mask,
                                const Tensor<std::int32_t, Host>* key_counts = nullptr) {
  constexpr const char* where = "mpx::cpu::attention_softmax_backward";
  validate_attention_softmax(where, dprobs, "probs", probs, key_counts);
  require_shape(where, "dscores", dscores.shape(), probs.shape());
  const std::int64_t per_count = attention_matrices_per_count(probs, key_counts);
  const std::int64_t rows = probs.shape().rows();
  const std::int64_t sequence = probs.shape().cols();
  if (sequence == 0) return;
  parallel_for_chunks(rows, rows_per_chunk(sequence), [&](std::int64_t begin, std::int64_t end) {
    std::vector<Acc> widened(static_cast<std::size_t>(sequence));  // a row of P, then of dS
    Acc* w = widened.data();
    for (std::int64_t row = begin; row < end; ++row) {
      const T* p = probs.data() + row * sequence;
      const Acc* dp = dprobs.data() + row * sequence;
      T* ds = dscores.data() + row * sequence;
      const std::int64_t allowed = attention_allowed_keys(
          row, sequence,
          key_counts != nullptr ? (*key_counts)[attention_key_count_index(row, sequence, per_count)]
                                : sequence,
          mask);
      detail::widen_range<tag_of_t<T>>(p, w, 0, allowed);  // static_cast, vectorised
      Acc dot = 0;
      for (std::int64_t j = 0; j < allowed; ++j) dot += w[j] * dp[j];
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t j = 0; j < allowed; ++j) w[j] = w[j] * (dp[j] - dot);
      detail::round_range(w, ds, 0, allowed);
      std::fill(ds + allowed, ds + sequence, T(0));
    }
  });
}

}  // namespace mpx::cpu
