// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Elementwise maps on the CPU (activations, their derivatives, sums): inputs read in the
/// compute type, the function evaluated in the accumulate type (fp32; fp64 for double), the result rounded
/// once into the output's type, in vector code on all threads.

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu::detail {

// Elements per block of a map: 16-bit inputs are widened into buffers on the stack (vectorised
// conversions, cpu/convert.hpp), the function runs over them as vector code, and the results are
// rounded back; the bits are those of converting one element at a time.
inline constexpr std::int64_t map_block = 256;

// Applies `f` to each element in the accumulate type and rounds the result into the output's type.
template <FloatingElement T, class F>
void map_elements(const char* where, const Tensor<T, Host>& x, Tensor<T, Host>& y, F f) {
  require_shape(where, "output", y.shape(), x.shape());
  using Acc = accumulate_t<T>;
  const T* in = x.data();
  T* out = y.data();
  if constexpr (std::is_same_v<T, Acc>) {  // nothing to widen or round: no copies through buffers
    parallel_for_chunks(x.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t i = begin; i < end; ++i) out[i] = f(in[i]);
    });
    return;
  }
  parallel_for_chunks(x.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    Acc values[map_block];
    for (std::int64_t first = begin; first < end; first += map_block) {
      const std::int64_t count = std::min(map_block, end - first);
      widen_range<tag_of_t<T>>(in + first, values, 0, count);
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t i = 0; i < count; ++i) values[i] = f(values[i]);
      round_range(values, out + first, 0, count);
    }
  });
}

// out = f(a, b) elementwise in the accumulate type, rounded into the output's type (shapes checked by
// the caller).
template <FloatingElement T, class F>
void map_pairs(const Tensor<T, Host>& a, const Tensor<T, Host>& b, Tensor<T, Host>& out, F f) {
  using Acc = accumulate_t<T>;
  if constexpr (std::is_same_v<T, Acc>) {  // nothing to widen or round: no copies through buffers
    const T* first_in = a.data();
    const T* second_in = b.data();
    T* result = out.data();
    parallel_for_chunks(a.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t i = begin; i < end; ++i) result[i] = f(first_in[i], second_in[i]);
    });
    return;
  }
  parallel_for_chunks(a.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    Acc x[map_block];
    Acc y[map_block];
    for (std::int64_t first = begin; first < end; first += map_block) {
      const std::int64_t count = std::min(map_block, end - first);
      widen_range<tag_of_t<T>>(a.data() + first, x, 0, count);
      widen_range<tag_of_t<T>>(b.data() + first, y, 0, count);
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t i = 0; i < count; ++i) x[i] = f(x[i], y[i]);
      round_range(x, out.data() + first, 0, count);
    }
  });
}

// dx = dy * f'(saved), elementwise, in the accumulate type.
template <FloatingElement T, class F>
void map_gradient(const char* where, const Tensor<T, Host>& saved, const Tensor<T, Host>& dy,
                  Tensor<T, Host>& dx, F derivative) {
  require_shape(where, "upstream gradient", dy.shape(), saved.shape());
  require_shape(where, "input gradient", dx.shape(), saved.shape());
  map_pairs(saved, dy, dx, [derivative](auto s, auto g) { return g * derivative(s); });
}
}  // namespace mpx::cpu::detail
