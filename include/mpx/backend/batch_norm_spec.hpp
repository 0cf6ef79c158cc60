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

// ---- Each operation's checks, the same on every backend; `where` names the backend's function. ----

/// @brief batch_norm_forward_training: y like x; gamma, beta, mean, var, rstd [C].
template <class Values, class Weights, class Statistics>
void validate_batch_norm_forward_training(const char* where, const Values& x, const Weights& gamma,
                                          const Weights& beta, const Values& y, const Statistics& mean,
                                          const Statistics& var, const Statistics& rstd) {
  validate_batch_norm(where, x.shape(), {{"y", y.shape()}},
                      {{"gamma", gamma.shape()},
                       {"beta", beta.shape()},
                       {"mean", mean.shape()},
                       {"var", var.shape()},
                       {"rstd", rstd.shape()}});
}

/// @brief batch_norm_forward_inference: y like x; gamma, beta, running_mean, running_var [C].
template <class Values, class Weights, class Statistics>
void validate_batch_norm_forward_inference(const char* where, const Values& x, const Weights& gamma,
                                           const Weights& beta, const Statistics& running_mean,
                                           const Statistics& running_var, const Values& y) {
  validate_batch_norm(where, x.shape(), {{"y", y.shape()}},
                      {{"gamma", gamma.shape()},
                       {"beta", beta.shape()},
                       {"running_mean", running_mean.shape()},
                       {"running_var", running_var.shape()}});
}

/// @brief batch_norm_update_running_stats: var, running_mean and running_var shaped as mean.
template <class Statistics>
void validate_batch_norm_running_stats(const char* where, const Statistics& mean, const Statistics& var,
                                       const Statistics& running_mean, const Statistics& running_var) {
  require_shape(where, "var", var.shape(), mean.shape());
  require_shape(where, "running_mean", running_mean.shape(), mean.shape());
  require_shape(where, "running_var", running_var.shape(), mean.shape());
}

/// @brief batch_norm_backward: dy (and dx, unless null) like x; gamma, mean, rstd, dgamma, dbeta [C].
template <class Values, class Weights, class Statistics>
void validate_batch_norm_backward(const char* where, const Values& x, const Weights& gamma,
                                  const Statistics& mean, const Statistics& rstd, const Values& dy,
                                  const Values* dx, const Statistics& dgamma, const Statistics& dbeta) {
  validate_batch_norm(where, x.shape(), {{"dy", dy.shape()}, {"dx", dx != nullptr ? dx->shape() : x.shape()}},
                      {{"gamma", gamma.shape()},
                       {"mean", mean.shape()},
                       {"rstd", rstd.shape()},
                       {"dgamma", dgamma.shape()},
                       {"dbeta", dbeta.shape()}});
}

/// @brief batch_norm_channel_sums: sums [C].
template <class Values, class Statistics>
void validate_batch_norm_channel_sums(const char* where, const Values& x, const Statistics& sums) {
  validate_batch_norm(where, x.shape(), {}, {{"sums", sums.shape()}});
}

/// @brief batch_norm_squared_deviations: sums, mean, squares [C].
template <class Values, class Statistics>
void validate_batch_norm_squared_deviations(const char* where, const Values& x, const Statistics& sums,
                                            const Statistics& mean, const Statistics& squares) {
  validate_batch_norm(where, x.shape(), {},
                      {{"sums", sums.shape()}, {"mean", mean.shape()}, {"squares", squares.shape()}});
}

/// @brief batch_norm_normalize: y like x; gamma, beta, mean, squares, var, rstd [C].
template <class Values, class Weights, class Statistics>
void validate_batch_norm_normalize(const char* where, const Values& x, const Weights& gamma,
                                   const Weights& beta, const Statistics& mean, const Statistics& squares,
                                   const Values& y, const Statistics& var, const Statistics& rstd) {
  validate_batch_norm(where, x.shape(), {{"y", y.shape()}},
                      {{"gamma", gamma.shape()},
                       {"beta", beta.shape()},
                       {"mean", mean.shape()},
                       {"squares", squares.shape()},
                       {"var", var.shape()},
                       {"rstd", rstd.shape()}});
}

/// @brief batch_norm_backward_sums: dy like x; mean, rstd, dgamma, dbeta [C]; sums [2 C].
template <class Values, class Statistics>
void validate_batch_norm_backward_sums(const char* where, const Values& x, const Statistics& mean,
                                       const Statistics& rstd, const Values& dy, const Statistics& sums,
                                       const Statistics& dgamma, const Statistics& dbeta) {
  validate_batch_norm(
      where, x.shape(), {{"dy", dy.shape()}},
      {{"mean", mean.shape()}, {"rstd", rstd.shape()}, {"dgamma", dgamma.shape()}, {"dbeta", dbeta.shape()}});
  require_shape(where, "sums", sums.shape(), Shape{2 * x.shape().cols()});
}

/// @brief batch_norm_backward_input: dy and dx like x; gamma, mean, rstd [C]; sums [2 C].
template <class Values, class Weights, class Statistics>
void validate_batch_norm_backward_input(const char* where, const Values& x, const Weights& gamma,
                                        const Statistics& mean, const Statistics& rstd, const Values& dy,
                                        const Statistics& sums, const Values& dx) {
  validate_batch_norm(where, x.shape(), {{"dy", dy.shape()}, {"dx", dx.shape()}},
                      {{"gamma", gamma.shape()}, {"mean", mean.shape()}, {"rstd", rstd.shape()}});
  require_shape(where, "sums", sums.shape(), Shape{2 * x.shape().cols()});
}

}  // namespace mpx
