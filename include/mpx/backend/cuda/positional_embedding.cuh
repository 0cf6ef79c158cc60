// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Learned positional embedding on the GPU with mpx::cpu::positional_embedding_*'s contracts
/// and bits: forward adds in the accumulate type and rounds once (one correctly rounded add, so nothing for
/// nvcc to contract); backward gives each weight element one thread that adds the batch's terms in
/// batch order, the CPU's order, without atomics.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/positional_embedding.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/embedding_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// y[i] = round(x[i] + weight[i % block]) in T's accumulate type; block = sequence * dim.
template <class T, class Weight>
__global__ void positional_embedding_forward_kernel(const T* x, const Weight* weight, std::int64_t count,
                                                    std::int64_t block, T* y) {
  using Acc = accumulate_t<T>;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    y[i] = round_to<tag_of_t<T>>(static_cast<Acc>(x[i]) + static_cast<Acc>(weight[i % block]));
}

// dweight[e] += (dy[0, e] + dy[1, e]) + ... for e in [0, block): one thread per element.
template <class T, class Acc>
__global__ void positional_embedding_backward_kernel(const T* dy, std::int64_t batch, std::int64_t block,
                                                     Acc* dweight) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < block;
       e += stride) {
    Acc sum = 0;
    for (std::int64_t b = 0; b < batch; ++b) sum += static_cast<Acc>(dy[b * block + e]);
    dweight[e] += sum;
  }
}

}  // namespace detail

/// @brief y[b, t, c] = round(x[b, t, c] + weight[t, c]), the sum in x's accumulate type: the bits of
/// mpx::cpu::positional_embedding_forward.
/// @param x      [batch, sequence, dim] (or [sequence, dim]) in the compute type.
/// @param weight [max_positions, dim], any element type (the master weights).
/// @param y      x's shape, written.
template <FloatingElement T, FloatingElement Weight>
void positional_embedding_forward(const Tensor<T, Cuda>& x, const Tensor<Weight, Cuda>& weight,
                                  Tensor<T, Cuda>& y) {
  constexpr const char* where = "mpx::cuda::positional_embedding_forward";
  const std::int64_t sequence = validate_positional_embedding(where, x, weight);
  require_shape(where, "output", y.shape(), x.shape());
  const std::int64_t count = x.numel();
  if (count == 0) return;
  detail::positional_embedding_forward_kernel<<<detail::elementwise_blocks(count),
                                                detail::elementwise_threads, 0, detail::stream()>>>(
      x.data(), weight.data(), count, sequence * weight.shape()[1], y.data());
  MPX_CUDA_CHECK_LAUNCH("positional_embedding_forward_kernel");
}

/// @brief dweight[t, c] += dy[b, t, c] for b = 0, 1, ... in that order: the bits of
/// mpx::cpu::positional_embedding_backward.
/// @param dy      [batch, sequence, dim] (or [sequence, dim]) in the compute type.
/// @param dweight [max_positions, dim] in the accumulate type, accumulated (+=).
template <FloatingElement T, FloatingElement Acc>
void positional_embedding_backward(const Tensor<T, Cuda>& dy, Tensor<Acc, Cuda>& dweight) {
  constexpr const char* where = "mpx::cuda::positional_embedding_backward";
  const std::int64_t sequence = validate_positional_embedding(where, dy, dweight);
  const std::int64_t block = sequence * dweight.shape()[1];
  if (block == 0) return;
  const std::int64_t batch = dy.numel() / block;
  detail::positional_embedding_backward_kernel<<<detail::elementwise_blocks(block),
                                                 detail::elementwise_threads, 0, detail::stream()>>>(
      dy.data(), batch, block, dweight.data());
  MPX_CUDA_CHECK_LAUNCH("positional_embedding_backward_kernel");
}

}  // namespace mpx::cuda
