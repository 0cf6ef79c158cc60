// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief A per-sample shift added to every position of channels-last activations on the CPU, and
/// its gradient (backend/sample_shift_spec.hpp has the contract).

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/sample_shift_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief y[n, p, c] = x[n, p, c] + shift[n, c], added in the accumulate type, rounded once.
/// @param x activations [N, ..., C]
/// @param shift [N, C], in x's type
/// @param y the output, x's shape (may be x itself)
/// @throws mpx::shape_error naming the operand unless shift is [N, C] and y has x's shape.
template <FloatingElement T>
void add_sample_shift(const Tensor<T, Host>& x, const Tensor<T, Host>& shift, Tensor<T, Host>& y) {
  constexpr const char* where = "mpx::cpu::add_sample_shift";
  const std::int64_t positions = sample_shift_positions(where, x.shape(), shift.shape());
  require_shape(where, "y", y.shape(), x.shape());
  using Acc = accumulate_t<T>;
  const std::int64_t samples = x.rank() >= 2 ? x.shape()[0] : 0, c = x.shape().cols();
  parallel_for_chunks(samples * positions, rows_per_chunk(c), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {  // row = n positions + p
      const T* in = x.data() + row * c;
      const T* s = shift.data() + (row / positions) * c;
      T* out = y.data() + row * c;
      for (std::int64_t first = 0; first < c; first += detail::conversion_block) {
        const std::int64_t length = std::min(detail::conversion_block, c - first);
        if constexpr (std::is_same_v<Acc, float>) {
          float widened_x[detail::conversion_block], widened_shift[detail::conversion_block];
          detail::widen_range<tag_of_t<T>>(in + first, widened_x, 0, length);
          detail::widen_range<tag_of_t<T>>(s + first, widened_shift, 0, length);
          MPX_DETAIL_OMP_SIMD
          for (std::int64_t i = 0; i < length; ++i) widened_x[i] = widened_x[i] + widened_shift[i];
          detail::round_range(widened_x, out + first, 0, length);
        } else {  // fp64: nothing to widen
          for (std::int64_t i = first; i < first + length; ++i) out[i] = in[i] + s[i];
        }
      }
    }
  });
}

/// @brief dshift[n, c] = the sum over positions p of dy[n, p, c], in the accumulate type, in
/// position order; written, not accumulated.
/// @param dy upstream gradient [N, ..., C]
/// @param dshift [N, C] in dy's accumulate type
/// @throws mpx::shape_error unless dshift is [N, C].
template <FloatingElement T>
void sample_shift_backward(const Tensor<T, Host>& dy, Tensor<accumulate_t<T>, Host>& dshift) {
  constexpr const char* where = "mpx::cpu::sample_shift_backward";
  const std::int64_t positions = sample_shift_positions(where, dy.shape(), dshift.shape());
  using Acc = accumulate_t<T>;
  const std::int64_t samples = dy.shape()[0], c = dy.shape().cols();
  // The threads take (sample, block of channels) pairs, each summing its positions in order.
  constexpr std::int64_t channels_per_task = 64;
  const std::int64_t blocks = (c + channels_per_task - 1) / channels_per_task;
  parallel_for_chunks(samples * blocks, 1, [&](std::int64_t begin, std::int64_t end) {
    Acc widened[channels_per_task];
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t n = task / blocks, first = (task % blocks) * channels_per_task;
      const std::int64_t length = std::min(channels_per_task, c - first);
      Acc* sums = dshift.data() + n * c + first;
      std::fill(sums, sums + length, Acc(0));
      for (std::int64_t p = 0; p < positions; ++p) {
        detail::widen_range<tag_of_t<T>>(dy.data() + (n * positions + p) * c + first, widened, 0, length);
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t i = 0; i < length; ++i) sums[i] += widened[i];
      }
    }
  });
}

}  // namespace mpx::cpu
