// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What gathering rows means on every device: over x's matrix view [R, C] (the tokens of a
/// batch of sequences [N, T, C] are its N T rows) and rows [M] of distinct indices in [0, R),
///   y[m, :] = x[rows[m], :]    (gather_rows: an encoder's [CLS] tokens, or its masked tokens),
/// and its gradient, written whole (not accumulated),
///   dx[rows[m], :] = dy[m, :], every other row of dx 0    (gather_rows_backward).
/// Copies: the same bits on every device. The CPU checks every index (an `mpx::invalid_argument`
/// naming it); a GPU kernel cannot throw, so callers check the indices on the host before they copy
/// them to the device (nn::GatherTokens, nn::FirstToken).

#include <cstdint>

#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Throws `mpx::shape_error` naming `where` unless `rows` is [M], `matrix` has rank 2 or more
/// and `gathered` is [M, C] with C = matrix's last extent.
/// @param where    the function named in messages
/// @param matrix   the shape of x (or dx), read as [R, C]
/// @param rows     the shape of the row indices
/// @param gathered the shape of y (or dy)
inline void validate_gather_rows(const char* where, const Shape& matrix, const Shape& rows,
                                 const Shape& gathered) {
  if (matrix.rank() < 2 || rows.rank() != 1) {
    throw shape_error(
        detail::concat(where,
                       ": expected x of rank 2 or more (read as [rows, C]) and row indices [M], "
                       "received x ",
                       matrix, " and rows ", rows));
  }
  require_shape(where, "gathered rows", gathered, Shape{rows[0], matrix.cols()});
}

/// @brief Throws `mpx::invalid_argument` naming `where`, the entry and its value unless every one of
/// the `count` indices at `rows` lies in [0, `limit`).
/// @param where the function named in messages
/// @param rows  the indices (host memory)
/// @param count how many
/// @param limit the number of rows of the matrix they index
inline void check_row_indices(const char* where, const std::int32_t* rows, std::int64_t count,
                              std::int64_t limit) {
  for (std::int64_t m = 0; m < count; ++m) {
    if (rows[m] < 0 || rows[m] >= limit) {
      throw invalid_argument(detail::concat(where, ": row index ", m, " is ", rows[m], ", outside [0, ",
                                            limit, ") of the matrix"));
    }
  }
}

}  // namespace mpx
