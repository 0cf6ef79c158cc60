// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Elementwise activations on the CPU, for when they are not fused into a GEMM epilogue:
/// read and write the compute type, compute in fp32 (fp64 for double), as autocast does.

#include "mpx/backend/activation_spec.hpp"
#include "mpx/backend/cpu/elementwise.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

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

/// @brief y = silu(x) = x / (1 + exp(-x)) (backend/activation_spec.hpp).
template <FloatingElement T>
void silu_forward(const Tensor<T, Host>& x, Tensor<T, Host>& y) {
  detail::map_elements("mpx::cpu::silu_forward", x, y, [](auto v) { return silu(v); });
}

/// @brief dx = dy * silu'(x), with x the forward input.
template <FloatingElement T>
void silu_backward(const Tensor<T, Host>& input, const Tensor<T, Host>& dy, Tensor<T, Host>& dx) {
  detail::map_gradient("mpx::cpu::silu_backward", input, dy, dx, [](auto v) { return silu_derivative(v); });
}

/// @brief dx = dy * gelu_tanh'(x), with x the forward input.
template <FloatingElement T>
void gelu_backward(const Tensor<T, Host>& input, const Tensor<T, Host>& dy, Tensor<T, Host>& dx) {
  detail::map_gradient("mpx::cpu::gelu_backward", input, dy, dx,
                       [](auto v) { return gelu_tanh_derivative(v); });
}

}  // namespace mpx::cpu
