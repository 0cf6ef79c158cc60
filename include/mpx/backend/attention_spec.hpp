// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The attention kernels' contracts, shared by the CPU and CUDA backends: the head permutes'
/// shapes, the masked softmax's masks and its operand checks, so that both backends accept the same
/// shapes, mask the same entries and name a mismatch the same way.
///
/// Shapes: tokens are [batch, sequence, width] (a QKV projection's output, width 3C, or an attention
/// output, width C), or [batch, d1, ..., dk, width] with the d1 * ... * dk positions in row-major
/// order as the sequence (a channels-last image [N, H, W, C] is a sequence of its H * W pixels);
/// heads are [batch, heads, sequence, head_dim]. Scores and probabilities are the matrix view
/// [batch * heads * sequence, sequence] of M = batch * heads matrices: row r is the query at position
/// r % sequence of matrix m = r / sequence, and its allowed keys are
///   j <= r % sequence  (AttentionMask::Causal)  or every j  (AttentionMask::Bidirectional),
/// and, when a key-count tensor [g] is given (g dividing M), j < key_counts[m / (M / g)]: one count
/// per group of M / g consecutive matrices. With g = batch that is one count per sequence, shared by
/// its heads: an encoder's key-padding mask, the sequence's length. A row with no allowed key (a
/// count <= 0) has probabilities 0 and gradient 0, never NaN.

#include <cstdint>

#include "mpx/config.hpp"
#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Which keys a query may attend to, before any per-row key count caps them.
enum class AttentionMask {
  Causal,        ///< keys 0 .. t for the query at position t (a decoder: GPT)
  Bidirectional  ///< every key (an encoder, or attention over an image's pixels)
};

/// @brief Which kernels computed an attention layer's softmax(Q K^T / sqrt(d) + mask) V.
enum class AttentionKernel {
  BatchedGemm,  ///< mpx's: two strided-batched GEMMs around the masked softmax kernels (every device)
  Fused         ///< one fused kernel per pass, softmax statistics saved instead of P (cuDNN's SDPA)
};

/// @brief How many keys (the first ones) row `row` of a score matrix with `sequence` columns may
/// attend to: `row % sequence + 1` (causal) or `sequence` (bidirectional), capped by `key_count`;
/// 0 when `key_count` <= 0.
/// @param row       the row of the [matrices * sequence, sequence] score view.
/// @param sequence  the number of keys (columns); positive.
/// @param key_count the row's cap on the allowed keys (callers pass `sequence` when they have none).
/// @param mask      causal or bidirectional.
MPX_HOST_DEVICE inline std::int64_t attention_allowed_keys(std::int64_t row, std::int64_t sequence,
                                                           std::int64_t key_count, AttentionMask mask) {
  const std::int64_t masked = mask == AttentionMask::Causal ? row % sequence + 1 : sequence;
  const std::int64_t capped = key_count < masked ? key_count : masked;
  return capped < 0 ? 0 : capped;
}

/// @brief The entry of a key-count tensor that row `row` of the score view reads: its matrix
/// row / sequence, divided by the number of matrices that share one count.
/// @param row                the row of the [matrices * sequence, sequence] score view.
/// @param sequence           the number of keys (columns); positive.
/// @param matrices_per_count the number of matrices over the number of counts (heads, for one count
///                           per sequence).
MPX_HOST_DEVICE inline std::int64_t attention_key_count_index(std::int64_t row, std::int64_t sequence,
                                                              std::int64_t matrices_per_count) {
  return row / sequence / matrices_per_count;
}

/// @brief The sequence length of tokens [batch, d1, ..., dk, width]: d1 * ... * dk (the positions
/// between the batch and the features); 0 for a tensor of rank below 3.
/// @param tokens the token-major tensor.
inline std::int64_t attention_sequence(const Shape& tokens) {
  if (tokens.rank() < 3) return 0;
  std::int64_t sequence = 1;
  for (int axis = 1; axis + 1 < tokens.rank(); ++axis) sequence *= tokens[axis];
  return sequence;
}

/// @brief Throws `mpx::shape_error` naming `where` unless `tokens` is [batch, sequence, width] (or
/// [batch, d1, ..., dk, width] with d1 * ... * dk = sequence), `heads` is [batch, heads, sequence,
/// head_dim] and the heads' columns [column, column + heads * head_dim) lie inside the width.
/// @param where  the calling function, for the message.
/// @param tokens the token-major tensor.
/// @param column the first column of the heads' group in the tokens' width.
/// @param heads  the head-major tensor.
template <class Tokens, class Heads>
void validate_attention_heads(const char* where, const Tokens& tokens, std::int64_t column,
                              const Heads& heads) {
  if (tokens.rank() < 3 || heads.rank() != 4) {
    throw shape_error(detail::concat(
        where, ": expected tokens [batch, sequence, width] (or [batch, d1, ..., dk, width]) and heads ",
        "[batch, heads, sequence, head_dim], received tokens ", tokens.shape(), " and heads ",
        heads.shape()));
  }
  const Shape& t = tokens.shape();
  const Shape& h = heads.shape();
  if (t[0] != h[0] || attention_sequence(t) != h[2] || column < 0 || column + h[1] * h[3] > t.cols()) {
    throw shape_error(
        detail::concat(where, ": heads ", h, " do not fit tokens ", t, " at column ", column,
                       " (need equal batch and sequence, and column + heads * head_dim <= width)"));
  }
}

