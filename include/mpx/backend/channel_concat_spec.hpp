// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What concatenating along the channels means on every device (channels last, so along the
/// last dimension): a [..., Ca] and b [..., Cb] with the same leading extents give
///   y[..., 0 : Ca] = a,  y[..., Ca : Ca + Cb] = b
/// bit for bit (a copy: nothing is rounded), and `split_channels` is the reverse, y to a and b, the
/// backward of the concatenation (a UNet's skip, `nn::Concat`). Any rank from 2.

#include "mpx/error.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Whether shapes `a` and `b` have one rank, at least 2, and equal extents in every dimension
/// but the last: whether they can be concatenated along their channels.
[[nodiscard]] inline bool concatenable_along_channels(const Shape& a, const Shape& b) {
  return a.rank() >= 2 && a.rank() == b.rank() && a.with_last(0) == b.with_last(0);
}

/// @brief Throws `mpx::shape_error` naming `where` and the shapes unless `a` [..., Ca] and `b`
/// [..., Cb] can be concatenated along their channels and `y` is [..., Ca + Cb].
inline void validate_channel_concat(const char* where, const Shape& a, const Shape& b, const Shape& y) {
  if (!concatenable_along_channels(a, b)) {
    throw shape_error(detail::concat(where, ": cannot concatenate ", a, " and ", b,
                                     " along the channels (the last dimension): every other extent, and "
                                     "the rank (at least 2), must be equal"));
  }
  require_shape(where, "concatenation", y, a.with_last(a.cols() + b.cols()));
}

}  // namespace mpx
