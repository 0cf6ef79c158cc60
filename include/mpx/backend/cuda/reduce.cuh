// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What the deterministic reductions of the layer and loss kernels share: a block-wide
/// reduction in a fixed order, the block size for a row, and a reusable device scratch buffer.
///
/// No float atomics anywhere: a reduction's order depends only on the launch shape, which depends
/// only on the problem's shape, so a run gives the same bits every time on every device.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/reduce.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda::detail {

/// Threads per block of a kernel that gives one block to each row of `length` elements: a multiple of
/// the warp size, no more than 256, no more warps than the row fills.
inline int row_threads(std::int64_t length) {
  const std::int64_t warps = std::clamp<std::int64_t>((length + 31) / 32, 1, 8);
  return static_cast<int>(warps * 32);
}

/// Sum of two values (the reduction operator of the sums).
struct Plus {
  /// Returns a + b.
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};

/// fmax of two values: the larger, or the one that is not NaN (std::fmax, as the CPU kernels use).
struct Fmax {
  /// Returns fmax(a, b).
  template <class T>
  __device__ T operator()(T a, T b) const {
    return fmax(a, b);
  }
};

/// Combines `value` over the block with `op` and returns the result to every thread.
///
/// The order is fixed: a shuffle-down tree inside each warp, then the warps' results in warp order.
/// blockDim.x must be a multiple of 32 and every thread of the block must call this (it
/// synchronises). Safe to call several times in a row: it waits until the previous call's results
/// have been read before overwriting them.
template <class Acc, class Op>
__device__ Acc block_reduce(Acc value, Op op) {
  __shared__ Acc warp_results[32];
  const unsigned lane = threadIdx.x % 32u;
  const unsigned warp = threadIdx.x / 32u;
  const unsigned warps = blockDim.x / 32u;
  for (unsigned offset = 16; offset > 0; offset /= 2)
    value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
  __syncthreads();  // the previous call's readers are done with warp_results
  if (lane == 0) warp_results[warp] = value;
  __syncthreads();
  Acc result = warp_results[0];
  for (unsigned w = 1; w < warps; ++w) result = op(result, warp_results[w]);
  return result;
}

/// Threads of the single-block kernels that finish a reduction.
inline constexpr int final_reduce_threads = 256;

/// `*sum += double(total / divisor)`, total being `values[0 .. count)` summed in `Acc` in a fixed
/// order by one block of final_reduce_threads threads. With `divisor == 0`, adds 0 when
/// `empty_mean_is_zero` (MSE's convention) and NaN (0 / 0) otherwise.
template <class Acc>
__global__ void add_mean_kernel(const Acc* values, std::int64_t count, std::int64_t divisor,
                                bool empty_mean_is_zero, double* sum) {
  Acc local = 0;
  for (std::int64_t i = threadIdx.x; i < count; i += blockDim.x) local += values[i];
  const Acc total = block_reduce(local, Plus{});
  if (threadIdx.x == 0) {
    const Acc mean = divisor == 0 && empty_mean_is_zero ? Acc(0) : total / static_cast<Acc>(divisor);
    *sum += static_cast<double>(mean);
  }
}

/// @brief Device memory a launcher needs between two of its kernels (partial sums), kept per thread,
/// per element type and per `owner` (the caller's own output, e.g. a LayerNorm's gamma gradient),
/// and grown on demand, so repeated calls allocate nothing (which also keeps them legal inside CUDA
/// graph capture once the first call has sized the buffer). Keyed by owner so that one layer's
/// larger call never reallocates a buffer another layer's captured graph still uses.
///
/// The buffer is stream-ordered like every mpx allocation: reusing it in the next call is safe because
/// that call's kernels queue behind this call's on the same stream.
template <class Acc>
Acc* scratch(const void* owner, std::int64_t count) {
  thread_local std::unordered_map<const void*, Tensor<Acc, Cuda>> buffers;
  Tensor<Acc, Cuda>& buffer = buffers[owner];
  if (buffer.numel() < count) buffer = Tensor<Acc, Cuda>::uninitialized(Shape{count});
  return buffer.data();
}

}  // namespace mpx::cuda::detail
