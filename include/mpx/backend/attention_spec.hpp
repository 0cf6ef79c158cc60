// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The causal-attention kernels' contracts, shared by the CPU and CUDA backends: the head
/// permutes' shapes, the masked softmax's mask and its operand checks, so that both backends accept
/// the same shapes, mask the same entries and name a mismatch the same way.
///
/// Shapes: tokens are [batch, sequence, width] (a QKV projection's output, width 3C, or an attention
/// output, width C); heads are [batch, heads, sequence, head_dim]. Scores and probabilities are the
/// matrix view [batch * heads * sequence, sequence]: row r is the query at position r % sequence, and
/// its allowed keys are
///   j <= r % sequence  (causal)   and, when a key-count tensor is given,   j < key_counts[r].
/// A row with no allowed key (key_counts[r] <= 0) has probabilities 0 and gradient 0, never NaN.

#include <cstdint>

#include "mpx/config.hpp"
#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief How many keys (the first ones) row `row` of a causal score matrix with `sequence` columns
/// may attend to: `row % sequence + 1`, capped by `key_count` (callers pass `sequence` when no key
/// counts are given); 0 when `key_count` <= 0.
MPX_HOST_DEVICE inline std::int64_t attention_allowed_keys(std::int64_t row, std::int64_t sequence,
                                                           std::int64_t key_count) {
  const std::int64_t causal = row % sequence + 1;
  const std::int64_t capped = key_count < causal ? key_count : causal;
  return capped < 0 ? 0 : capped;
}

/// @brief Throws `mpx::shape_error` naming `where` unless `tokens` is [batch, sequence, width],
/// `heads` is [batch, heads, sequence, head_dim] and the heads' columns [column, column + heads *
/// head_dim) lie inside the width.
template <class Tokens, class Heads>
void validate_attention_heads(const char* where, const Tokens& tokens, std::int64_t column,
                              const Heads& heads) {
  if (tokens.rank() != 3 || heads.rank() != 4) {
    throw shape_error(detail::concat(
        where, ": expected tokens [batch, sequence, width] and heads [batch, heads, ",
        "sequence, head_dim], received tokens ", tokens.shape(), " and heads ", heads.shape()));
  }
  const Shape& t = tokens.shape();
  const Shape& h = heads.shape();
  if (t[0] != h[0] || t[1] != h[2] || column < 0 || column + h[1] * h[3] > t[2]) {
    throw shape_error(
        detail::concat(where, ": heads ", h, " do not fit tokens ", t, " at column ", column,
                       " (need equal batch and sequence, and column + heads * head_dim <= width)"));
  }
}

/// @brief Throws `mpx::shape_error` naming `where` unless `scores` is a matrix view [rows, sequence]
/// with rows a multiple of sequence, `other` has its shape, and `key_counts` (when given) is [rows].
template <class Scores, class Other, class Counts>
void validate_causal_softmax(const char* where, const Scores& scores, const char* other_name,
                             const Other& other, const Counts* key_counts) {
  const Shape& s = scores.shape();
  if (s.rank() < 2 || (s.cols() > 0 && s.rows() % s.cols() != 0)) {
    throw shape_error(detail::concat(
        where, ": scores must be [matrices * sequence, sequence] (rank 2 or more), ", "received ", s));
  }
  require_shape(where, other_name, other.shape(), s);
  if (key_counts != nullptr) require_shape(where, "key_counts", key_counts->shape(), Shape{s.rows()});
}

}  // namespace mpx
