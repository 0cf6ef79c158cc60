// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief LayerNorm over the last dimension on the CPU: statistics and math in fp32 (fp64 for
/// double), input and output in the compute type, parameters read in their own (master) type.

#include <cmath>
#include <cstdint>
#include <vector>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
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
  const std::vector<Acc> g = detail::widened<Acc>(gamma);
  const std::vector<Acc> b = detail::widened<Acc>(beta);
  // Rows run in parallel; within a row the sums run in feature order, as in one thread.
  parallel_for_chunks(rows, rows_per_chunk(features), [&](std::int64_t first, std::int64_t end) {
    std::vector<Acc> values(static_cast<std::size_t>(features));
    Acc* v = values.data();
    for (std::int64_t r = first; r < end; ++r) {
      detail::widen_range<tag_of_t<T>>(x.data() + r * features, v, 0, features);
      const Acc mu =
          detail::lane_sum(features, [&](std::int64_t f) { return v[f]; }) / static_cast<Acc>(features);
      // Two-pass variance: no cancellation for rows with a large mean.
      const Acc squares = detail::lane_sum(features, [&](std::int64_t f) {
        const Acc d = v[f] - mu;
        return d * d;
      });
      const Acc inv_std =
          static_cast<Acc>(1) / std::sqrt(squares / static_cast<Acc>(features) + static_cast<Acc>(epsilon));
      mean[r] = mu;
      rstd[r] = inv_std;
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t f = 0; f < features; ++f) v[f] = (v[f] - mu) * inv_std * g[f] + b[f];
      detail::round_range(v, y.data() + r * features, 0, features);
    }
  });
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
  const std::vector<Acc> gamma_values = detail::widened<Acc>(gamma);
  const Acc* w = gamma_values.data();
  // x's and dy's row, widened, and x-hat.
  struct Row {
    std::vector<Acc> x, g, xhat;
    explicit Row(std::int64_t features)
        : x(static_cast<std::size_t>(features)), g(x.size()), xhat(x.size()) {}
    void load(const Tensor<T, Host>& in, const Tensor<T, Host>& grad, std::int64_t r, Acc mu, Acc inv_std) {
      const auto n = static_cast<std::int64_t>(x.size());
      detail::widen_range<tag_of_t<T>>(in.data() + r * n, x.data(), 0, n);
      detail::widen_range<tag_of_t<T>>(grad.data() + r * n, g.data(), 0, n);
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t f = 0; f < n; ++f) xhat[f] = (x[f] - mu) * inv_std;
    }
  };
  // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * gamma: rows in
  // parallel, each row's sums in feature order.
  parallel_for_chunks(rows, rows_per_chunk(features), [&](std::int64_t first, std::int64_t end) {
    Row row(features);
    Acc* v = row.x.data();  // x is not needed once x-hat is known: dx is built there
    for (std::int64_t r = first; r < end; ++r) {
      const Acc inv_std = rstd[r];
      row.load(x, dy, r, mean[r], inv_std);
      const Acc mean_dxhat = detail::lane_sum(features, [&](std::int64_t f) { return row.g[f] * w[f]; }) /
                             static_cast<Acc>(features);
      const Acc mean_dxhat_xhat =
          detail::lane_sum(features, [&](std::int64_t f) { return row.g[f] * w[f] * row.xhat[f]; }) /
          static_cast<Acc>(features);
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t f = 0; f < features; ++f) {
        v[f] = inv_std * (row.g[f] * w[f] - mean_dxhat - row.xhat[f] * mean_dxhat_xhat);
      }
      detail::round_range(v, dx.data() + r * features, 0, features);
    }
  });
  // dgamma += (sum over rows of dy * xhat), dbeta += (sum of dy): each feature's sums row by row, so
  // their order does not depend on the number of threads (the threads take blocks of features; a
  // row's stretch of a block is vector code), then added to the gradients once, as the GPU does, so
  // that micro-batches accumulate exactly as the sum of their own gradients.
  constexpr std::int64_t features_per_chunk = 64;
  parallel_for_chunks(features, features_per_chunk, [&](std::int64_t begin, std::int64_t end) {
    const std::int64_t length = end - begin;
    Acc x_block[features_per_chunk], g_block[features_per_chunk];
    Acc dg[features_per_chunk] = {}, db[features_per_chunk] = {};
    for (std::int64_t r = 0; r < rows; ++r) {
      detail::widen_range<tag_of_t<T>>(x.data() + r * features + begin, x_block, 0, length);
      detail::widen_range<tag_of_t<T>>(dy.data() + r * features + begin, g_block, 0, length);
      const Acc mu = mean[r], inv_std = rstd[r];
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t f = 0; f < length; ++f) {
        dg[f] += g_block[f] * ((x_block[f] - mu) * inv_std);
        db[f] += g_block[f];
      }
    }
    for (std::int64_t f = 0; f < length; ++f) {
      dgamma.data()[begin + f] += dg[f];
      dbeta.data()[begin + f] += db[f];
    }
  });
}

}  // namespace mpx::cpu
