// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Group normalisation on the CPU (backend/group_norm_spec.hpp): images in parallel, each
/// image's group statistics in a fixed order, gamma's and beta's gradients summed per image and then
/// over the images in order, so the results do not depend on the number of threads.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/group_norm_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

namespace detail {
// One image's pixels, row by row, as the accumulate type: `row(p)` is pixel p's c channels, widened
// into a buffer where T is not Acc, so that the loops over the channels vectorise.
template <class T, class Acc>
class PixelRows {
 public:
  PixelRows(const T* image, std::int64_t channels) : image_(image), channels_(channels) {
    if constexpr (!std::is_same_v<T, Acc>) buffer_.resize(static_cast<std::size_t>(channels));
  }
  const Acc* row(std::int64_t p) {
    if constexpr (std::is_same_v<T, Acc>) {
      return image_ + p * channels_;
    } else {
      widen_range<tag_of_t<T>>(image_ + p * channels_, buffer_.data(), 0, channels_);
      return buffer_.data();
    }
  }

 private:
  const T* image_;
  std::int64_t channels_;
  std::vector<Acc> buffer_;
};

// group[g] = the sum of per_channel[k] over the group's channels, in channel order.
template <class Acc>
void group_sums(const std::vector<Acc>& per_channel, std::int64_t groups, std::vector<Acc>& group) {
  const std::int64_t cg = static_cast<std::int64_t>(per_channel.size()) / groups;
  for (std::int64_t g = 0; g < groups; ++g) {
    Acc sum = 0;
    for (std::int64_t k = g * cg; k < (g + 1) * cg; ++k) sum += per_channel[static_cast<std::size_t>(k)];
    group[static_cast<std::size_t>(g)] = sum;
  }
}

// out[k] = of_group[k / cg] for every channel k: a group's value beside each of its channels.
template <class Acc>
void per_channel_of(const Acc* of_group, std::int64_t cg, std::vector<Acc>& out) {
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = of_group[static_cast<std::int64_t>(k) / cg];
}
}  // namespace detail

/// @brief y = (x - mean) rstd gamma + beta per image and group; writes mean and rstd [N, groups]
/// (accumulate type) for backward. Two passes for the variance: no cancellation for a large mean.
/// Each statistic sums each channel over the image's pixels in order (one vector across the
/// channels), then the group's channels in order.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void group_norm_forward(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma,
                        const Tensor<Weight, Host>& beta, std::int64_t groups, float epsilon,
                        Tensor<T, Host>& y, Tensor<Acc, Host>& mean, Tensor<Acc, Host>& rstd) {
  constexpr const char* where = "mpx::cpu::group_norm_forward";
  validate_group_norm_forward(where, x, gamma, beta, groups, y, mean, rstd);
  const std::int64_t n = x.shape()[0], c = x.shape().cols(), pixels = x.numel() / (n * c), cg = c / groups;
  const Acc count = static_cast<Acc>(pixels * cg);
  const std::vector<Acc> gamma_acc = detail::widened<Acc>(gamma), beta_acc = detail::widened<Acc>(beta);
  parallel_for_chunks(n, 1, [&](std::int64_t begin, std::int64_t end) {
    const auto size = static_cast<std::size_t>(c);
    std::vector<Acc> channel(size), mu(size), inv(size), group(static_cast<std::size_t>(groups)),
        out_row(size);
    for (std::int64_t image = begin; image < end; ++image) {
      detail::PixelRows<T, Acc> rows(x.data() + image * pixels * c, c);
      std::fill(channel.begin(), channel.end(), Acc(0));
      for (std::int64_t p = 0; p < pixels; ++p) {
        const Acc* in = rows.row(p);
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t k = 0; k < c; ++k) channel[static_cast<std::size_t>(k)] += in[k];
      }
      detail::group_sums(channel, groups, group);
      for (std::int64_t g = 0; g < groups; ++g)
        mean[image * groups + g] = group[static_cast<std::size_t>(g)] / count;
      detail::per_channel_of(mean.data() + image * groups, cg, mu);
      std::fill(channel.begin(), channel.end(), Acc(0));
      for (std::int64_t p = 0; p < pixels; ++p) {
        const Acc* in = rows.row(p);
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t k = 0; k < c; ++k) {
          const Acc d = in[k] - mu[static_cast<std::size_t>(k)];
          channel[static_cast<std::size_t>(k)] += d * d;
        }
      }
      detail::group_sums(channel, groups, group);
      for (std::int64_t g = 0; g < groups; ++g) {
        rstd[image * groups + g] =
            Acc(1) / std::sqrt(group[static_cast<std::size_t>(g)] / count + static_cast<Acc>(epsilon));
      }
      detail::per_channel_of(rstd.data() + image * groups, cg, inv);
      T* out = y.data() + image * pixels * c;
      for (std::int64_t p = 0; p < pixels; ++p) {
        const Acc* in = rows.row(p);
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t k = 0; k < c; ++k) {
          const auto i = static_cast<std::size_t>(k);
          const Acc xhat = (in[k] - mu[i]) * inv[i];
          out_row[i] = xhat * gamma_acc[i] + beta_acc[i];
        }
        detail::round_range(out_row.data(), out + p * c, 0, c);
      }
    }
  });
}

