// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Kernels of the unfused GEMM path: the epilogue applied to an fp32 (fp64) product when
/// cuBLASLt offers no fused kernel for it, and the operand reductions of BGradA/BGradB. nvcc only:
/// backend.cuh includes it, and it hands its launchers to `mpx::cuda::gemm` (gemm.hpp) through
/// gemm.hpp's launcher pointers during static initialisation.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error "mpx/backend/cuda/gemm_epilogue.cuh is CUDA code: compile it with nvcc and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/data_type.hpp"
#include "mpx/backend/cuda/gemm.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx::cuda::detail {

// Device loads and stores between an element type and the accumulate type, rounding to nearest even.
template <class Acc>
__device__ inline Acc load_as(const __half* p) {
  return static_cast<Acc>(__half2float(*p));
}
template <class Acc>
__device__ inline Acc load_as(const __nv_bfloat16* p) {
  return static_cast<Acc>(__bfloat162float(*p));
}
template <class Acc>
__device__ inline Acc load_as(const float* p) {
  return static_cast<Acc>(*p);
}
template <class Acc>
__device__ inline Acc load_as(const double* p) {
  return static_cast<Acc>(*p);
}
__device__ inline void store_from(__half* p, float v) {
  *p = __float2half_rn(v);
}
__device__ inline void store_from(__nv_bfloat16* p, float v) {
  *p = __float2bfloat16_rn(v);
}
__device__ inline void store_from(float* p, float v) {
  *p = v;
}
__device__ inline void store_from(double* p, double v) {
  *p = v;
}

// TF32 operands are summed as the Tensor Cores see them: rounded to TF32 (ties away from zero).
__device__ inline float round_tf32_device(float x) {
  std::uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return __uint_as_float(bits);
}

// D = epilogue(t + beta * C) for an M x N row-major product t in Acc. Each thread owns one column
// and walks rows [row_begin, row_end); with a column bias gradient the grid has one row block, so
// each column's sum runs in row order.
template <class Acc, class DT>
__global__ void apply_epilogue_kernel(const Acc* t, const DT* c, Acc beta, DT* d, const DT* bias, DT* aux,
                                      Acc* bias_grad, Epilogue epilogue, std::int64_t m, std::int64_t n,
                                      std::int64_t rows_per_block) {
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= n) return;
  const std::int64_t row_begin = static_cast<std::int64_t>(blockIdx.y) * rows_per_block;
  const std::int64_t row_end = row_begin + rows_per_block < m ? row_begin + rows_per_block : m;
  Acc column_sum = 0;
  for (std::int64_t row = row_begin; row < row_end; ++row) {
    const std::int64_t index = row * n + col;
    Acc value = t[index];
    if (beta != Acc(0)) value += beta * load_as<Acc>(c + index);
    switch (epilogue) {
      case Epilogue::Bias: value += load_as<Acc>(bias + col); break;
      case Epilogue::ReluBias: value = relu(value + load_as<Acc>(bias + col)); break;
      case Epilogue::GeluBias: value = gelu_tanh(value + load_as<Acc>(bias + col)); break;
      case Epilogue::GeluAuxBias: {
        const Acc pre = value + load_as<Acc>(bias + col);
        store_from(aux + index, pre);
        value = gelu_tanh(pre);
        break;
      }
      case Epilogue::DRelu:
      case Epilogue::DReluBGrad: value *= relu_derivative(load_as<Acc>(aux + index)); break;
      case Epilogue::DGelu:
      case Epilogue::DGeluBGrad: value *= gelu_tanh_derivative(load_as<Acc>(aux + index)); break;
      default: break;
    }
    column_sum += value;
    store_from(d + index, value);
  }
  if (bias_grad != nullptr) bias_grad[col] = column_sum;
}

// out[i] = sum_j x[i * stride_i + j * stride_j] in Acc, for i < count_i, j < count_j.
template <class Acc, class ST, bool Tf32>
__global__ void reduce_operand_kernel(const ST* x, Acc* out, std::int64_t count_i, std::int64_t count_j,
                                      std::int64_t stride_i, std::int64_t stride_j) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count_i) return;
  Acc sum = 0;
  for (std::int64_t j = 0; j < count_j; ++j) {
    Acc value = load_as<Acc>(x + i * stride_i + j * stride_j);
    if constexpr (Tf32) value = round_tf32_device(value);
    sum += value;
  }
  out[i] = sum;
}

/// Launches `apply_epilogue_kernel` on `stream`; `c` is C or D's previous contents (read when beta != 0).
template <class Acc, class DT>
void launch_apply_epilogue(const Acc* t, const DT* c, Acc beta, DT* d, const DT* bias, DT* aux,
                           Acc* bias_grad, Epilogue epilogue, std::int64_t m, std::int64_t n,
                           cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  constexpr int threads = 256;
  // grid.y is at most 65535: very tall problems give each block more rows.
  constexpr std::int64_t max_grid_y = 65535;
  const std::int64_t rows_per_block =
      bias_grad != nullptr ? m : std::max<std::int64_t>(64, (m + max_grid_y - 1) / max_grid_y);
  const dim3 grid(static_cast<unsigned>((n + threads - 1) / threads),
                  static_cast<unsigned>((m + rows_per_block - 1) / rows_per_block));
  apply_epilogue_kernel<<<grid, threads, 0, stream>>>(t, c, beta, d, bias, aux, bias_grad, epilogue, m, n,
                                                      rows_per_block);
  MPX_CUDA_CHECK(cudaGetLastError());
}

/// Launches `reduce_operand_kernel` on `stream`.
template <class Acc, class ST, bool Tf32>
void launch_reduce_operand(const ST* x, Acc* out, std::int64_t count_i, std::int64_t count_j,
                           std::int64_t stride_i, std::int64_t stride_j, cudaStream_t stream) {
  if (count_i == 0) return;
  constexpr int threads = 256;
  const auto blocks = static_cast<unsigned>((count_i + threads - 1) / threads);
  reduce_operand_kernel<Acc, ST, Tf32>
      <<<blocks, threads, 0, stream>>>(x, out, count_i, count_j, stride_i, stride_j);
  MPX_CUDA_CHECK(cudaGetLastError());
}

// Points a launcher slot of gemm.hpp at the launcher with the same template arguments.
template <class Acc, class DT>
void register_launcher(UnfusedEpilogue<Acc, DT>) {
  UnfusedEpilogue<Acc, DT>::launch = &launch_apply_epilogue<Acc, DT>;
}
template <class Acc, class ST, bool Tf32>
void register_launcher(UnfusedOperandReduction<Acc, ST, Tf32>) {
  UnfusedOperandReduction<Acc, ST, Tf32>::launch = &launch_reduce_operand<Acc, ST, Tf32>;
}

// Fills every slot `gemm<Compute, TD>` reads, for TD = storage_t<Compute> and TD = math_t<Compute>.
template <NumericTag... Computes>
bool register_unfused_gemm() {
  (register_launcher(UnfusedEpilogueFor<Computes, storage_t<Computes>>{}), ...);
  (register_launcher(UnfusedEpilogueFor<Computes, math_t<Computes>>{}), ...);
  (register_launcher(UnfusedOperandReductionFor<Computes>{}), ...);
  return true;
}

// Every precision with `cuda_traits` (data_type.hpp). An inline variable: its initialiser runs once
// per program, during static initialisation, however many translation units include this header.
inline const bool unfused_gemm_registered = register_unfused_gemm<Double, Float, TF32, Half, BFloat16>();

}  // namespace mpx::cuda::detail
