// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Elementwise activations on the GPU, for when they are not fused into a GEMM epilogue: read
/// and write the compute type, compute in fp32 (fp64 for double). The same contracts and per-element
/// math as mpx::cpu's (activation.hpp): relu, gelu_tanh and their derivatives from gemm_spec.hpp, silu
/// and its derivative from activation_spec.hpp.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/activation.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>

#include "mpx/backend/activation_spec.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

/// Elements of `T` in one 16-byte load.
template <class T>
inline constexpr int pack_width = 16 / static_cast<int>(sizeof(T));

/// `pack_width<T>` elements loaded and stored as one 16-byte access.
template <class T>
struct alignas(16) Pack {
  /// The elements.
  T value[pack_width<T>];
};

/// Whether every pointer is 16-byte aligned, so the packed path may read and write through it.
template <class... P>
bool packable(const P*... pointers) {
  return ((reinterpret_cast<std::uintptr_t>(pointers) % 16 == 0) && ...);
}

/// relu as a function object for the kernels.
struct Relu {
  /// relu(v).
  template <class M>
  __device__ M operator()(M v) const {
    return relu(v);
  }
};
/// relu's derivative as a function object.
struct ReluDerivative {
  /// relu'(v).
  template <class M>
  __device__ M operator()(M v) const {
    return relu_derivative(v);
  }
};
/// gelu_tanh as a function object.
struct Gelu {
  /// gelu_tanh(v).
  template <class M>
  __device__ M operator()(M v) const {
    return gelu_tanh(v);
  }
};
/// gelu_tanh's derivative as a function object.
struct GeluDerivative {
  /// gelu_tanh'(v).
  template <class M>
  __device__ M operator()(M v) const {
    return gelu_tanh_derivative(v);
  }
};

/// silu as a function object.
struct Silu {
  /// silu(v).
  template <class M>
  __device__ M operator()(M v) const {
    return silu(v);
  }
};
/// silu's derivative as a function object.
struct SiluDerivative {
  /// silu'(v).
  template <class M>
  __device__ M operator()(M v) const {
    return silu_derivative(v);
  }
};

// y[i] = f(x[i]) in the accumulate type, rounded into T. The first `packs` * width elements go through
// 16-byte accesses (when the host found the pointers aligned), the tail one element at a time.
// In place (y == x) is fine: every element is read before the same thread writes it.
template <class T, class F>
__global__ void map_elements_kernel(const T* x, T* y, std::int64_t count, std::int64_t packs, F f) {
  using Acc = accumulate_t<T>;
  constexpr int width = pack_width<T>;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t p = first; p < packs; p += stride) {
    Pack<T> in = reinterpret_cast<const Pack<T>*>(x)[p];
    Pack<T> out;
#pragma unroll
    for (int k = 0; k < width; ++k) out.value[k] = round_to<tag_of_t<T>>(f(static_cast<Acc>(in.value[k])));
    reinterpret_cast<Pack<T>*>(y)[p] = out;
  }
  for (std::int64_t i = packs * width + first; i < count; i += stride) {
    y[i] = round_to<tag_of_t<T>>(f(static_cast<Acc>(x[i])));
  }
}

// dx[i] = dy[i] * f'(saved[i]) in the accumulate type, rounded into T; packed like map_elements_kernel.
template <class T, class F>
__global__ void map_gradient_kernel(const T* saved, const T* dy, T* dx, std::int64_t count,
                                    std::int64_t packs, F derivative) {
  using Acc = accumulate_t<T>;
  constexpr int width = pack_width<T>;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t p = first; p < packs; p += stride) {
    const Pack<T> s = reinterpret_cast<const Pack<T>*>(saved)[p];
    const Pack<T> g = reinterpret_cast<const Pack<T>*>(dy)[p];
    Pack<T> out;
#pragma unroll
    for (int k = 0; k < width; ++k) {
      out.value[k] =
          round_to<tag_of_t<T>>(static_cast<Acc>(g.value[k]) * derivative(static_cast<Acc>(s.value[k])));
    }
    reinterpret_cast<Pack<T>*>(dx)[p] = out;
  }
  for (std::int64_t i = packs * width + first; i < count; i += stride) {
    dx[i] = round_to<tag_of_t<T>>(static_cast<Acc>(dy[i]) * derivative(static_cast<Acc>(saved[i])));
  }
}

