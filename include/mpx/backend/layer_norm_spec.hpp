// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The LayerNorm kernels' operand checks, shared by the CPU and CUDA backends so that both
/// accept the same shapes and name a mismatch the same way.

#include <cstdint>

#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Throws `mpx::shape_error` naming `where` unless x, y are [rows, features], gamma, beta are
/// [features] and mean, rstd are [rows].
template <class X, class Y, class Weight, class Stats>
void validate_layer_norm_forward(const char* where, const X& x, const Weight& gamma, const Weight& beta,
                                 const Y& y, const Stats& mean, const Stats& rstd) {
  const std::int64_t rows = x.shape().rows();
  const std::int64_t features = x.shape().cols();
  require_shape(where, "gamma", gamma.shape(), Shape{features});
  require_shape(where, "beta", beta.shape(), Shape{features});
  require_shape(where, "output", y.shape(), x.shape());
  require_shape(where, "mean", mean.shape(), Shape{rows});
  require_shape(where, "rstd", rstd.shape(), Shape{rows});
}

/// @brief Throws `mpx::shape_error` naming `where` unless dy, dx have x's shape [rows, features],
/// gamma, dgamma, dbeta are [features] and mean, rstd are [rows].
template <class X, class Weight, class Stats>
void validate_layer_norm_backward(const char* where, const X& x, const Weight& gamma, const Stats& mean,
                                  const Stats& rstd, const X& dy, const X& dx, const Stats& dgamma,
                                  const Stats& dbeta) {
  const std::int64_t rows = x.shape().rows();
  const std::int64_t features = x.shape().cols();
  require_shape(where, "upstream gradient", dy.shape(), x.shape());
  require_shape(where, "input gradient", dx.shape(), x.shape());
  require_shape(where, "dgamma", dgamma.shape(), Shape{features});
  require_shape(where, "dbeta", dbeta.shape(), Shape{features});
  require_shape(where, "gamma", gamma.shape(), Shape{features});
  require_shape(where, "mean", mean.shape(), Shape{rows});
  require_shape(where, "rstd", rstd.shape(), Shape{rows});
}

}  // namespace mpx
