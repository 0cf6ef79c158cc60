// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The token and positional embedding kernels' operand checks and shapes, shared by the CPU
/// and CUDA backends so that both accept the same shapes and name a mismatch the same way, and the
/// host-side check of token ids.

#include <cstdint>
#include <string>

#include "mpx/error.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief The shape of the embeddings of `ids`: `ids`' shape with `dim` appended ([batch, sequence]
/// -> [batch, sequence, dim]). Throws `mpx::shape_error` naming `where` when `ids` has rank 0 or
/// rank 4 (the output would exceed a tensor's rank of 4).
inline Shape embedding_output_shape(const char* where, const Shape& ids, std::int64_t dim) {
  switch (ids.rank()) {
    case 1: return Shape{ids[0], dim};
    case 2: return Shape{ids[0], ids[1], dim};
    case 3: return Shape{ids[0], ids[1], ids[2], dim};
    default: break;
  }
  throw shape_error(mpx::detail::concat(
      where, ": token ids must have rank 1 to 3 ([batch, sequence] is usual), got ", ids));
}

/// @brief "[1, 4]": the multi-index of element `flat` of a row-major tensor of shape `shape`.
inline std::string index_in(const Shape& shape, std::int64_t flat) {
  std::int64_t index[Shape::max_rank] = {};
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  std::string text = "[";
  for (int d = 0; d < shape.rank(); ++d) {
    if (d > 0) text += ", ";
    text += std::to_string(index[d]);
  }
  return text + "]";
}

/// @brief Throws `mpx::invalid_argument` naming `where`, the first id outside [0, num_embeddings)
/// and its position in `ids` (multi-index and flat index). Host ids only (a GPU kernel cannot
/// throw; the CUDA backend writes NaN rows instead).
inline void check_token_ids(const char* where, const Tensor<std::int32_t, Host>& ids,
                            std::int64_t num_embeddings) {
  const std::int64_t count = ids.numel();
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int32_t id = ids[i];
    if (id < 0 || id >= num_embeddings) {
      throw invalid_argument(mpx::detail::concat(
          where, ": token id ", id, " at position ", index_in(ids.shape(), i), " (flat index ", i,
          ") of ids of shape ", ids.shape(), " is outside [0, ", num_embeddings, ")"));
    }
  }
}

/// @brief Throws `mpx::shape_error` naming `where` unless weight is [num_embeddings, dim] and `out`
/// has ids' shape with dim appended.
template <class Ids, class Weight, class Out>
void validate_embedding_forward(const char* where, const Ids& ids, const Weight& weight, const Out& out) {
  if (weight.rank() != 2) {
    throw shape_error(
        mpx::detail::concat(where, ": weight must be [num_embeddings, embedding_dim], got ", weight.shape()));
  }
  require_shape(where, "output", out.shape(), embedding_output_shape(where, ids.shape(), weight.shape()[1]));
}

/// @brief Throws `mpx::shape_error` naming `where` unless dweight is [num_embeddings, dim] and dy has
/// ids' shape with dim appended.
template <class Ids, class Grad, class WeightGrad>
void validate_embedding_backward(const char* where, const Ids& ids, const Grad& dy,
                                 const WeightGrad& dweight) {
  if (dweight.rank() != 2) {
    throw shape_error(mpx::detail::concat(
        where, ": weight gradient must be [num_embeddings, embedding_dim], got ", dweight.shape()));
  }
  require_shape(where, "upstream gradient", dy.shape(),
                embedding_output_shape(where, ids.shape(), dweight.shape()[1]));
}

/// @brief The sequence length of `x` = [..., sequence, dim] (rank 2 or more); throws
/// `mpx::shape_error` naming `where` unless weight is [max_positions, dim] with sequence <=
/// max_positions.
template <class X, class Weight>
std::int64_t validate_positional_embedding(const char* where, const X& x, const Weight& weight) {
  if (weight.rank() != 2) {
    throw shape_error(
        mpx::detail::concat(where, ": weight must be [max_positions, embedding_dim], got ", weight.shape()));
  }
  const std::int64_t max_positions = weight.shape()[0];
  const std::int64_t dim = weight.shape()[1];
  if (x.rank() < 2 || x.shape().cols() != dim) {
    throw shape_error(mpx::detail::concat(where, ": expected [batch, sequence, ", dim, "] (or [sequence, ",
                                          dim, "]), received ", x.shape()));
  }
  const std::int64_t sequence = x.shape()[-2];
  if (sequence > max_positions) {
    throw shape_error(mpx::detail::concat(where, ": sequence length ", sequence, " (input ", x.shape(),
                                          ") exceeds max_positions = ", max_positions));
  }
  return sequence;
}

}  // namespace mpx