/// Checks shapes as mpx::cpu::detail::map_elements does and launches map_elements_kernel.
template <Element T, class F>
void map_elements(const char* where, const Tensor<T, Cuda>& x, Tensor<T, Cuda>& y, F f) {
  require_shape(where, "output", y.shape(), x.shape());
  const std::int64_t count = x.numel();
  if (count == 0) return;
  const std::int64_t packs = packable(x.data(), y.data()) ? count / pack_width<T> : 0;
  const std::int64_t work = packs + (count - packs * pack_width<T>);
  map_elements_kernel<<<elementwise_blocks(work), elementwise_threads, 0, stream()>>>(x.data(), y.data(),
                                                                                      count, packs, f);
  MPX_CUDA_CHECK_LAUNCH("map_elements_kernel");
}

/// Checks shapes as mpx::cpu::detail::map_gradient does and launches map_gradient_kernel.
template <Element T, class F>
void map_gradient(const char* where, const Tensor<T, Cuda>& saved, const Tensor<T, Cuda>& dy,
                  Tensor<T, Cuda>& dx, F derivative) {
  require_shape(where, "upstream gradient", dy.shape(), saved.shape());
  require_shape(where, "input gradient", dx.shape(), saved.shape());
  const std::int64_t count = saved.numel();
  if (count == 0) return;
  const std::int64_t packs = packable(saved.data(), dy.data(), dx.data()) ? count / pack_width<T> : 0;
  const std::int64_t work = packs + (count - packs * pack_width<T>);
  map_gradient_kernel<<<elementwise_blocks(work), elementwise_threads, 0, stream()>>>(
      saved.data(), dy.data(), dx.data(), count, packs, derivative);
  MPX_CUDA_CHECK_LAUNCH("map_gradient_kernel");
}

}  // namespace detail

/// @brief y = relu(x), elementwise (same shape; in place allowed). NaN passes through.
template <Element T>
void relu_forward(const Tensor<T, Cuda>& x, Tensor<T, Cuda>& y) {
  detail::map_elements("mpx::cuda::relu_forward", x, y, detail::Relu{});
}

/// @brief dx = dy where the forward output (or input) is positive, else 0.
template <Element T>
void relu_backward(const Tensor<T, Cuda>& output, const Tensor<T, Cuda>& dy, Tensor<T, Cuda>& dx) {
  detail::map_gradient("mpx::cuda::relu_backward", output, dy, dx, detail::ReluDerivative{});
}

/// @brief y = gelu_tanh(x), elementwise (same shape; in place allowed).
template <Element T>
void gelu_forward(const Tensor<T, Cuda>& x, Tensor<T, Cuda>& y) {
  detail::map_elements("mpx::cuda::gelu_forward", x, y, detail::Gelu{});
}

/// @brief dx = dy * gelu_tanh'(x), with x the forward input.
template <Element T>
void gelu_backward(const Tensor<T, Cuda>& input, const Tensor<T, Cuda>& dy, Tensor<T, Cuda>& dx) {
  detail::map_gradient("mpx::cuda::gelu_backward", input, dy, dx, detail::GeluDerivative{});
}

/// @brief y = silu(x) = x / (1 + exp(-x)) (backend/activation_spec.hpp), elementwise (same shape; in
/// place allowed).
template <Element T>
void silu_forward(const Tensor<T, Cuda>& x, Tensor<T, Cuda>& y) {
  detail::map_elements("mpx::cuda::silu_forward", x, y, detail::Silu{});
}

/// @brief dx = dy * silu'(x), with x the forward input.
template <Element T>
void silu_backward(const Tensor<T, Cuda>& input, const Tensor<T, Cuda>& dy, Tensor<T, Cuda>& dx) {
  detail::map_gradient("mpx::cuda::silu_backward", input, dy, dx, detail::SiluDerivative{});
}

}  // namespace mpx::cuda
