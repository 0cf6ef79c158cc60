// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Nearest-neighbour upsampling of channels-last images by integer factors on the CPU:
/// y[n, h, w, c] = x[n, h / sh, w / sw, c] (exact); backward sums each sh x sw block of dy in the
/// accumulate type, rounded once (PyTorch's `nn.Upsample(scale_factor, mode="nearest")`).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/window2d_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief y [N, H sh, W sw, C] from x [N, H, W, C]: every pixel repeated sh x sw times.
template <FloatingElement T>
void upsample_nearest_forward(const Tensor<T, Host>& x, Tensor<T, Host>& y, Size2d scale) {
  constexpr const char* where = "mpx::cpu::upsample_nearest_forward";
  if (x.rank() != 4)
    throw shape_error(mpx::detail::concat(where, ": expected x [N, H, W, C], received ", x.shape()));
  const std::int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  require_shape(where, "y", y.shape(), Shape{n, h * scale.h, w * scale.w, c});
  const std::int64_t out_w = w * scale.w;
  parallel_for_chunks(n * h * scale.h, rows_per_chunk(out_w * c), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {  // row = n (H sh) + oh
      const std::int64_t image = row / (h * scale.h), ih = (row % (h * scale.h)) / scale.h;
      const T* src = x.data() + (image * h + ih) * w * c;
      T* dst = y.data() + row * out_w * c;
      for (std::int64_t ow = 0; ow < out_w; ++ow) {
        std::memcpy(dst + ow * c, src + (ow / scale.w) * c, static_cast<std::size_t>(c) * sizeof(T));
      }
    }
  });
}

/// @brief dx [N, H, W, C] = the sum of each sh x sw block of dy [N, H sh, W sw, C].
template <FloatingElement T>
void upsample_nearest_backward(const Tensor<T, Host>& dy, Tensor<T, Host>& dx, Size2d scale) {
  constexpr const char* where = "mpx::cpu::upsample_nearest_backward";
  if (dx.rank() != 4)
    throw shape_error(mpx::detail::concat(where, ": expected dx [N, H, W, C], received ", dx.shape()));
  const std::int64_t n = dx.shape()[0], h = dx.shape()[1], w = dx.shape()[2], c = dx.shape()[3];
  require_shape(where, "dy", dy.shape(), Shape{n, h * scale.h, w * scale.w, c});
  using Acc = accumulate_t<T>;
  const std::int64_t out_w = w * scale.w;
  parallel_for_chunks(n * h, rows_per_chunk(w * c), [&](std::int64_t begin, std::int64_t end) {
    std::vector<Acc> sum(static_cast<std::size_t>(c));
    for (std::int64_t row = begin; row < end; ++row) {  // row = n H + ih
      const std::int64_t image = row / h, ih = row % h;
      for (std::int64_t iw = 0; iw < w; ++iw) {
        std::fill(sum.begin(), sum.end(), Acc(0));
        for (std::int64_t a = 0; a < scale.h; ++a)
          for (std::int64_t b = 0; b < scale.w; ++b) {
            const T* g =
                dy.data() + ((image * h * scale.h + ih * scale.h + a) * out_w + iw * scale.w + b) * c;
            for (std::int64_t k = 0; k < c; ++k) sum[static_cast<std::size_t>(k)] += static_cast<Acc>(g[k]);
          }
        T* dst = dx.data() + (row * w + iw) * c;
        for (std::int64_t k = 0; k < c; ++k) dst[k] = round_to<tag_of_t<T>>(sum[static_cast<std::size_t>(k)]);
      }
    }
  });
}

}  // namespace mpx::cpu
