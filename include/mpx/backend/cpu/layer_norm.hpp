// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief LayerNorm over the last dimension on the CPU: statistics and math in fp32 (fp64 for
/// double), input and output in the compute type, parameters read in their own (master) type.

#include <cmath>
#include <cstdint>

#include "mpx/backend/layer_norm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief y = (x - mean) * rstd * gamma + beta per row; saves mean and rstd for backward.
/// @param x     [rows, features] in the compute type.
/// @param gamma, beta [features], any element type (the master weights).
/// @param epsilon added to the variance.
/// @param y     [rows, features] in the compute type, written.
/// @param mean, rstd  [rows] in the accumulate type, written.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void layer_norm_forward(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma,
                        const Tensor<Weight, Host>& beta, float epsilon, Tensor<T, Host>& y,
                        Tensor<Acc, Host>& mean, Tensor<Acc, Host>& rstd) {
  constexpr const char* where = "mpx::cpu::layer_norm_forward";
  const std::int64_t rows = x.shape().rows();
  const std::int64_t features = x.shape().cols();
  validate_layer_norm_forward(where, x, gamma, beta, y, mean, rstd);
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* in = x.data() + r * features;
    Acc sum = 0;
    for (std::int64_t f = 0; f < features; ++f) sum += static_cast<Acc>(in[f]);
    const Acc mu = sum / static_cast<Acc>(features);
    Acc squares = 0;  // two-pass variance: no cancellation for rows with a large mean
    for (std::int64_t f = 0; f < features; ++f) {
      const Acc d = static_cast<Acc>(in[f]) - mu;
      squares += d * d;
    }
    const Acc inv_std =
        static_cast<Acc>(1) / std::sqrt(squares / static_cast<Acc>(features) + static_cast<Acc>(epsilon));
    mean[r] = mu;
    rstd[r] = inv_std;
    T* out = y.data() + r * features;
    for (std::int64_t f = 0; f < features; ++f) {
      const Acc normalized = (static_cast<Acc>(in[f]) - mu) * inv_std;
      out[f] = round_to<tag_of_t<T>>(normalized * static_cast<Acc>(gamma[f]) + static_cast<Acc>(beta[f]));
    }
  }
}

/// @brief dx from dy, and dgamma, dbeta accumulated (+=) so that micro-batches add up.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void layer_norm_backward(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma,
                         const Tensor<Acc, Host>& mean, const Tensor<Acc, Host>& rstd,
                         const Tensor<T, Host>& dy, Tensor<T, Host>& dx, Tensor<Acc, Host>& dgamma,
                         Tensor<Acc, Host>& dbeta) {
  constexpr const char* where = "mpx::cpu::layer_norm_backward";
  const std::int64_t rows = x.shape().rows();
  const std::int64_t features = x.shape().cols();
  validate_layer_norm_backward(where, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* in = x.data() + r * features;
    const T* g = dy.data() + r * features;
    const Acc mu = mean[r];
    const Acc inv_std = rstd[r];
    // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * gamma.
    Acc mean_dxhat = 0;
    Acc mean_dxhat_xhat = 0;
    for (std::int64_t f = 0; f < features; ++f) {
      const Acc xhat = (static_cast<Acc>(in[f]) - mu) * inv_std;
      const Acc dxhat = static_cast<Acc>(g[f]) * static_cast<Acc>(gamma[f]);
      mean_dxhat += dxhat;
      mean_dxhat_xhat += dxhat * xhat;
      dgamma[f] += static_cast<Acc>(g[f]) * xhat;
      dbeta[f] += static_cast<Acc>(g[f]);
    }
    mean_dxhat /= static_cast<Acc>(features);
    mean_dxhat_xhat /= static_cast<Acc>(features);
    T* out = dx.data() + r * features;
    for (std::int64_t f = 0; f < features; ++f) {
      const Acc xhat = (static_cast<Acc>(in[f]) - mu) * inv_std;
      const Acc dxhat = static_cast<Acc>(g[f]) * static_cast<Acc>(gamma[f]);
      out[f] = round_to<tag_of_t<T>>(inv_std * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat));
    }
  }
}

}  // namespace mpx::cpu
