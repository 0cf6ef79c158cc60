// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `cuda::accumulate_fp8_statistics`: `cpu::accumulate_fp8_statistics` on the GPU, counting by
/// the same rule (backend/fp8_statistics_spec.hpp). Each block counts its values in integers and adds
/// them with one `atomicAdd` per field: the counts are integers below 2^53 in doubles, so their sums
/// do not depend on the order of the blocks; the amax is a maximum (`atomicMax` on a non-negative
/// double's bits). Queued on the context's stream, with no host wait.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/fp8_statistics.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/fp8_statistics_spec.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// Adds the block's saturated and flushed counts to statistics and folds its largest |x| into the
// amax field; the first block also adds the number of values.
template <class Format, class S>
__global__ void __launch_bounds__(elementwise_threads)
    fp8_statistics_kernel(const S* __restrict__ x, std::int64_t count, const float* scale,
                          double* statistics) {
  using Limits = Fp8RangeLimits<Format>;
  const float factor = *scale;
  unsigned long long saturated = 0, flushed = 0;
  float amax = 0.0f;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const float value = static_cast<float>(x[i]);
    const float magnitude = fabsf(value);
    const float scaled = fabsf(__fmul_rn(value, factor));
    saturated += scaled > Limits::saturates_above ? 1 : 0;
    flushed += magnitude != 0.0f && scaled <= Limits::flushes_at_or_below ? 1 : 0;
    amax = magnitude > amax ? magnitude : amax;  // a NaN compares false: passed over
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    saturated += __shfl_xor_sync(0xffffffffu, saturated, offset);
    flushed += __shfl_xor_sync(0xffffffffu, flushed, offset);
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  }
  __shared__ unsigned long long warp_saturated[elementwise_threads / 32],
      warp_flushed[elementwise_threads / 32];
  __shared__ float warp_amax[elementwise_threads / 32];
  if (threadIdx.x % 32 == 0) {
    warp_saturated[threadIdx.x / 32] = saturated;
    warp_flushed[threadIdx.x / 32] = flushed;
    warp_amax[threadIdx.x / 32] = amax;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int warp = 1; warp < elementwise_threads / 32; ++warp) {
    saturated += warp_saturated[warp];
    flushed += warp_flushed[warp];
    amax = fmaxf(amax, warp_amax[warp]);
  }
  if (blockIdx.x == 0) {
    atomicAdd(statistics + static_cast<int>(Fp8StatisticsField::Values), static_cast<double>(count));
  }
  if (saturated != 0) {
    atomicAdd(statistics + static_cast<int>(Fp8StatisticsField::Saturated), static_cast<double>(saturated));
  }
  if (flushed != 0) {
    atomicAdd(statistics + static_cast<int>(Fp8StatisticsField::Flushed), static_cast<double>(flushed));
  }
  if (amax > 0.0f) {
    atomicMax(reinterpret_cast<unsigned long long*>(statistics + static_cast<int>(Fp8StatisticsField::Amax)),
              static_cast<unsigned long long>(__double_as_longlong(static_cast<double>(amax))));
  }
}

}  // namespace detail

/// @brief Adds to `statistics` (`fp8_statistics_fields` doubles in device memory, in
/// `Fp8StatisticsField` order) what casting `x` into `Format` with `*scale` does: values cast,
/// saturated, flushed, and the largest |x|, as `cpu::accumulate_fp8_statistics` counts them.
/// @param x          the tensor the cast reads (fp32, bf16, fp16)
/// @param scale      a float in device memory: the scale the cast multiplies by
/// @param statistics doubles in device memory, accumulated into (the amax field +0 or positive)
template <NumericTag Format, FloatingElement S>
void accumulate_fp8_statistics(const Tensor<S, Cuda>& x, const float* scale, double* statistics) {
  const std::int64_t count = x.numel();
  if (count == 0) return;
  detail::fp8_statistics_kernel<Format, S>
      <<<detail::elementwise_blocks(count), detail::elementwise_threads, 0, detail::stream()>>>(
          x.data(), count, scale, statistics);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::fp8_statistics_kernel");
}

}  // namespace mpx::cuda
