// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What batch normalisation means on every device (PyTorch's `nn.BatchNorm2d`, channels
/// last): x [..., C], usually [N, H, W, C], normalised per channel over every other dimension.
///   training   mean, var = the batch's mean and biased variance per channel (accumulate type);
///              y = (x - mean) / sqrt(var + eps) gamma + beta, rounded once into the compute type;
///              running_mean = (1 - momentum) running_mean + momentum mean,
///              running_var  = (1 - momentum) running_var + momentum var n / (n - 1)  (unbiased)
///   evaluation y = (x - running_mean) / sqrt(running_var + eps) gamma + beta
///   backward   (training) dbeta = sum dy, dgamma = sum dy xhat,
///              dx = gamma rstd (dy - mean(dy) - xhat mean(dy xhat)), xhat = (x - mean) rstd
/// gamma, beta, the statistics and the running statistics are in the accumulate type (fp32) in
/// every precision, as autocast keeps them.

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "mpx/error.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Throws `mpx::shape_error` naming `where` and the tensor unless x has rank 2 or more, `same`
/// tensors have x's shape, and each `per_channel` tensor is [C] (C = x's last extent).
inline void validate_batch_norm(const char* where, const Shape& x,
                                std::initializer_list<std::pair<const char*, Shape>> same,
                                std::initializer_list<std::pair<const char*, Shape>> per_channel) {
  if (x.rank() < 2) {
    throw shape_error(
        detail::concat(where, ": expected an input [..., channels] of rank 2 or more, received ", x));
  }
  for (const auto& [name, shape] : same) require_shape(where, name, shape, x);
  for (const auto& [name, shape] : per_channel) require_shape(where, name, shape, Shape{x.cols()});
}

}  // namespace mpx
