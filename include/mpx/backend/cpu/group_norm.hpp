// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Group normalisation on the CPU (backend/group_norm_spec.hpp): images in parallel, each
/// image's group statistics in a fixed order, gamma's and beta's gradients summed per image and then
/// over the images in order, so the results do not depend on the number of threads.

#include <cmath>
#include <cstdint>
#include <vector>

#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/group_norm_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief y = (x - mean) rstd gamma + beta per image and group; writes mean and rstd [N, groups]
/// (accumulate type) for backward. Two passes for the variance: no cancellation for a large mean.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void group_norm_forward(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma,
                        const Tensor<Weight, Host>& beta, std::int64_t groups, float epsilon,
                        Tensor<T, Host>& y, Tensor<Acc, Host>& mean, Tensor<Acc, Host>& rstd) {
  constexpr const char* where = "mpx::cpu::group_norm_forward";
  validate_group_norm_forward(where, x, gamma, beta, groups, y, mean, rstd);
  const std::int64_t n = x.shape()[0], c = x.shape().cols(), pixels = x.numel() / (n * c), cg = c / groups;
  const Acc count = static_cast<Acc>(pixels * cg);
  parallel_for_chunks(n, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<Acc> sum(static_cast<std::size_t>(groups)), squares(sum.size());
    for (std::int64_t image = begin; image < end; ++image) {
      const T* in = x.data() + image * pixels * c;
      std::fill(sum.begin(), sum.end(), Acc(0));
      for (std::int64_t p = 0; p < pixels; ++p)
        for (std::int64_t k = 0; k < c; ++k)
          sum[static_cast<std::size_t>(k / cg)] += static_cast<Acc>(in[p * c + k]);
      for (std::int64_t g = 0; g < groups; ++g)
        mean[image * groups + g] = sum[static_cast<std::size_t>(g)] / count;
      const Acc* mu = mean.data() + image * groups;
      std::fill(squares.begin(), squares.end(), Acc(0));
      for (std::int64_t p = 0; p < pixels; ++p)
        for (std::int64_t k = 0; k < c; ++k) {
          const Acc d = static_cast<Acc>(in[p * c + k]) - mu[k / cg];
          squares[static_cast<std::size_t>(k / cg)] += d * d;
        }
      for (std::int64_t g = 0; g < groups; ++g) {
        rstd[image * groups + g] =
            Acc(1) / std::sqrt(squares[static_cast<std::size_t>(g)] / count + static_cast<Acc>(epsilon));
      }
      const Acc* inv = rstd.data() + image * groups;
      T* out = y.data() + image * pixels * c;
      for (std::int64_t p = 0; p < pixels; ++p)
        for (std::int64_t k = 0; k < c; ++k) {
          const Acc xhat = (static_cast<Acc>(in[p * c + k]) - mu[k / cg]) * inv[k / cg];
          out[p * c + k] =
              round_to<tag_of_t<T>>(xhat * static_cast<Acc>(gamma[k]) + static_cast<Acc>(beta[k]));
        }
    }
  });
}

/// @brief dgamma, dbeta (written when their `overwrite` is set, else added) and dx (when not null)
/// from dy, with the forward's mean and rstd.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void group_norm_backward(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma, std::int64_t groups,
                         const Tensor<Acc, Host>& mean, const Tensor<Acc, Host>& rstd,
                         const Tensor<T, Host>& dy, Tensor<T, Host>* dx, Tensor<Acc, Host>& dgamma,
                         bool overwrite_dgamma, Tensor<Acc, Host>& dbeta, bool overwrite_dbeta) {
  constexpr const char* where = "mpx::cpu::group_norm_backward";
  validate_group_norm_backward(where, x, gamma, groups, mean, rstd, dy, dx, dgamma, dbeta);
  const std::int64_t n = x.shape()[0], c = x.shape().cols(), pixels = x.numel() / (n * c), cg = c / groups;
  const Acc count = static_cast<Acc>(pixels * cg);
  // Per image: [dgamma partial | dbeta partial], added over the images in order afterwards.
  std::vector<Acc> partial(static_cast<std::size_t>(n * 2 * c), Acc(0));
  parallel_for_chunks(n, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<Acc> sum_h(static_cast<std::size_t>(groups)), sum_hx(sum_h.size());
    for (std::int64_t image = begin; image < end; ++image) {
      const T* xi = x.data() + image * pixels * c;
      const T* gi = dy.data() + image * pixels * c;
      const Acc* mu = mean.data() + image * groups;
      const Acc* inv = rstd.data() + image * groups;
      Acc* dg = partial.data() + image * 2 * c;
      Acc* db = dg + c;
      std::fill(sum_h.begin(), sum_h.end(), Acc(0));
      std::fill(sum_hx.begin(), sum_hx.end(), Acc(0));
      for (std::int64_t p = 0; p < pixels; ++p)
        for (std::int64_t k = 0; k < c; ++k) {
          const Acc g = static_cast<Acc>(gi[p * c + k]);
          const Acc xhat = (static_cast<Acc>(xi[p * c + k]) - mu[k / cg]) * inv[k / cg];
          const Acc h = g * static_cast<Acc>(gamma[k]);
          sum_h[static_cast<std::size_t>(k / cg)] += h;
          sum_hx[static_cast<std::size_t>(k / cg)] += h * xhat;
          dg[k] += g * xhat;
          db[k] += g;
        }
      if (dx == nullptr) continue;
      T* out = dx->data() + image * pixels * c;
      for (std::int64_t p = 0; p < pixels; ++p)
        for (std::int64_t k = 0; k < c; ++k) {
          const auto group = static_cast<std::size_t>(k / cg);
          const Acc xhat = (static_cast<Acc>(xi[p * c + k]) - mu[k / cg]) * inv[k / cg];
          const Acc h = static_cast<Acc>(gi[p * c + k]) * static_cast<Acc>(gamma[k]);
          out[p * c + k] =
              round_to<tag_of_t<T>>(inv[k / cg] * (h - sum_h[group] / count - xhat * sum_hx[group] / count));
        }
    }
  });
  for (std::int64_t k = 0; k < c; ++k) {
    Acc dgk = 0, dbk = 0;
    for (std::int64_t image = 0; image < n; ++image) {
      dgk += partial[static_cast<std::size_t>(image * 2 * c + k)];
      dbk += partial[static_cast<std::size_t>(image * 2 * c + c + k)];
    }
    dgamma[k] = overwrite_dgamma ? dgk : dgamma[k] + dgk;
    dbeta[k] = overwrite_dbeta ? dbk : dbeta[k] + dbk;
  }
}

}  // namespace mpx::cpu
