// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What adding a per-sample shift means on every device: x [N, ..., C] (channels last: an
/// image [N, H, W, C], a sequence [N, T, C] or rows [N, C]) and shift [N, C] give
///   y[n, p, c] = x[n, p, c] + shift[n, c]    for every position p of sample n,
/// added in the accumulate type and rounded once (a diffusion UNet adding a projection of its
/// timestep embedding to every pixel, as PyTorch's `h + emb[:, :, None, None]` does in NCHW);
/// and its gradient with respect to the shift,
///   dshift[n, c] = sum over p of dy[n, p, c],
/// summed in fp32 in position order and written (not accumulated), so that every device gives the
/// same bits. The gradient with respect to x is dy itself.

#include <cstdint>

#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief The positions of each sample of `x` [N, ..., C] (the product of its middle extents; 1 for
/// rows [N, C]) after checking that `shift` is [N, C]: throws `mpx::shape_error` naming `where`, the
/// operand and the shapes otherwise.
/// @param where the function named in messages
/// @param x the activations' shape, rank 2 or more
/// @param shift the shift's shape
[[nodiscard]] inline std::int64_t sample_shift_positions(const char* where, const Shape& x,
                                                         const Shape& shift) {
  if (x.rank() < 2) {
    throw shape_error(detail::concat(where, ": expected x [N, ..., C] of rank 2 or more, received ", x));
  }
  require_shape(where, "shift", shift, Shape{x[0], x.cols()});
  return x[0] == 0 || x.cols() == 0 ? 0 : x.numel() / (x[0] * x.cols());
}

}  // namespace mpx
