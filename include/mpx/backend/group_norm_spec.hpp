// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What group normalisation means on every device (PyTorch's `nn.GroupNorm`, channels last):
/// x [N, ..., C] with C split into G groups of C / G channels; per image n and group g, the mean and
/// biased variance over every position and every channel of the group, then
///   y = (x - mean) / sqrt(var + eps) gamma[c] + beta[c]
/// in the accumulate type, rounded once into the compute type. Backward, with xhat = (x - mean) rstd
/// and h = dy gamma: dx = rstd (h - mean(h) - xhat mean(h xhat)) over the group's elements,
/// dgamma[c] = sum dy xhat, dbeta[c] = sum dy over images and positions. Statistics, gamma and beta
/// are in the accumulate type (fp32) in every precision.

#include <cstdint>

#include "mpx/error.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Throws `mpx::shape_error` (or `mpx::invalid_argument` for `groups`) naming `where` and the
/// values unless x is [N, ..., C] of rank 2 or more with C divisible by `groups`, `y` has x's shape,
/// and `per_channel` is [C].
inline void validate_group_norm(const char* where, const Shape& x, const Shape& y, const Shape& per_channel,
                                std::int64_t groups) {
  if (x.rank() < 2) {
    throw shape_error(detail::concat(where, ": expected an input [batch, ..., channels], received ", x));
  }
  if (groups <= 0 || x.cols() % groups != 0) {
    throw invalid_argument(
        detail::concat(where, ": groups = ", groups, " must divide the channels, ", x.cols()));
  }
  require_shape(where, "output", y, x);
  require_shape(where, "gamma", per_channel, Shape{x.cols()});
}

/// @brief group_norm_forward's checks, the same on every backend: validate_group_norm, then beta
/// like gamma and mean, rstd [N, groups].
template <class Values, class Weights, class Statistics>
void validate_group_norm_forward(const char* where, const Values& x, const Weights& gamma,
                                 const Weights& beta, std::int64_t groups, const Values& y,
                                 const Statistics& mean, const Statistics& rstd) {
  validate_group_norm(where, x.shape(), y.shape(), gamma.shape(), groups);
  require_shape(where, "beta", beta.shape(), gamma.shape());
  require_shape(where, "mean", mean.shape(), Shape{x.shape()[0], groups});
  require_shape(where, "rstd", rstd.shape(), Shape{x.shape()[0], groups});
}

/// @brief group_norm_backward's checks, the same on every backend: validate_group_norm with dy as
/// the output, dx (unless null) like x, dgamma and dbeta like gamma, mean and rstd [N, groups].
template <class Values, class Weights, class Statistics>
void validate_group_norm_backward(const char* where, const Values& x, const Weights& gamma,
                                  std::int64_t groups, const Statistics& mean, const Statistics& rstd,
                                  const Values& dy, const Values* dx, const Statistics& dgamma,
                                  const Statistics& dbeta) {
  validate_group_norm(where, x.shape(), dy.shape(), gamma.shape(), groups);
  if (dx != nullptr) require_shape(where, "dx", dx->shape(), x.shape());
  require_shape(where, "dgamma", dgamma.shape(), gamma.shape());
  require_shape(where, "dbeta", dbeta.shape(), gamma.shape());
  require_shape(where, "mean", mean.shape(), Shape{x.shape()[0], groups});
  require_shape(where, "rstd", rstd.shape(), Shape{x.shape()[0], groups});
}

}  // namespace mpx