/// @brief Throws `mpx::shape_error` naming `where` unless `scores` is a matrix view [rows, sequence]
/// with rows a multiple of sequence, `other` has its shape, and `key_counts` (when given) is [g] with
/// g > 0 dividing the number of matrices rows / sequence.
/// @param where      the calling function, for the message.
/// @param scores     the scores (forward) or their gradient dP (backward).
/// @param other_name what `other` is, for the message.
/// @param other      the tensor that must have the scores' shape.
/// @param key_counts the per-row key counts, or null.
template <class Scores, class Other, class Counts>
void validate_attention_softmax(const char* where, const Scores& scores, const char* other_name,
                                const Other& other, const Counts* key_counts) {
  const Shape& s = scores.shape();
  if (s.rank() < 2 || (s.cols() > 0 && s.rows() % s.cols() != 0)) {
    throw shape_error(detail::concat(
        where, ": scores must be [matrices * sequence, sequence] (rank 2 or more), ", "received ", s));
  }
  require_shape(where, other_name, other.shape(), s);
  if (key_counts != nullptr && s.cols() > 0) {
    const std::int64_t matrices = s.rows() / s.cols();
    const Shape& k = key_counts->shape();
    if (k.rank() != 1 || k[0] == 0 || matrices % k[0] != 0) {
      throw shape_error(detail::concat(where, ": key_counts must be [g] with g dividing the ", matrices,
                                       " score matrices (one count per sequence: g = batch), received ", k));
    }
  }
}

/// @brief Throws `mpx::shape_error` naming `where` unless the operands of a fused bidirectional
/// attention fit: `qkv` [batch, ..., 3C] (a QKV projection's output, Q, K and V its three C-wide
/// column groups, head h at columns h d .. (h + 1) d of each), `out` [batch, ..., C] with qkv's
/// leading dimensions (the heads' outputs merged), `num_heads` dividing C, `stats` (when given)
/// [batch, num_heads, sequence] and `key_counts` (when given) [batch], one length per sequence.
/// @param where      the calling function, for the message.
/// @param qkv        the projection's output.
/// @param out        the merged heads' output (or its gradient).
/// @param stats      the softmax statistics, or null.
/// @param key_counts the sequences' lengths, or null.
/// @param num_heads  the number of heads H.
template <class Tokens, class Out, class Stats, class Counts>
void validate_fused_attention(const char* where, const Tokens& qkv, const Out& out, const Stats* stats,
                              const Counts* key_counts, std::int64_t num_heads) {
  const Shape& t = qkv.shape();
  const Shape& o = out.shape();
  const std::int64_t width = o.rank() >= 3 ? o.cols() : 0;
  bool fits = t.rank() >= 3 && o.rank() == t.rank() && num_heads > 0 && width > 0 && width % num_heads == 0 &&
              t.cols() == 3 * width;
  for (int axis = 0; fits && axis + 1 < t.rank(); ++axis) fits = t[axis] == o[axis];
  if (!fits) {
    throw shape_error(detail::concat(where,
                                     ": expected qkv [batch, ..., 3C] and out [batch, ..., C] with the ",
                                     "same leading dimensions and C divisible by ", num_heads,
                                     " heads, received qkv ", t, " and out ", o));
  }
  if (stats != nullptr) {
    require_shape(where, "softmax statistics", stats->shape(), Shape{t[0], num_heads, attention_sequence(t)});
  }
  if (key_counts != nullptr)
    require_shape(where, "key_counts (sequence lengths)", key_counts->shape(), Shape{t[0]});
}

/// @brief How many consecutive score matrices share one entry of `key_counts` (1 without counts).
/// @param scores     the [matrices * sequence, sequence] view, validated.
/// @param key_counts the counts, or null.
template <class Scores, class Counts>
std::int64_t attention_matrices_per_count(const Scores& scores, const Counts* key_counts) {
  const Shape& s = scores.shape();
  if (key_counts == nullptr || s.cols() == 0) return 1;
  return s.rows() / s.cols() / key_counts->shape()[0];
}

}  // namespace mpx