/// @brief dgamma, dbeta (written when their `overwrite` is set, else added) and dx (when not null)
/// from dy, with the forward's mean and rstd. Per image, each channel's sums over the pixels in
/// order (one vector across the channels), then the group's channels in order; dgamma and dbeta add
/// the images' sums in image order.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void group_norm_backward(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma, std::int64_t groups,
                         const Tensor<Acc, Host>& mean, const Tensor<Acc, Host>& rstd,
                         const Tensor<T, Host>& dy, Tensor<T, Host>* dx, Tensor<Acc, Host>& dgamma,
                         bool overwrite_dgamma, Tensor<Acc, Host>& dbeta, bool overwrite_dbeta) {
  constexpr const char* where = "mpx::cpu::group_norm_backward";
  validate_group_norm_backward(where, x, gamma, groups, mean, rstd, dy, dx, dgamma, dbeta);
  const std::int64_t n = x.shape()[0], c = x.shape().cols(), pixels = x.numel() / (n * c), cg = c / groups;
  const Acc count = static_cast<Acc>(pixels * cg);
  const std::vector<Acc> gamma_acc = detail::widened<Acc>(gamma);
  // Per image: [dgamma partial | dbeta partial], added over the images in order afterwards.
  std::vector<Acc> partial(static_cast<std::size_t>(n * 2 * c), Acc(0));
  parallel_for_chunks(n, 1, [&](std::int64_t begin, std::int64_t end) {
    const auto size = static_cast<std::size_t>(c);
    std::vector<Acc> mu(size), inv(size), sum_h(size), sum_hx(size), group(static_cast<std::size_t>(groups)),
        mean_h(size), mean_hx(size), out_row(size);
    for (std::int64_t image = begin; image < end; ++image) {
      detail::PixelRows<T, Acc> x_rows(x.data() + image * pixels * c, c),
          dy_rows(dy.data() + image * pixels * c, c);
      detail::per_channel_of(mean.data() + image * groups, cg, mu);
      detail::per_channel_of(rstd.data() + image * groups, cg, inv);
      Acc* dg = partial.data() + image * 2 * c;
      Acc* db = dg + c;
      std::fill(sum_h.begin(), sum_h.end(), Acc(0));
      std::fill(sum_hx.begin(), sum_hx.end(), Acc(0));
      for (std::int64_t p = 0; p < pixels; ++p) {
        const Acc* xi = x_rows.row(p);
        const Acc* gi = dy_rows.row(p);
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t k = 0; k < c; ++k) {
          const auto i = static_cast<std::size_t>(k);
          const Acc xhat = (xi[k] - mu[i]) * inv[i];
          const Acc h = gi[k] * gamma_acc[i];
          sum_h[i] += h;
          sum_hx[i] += h * xhat;
          dg[k] += gi[k] * xhat;
          db[k] += gi[k];
        }
      }
      if (dx == nullptr) continue;
      detail::group_sums(sum_h, groups, group);
      for (std::int64_t g = 0; g < groups; ++g) group[static_cast<std::size_t>(g)] /= count;
      detail::per_channel_of(group.data(), cg, mean_h);
      detail::group_sums(sum_hx, groups, group);
      for (std::int64_t g = 0; g < groups; ++g) group[static_cast<std::size_t>(g)] /= count;
      detail::per_channel_of(group.data(), cg, mean_hx);
      T* out = dx->data() + image * pixels * c;
      for (std::int64_t p = 0; p < pixels; ++p) {
        const Acc* xi = x_rows.row(p);
        const Acc* gi = dy_rows.row(p);
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t k = 0; k < c; ++k) {
          const auto i = static_cast<std::size_t>(k);
          const Acc xhat = (xi[k] - mu[i]) * inv[i];
          const Acc h = gi[k] * gamma_acc[i];
          out_row[i] = inv[i] * (h - mean_h[i] - xhat * mean_hx[i]);
        }
        detail::round_range(out_row.data(), out + p * c, 0, c);
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
