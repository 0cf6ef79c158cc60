// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Elementwise activations on the CPU, for when they are not fused into a GEMM epilogue:
/// read and write the compute type, compute in fp32 (fp64 for double), as autocast does.

#include <algorithm>
#include <cstdint>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

namespace detail {
// Elements per block of a map: 16-bit inputs are widened into buffers on the stack (vectorised
// conversions, cpu/convert.hpp), the function runs over them as vector code, and the results are
// rounded back; the bits are those of converting one element at a time.
inline constexpr std::int64_t map_block = 256;

// Applies `f` to each element in the math type and rounds the result into the output's type.
template <FloatingElement T, class F>
void map_elements(const char* where, const Tensor<T, Host>& x, Tensor<T, Host>& y, F f) {
  require_shape(where, "output", y.shape(), x.shape());
  using Math = math_t<tag_of_t<T>>;
  const T* in = x.data();
  T* out = y.data();
  parallel_for_chunks(x.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    Math values[map_block];
    for (std::int64_t first = begin; first < end; first += map_block) {
      const std::int64_t count = std::min(map_block, end - first);
      widen_range<tag_of_t<T>>(in + first, values, 0, count);
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t i = 0; i < count; ++i) values[i] = f(values[i]);
      round_range(values, out + first, 0, count);
    }
  });
}

// dx = dy * f'(saved), elementwise, in the math type.
template <FloatingElement T, class F>
void map_gradient(const char* where, const Tensor<T, Host>& saved, const Tensor<T, Host>& dy,
                  Tensor<T, Host>& dx, F derivative) {
  require_shape(where, "upstream gradient", dy.shape(), saved.shape());
  require_shape(where, "input gradient", dx.shape(), saved.shape());
  using Math = math_t<tag_of_t<T>>;
  const T* s = saved.data();
  const T* g = dy.data();
  T* out = dx.data();
  parallel_for_chunks(saved.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    Math values[map_block];
    Math gradients[map_block];
    for (std::int64_t first = begin; first < end; first += map_block) {
      const std::int64_t count = std::min(map_block, end - first);
      widen_range<tag_of_t<T>>(s + first, values, 0, count);
      widen_range<tag_of_t<T>>(g + first, gradients, 0, count);
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t i = 0; i < count; ++i) values[i] = gradients[i] * derivative(values[i]);
      round_range(values, out + first, 0, count);
    }
  });
}
}  // namespace detail

/// @brief y = relu(x). NaN passes through.
template <FloatingElement T>
void relu_forward(const Tensor<T, Host>& x, Tensor<T, Host>& y) {
  detail::map_elements("mpx::cpu::relu_forward", x, y, [](auto v) { return relu(v); });
}

/// @brief dx = dy where the forward output (or input) is positive, else 0.
template <FloatingElement T>
void relu_backward(const Tensor<T, Host>& output, const Tensor<T, Host>& dy, Tensor<T, Host>& dx) {
  detail::map_gradient("mpx::cpu::relu_backward", output, dy, dx, [](auto v) { return relu_derivative(v); });
}

/// @brief y = gelu_tanh(x).
template <FloatingElement T>
void gelu_forward(const Tensor<T, Host>& x, Tensor<T, Host>& y) {
  detail::map_elements("mpx::cpu::gelu_forward", x, y, [](auto v) { return gelu_tanh(v); });
}

/// @brief dx = dy * gelu_tanh'(x), with x the forward input.
template <FloatingElement T>
void gelu_backward(const Tensor<T, Host>& input, const Tensor<T, Host>& dy, Tensor<T, Host>& dx) {
  detail::map_gradient("mpx::cpu::gelu_backward", input, dy, dx,
                       [](auto v) { return gelu_tanh_derivative(v); });
}

}  // namespace mpx::cpu
