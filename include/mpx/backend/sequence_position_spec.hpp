// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What taking one position of each sequence means on every device: x [N, T, C] gives
///   y[n, c] = x[n, position, c]    (take_position: an encoder's [CLS] token, position 0),
/// and its gradient, written whole (not accumulated),
///   dx[n, t, c] = dy[n, c] at t = position, 0 elsewhere    (take_position_backward).
/// Copies: the same bits on every device.

#include <cstdint>

#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Throws `mpx::shape_error` naming `where` unless `sequences` is [N, T, C] with
/// 0 <= position < T and `tokens` is [N, C].
/// @param where     the function named in messages
/// @param sequences the sequences' shape (x, or dx)
/// @param position  the position taken
/// @param tokens    the taken tokens' shape (y, or dy)
inline void validate_take_position(const char* where, const Shape& sequences, std::int64_t position,
                                   const Shape& tokens) {
  if (sequences.rank() != 3 || position < 0 || position >= sequences[1]) {
    throw shape_error(detail::concat(where, ": expected sequences [N, T, C] with position ", position,
                                     " in [0, T), received ", sequences));
  }
  require_shape(where, "tokens", tokens, Shape{sequences[0], sequences[2]});
}

}  // namespace mpx
