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

// TF32 operands are summed as the Tensor Cores see them: rounded to TF32 (ties away from zero). NaN
// is returned as it is: cvt.rna.tf32.f32 rounds its bits like a number's, so a NaN whose payload
// lies in the 13 low bits came out as infinity on an H200 (0x7f8009bd gave 0x7f800000).
__device__ inline float round_tf32_device(float x) {
  if (x != x) return x;
  std::uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return __uint_as_float(bits);
}

// Threads of the unfused kernels: 32 columns (one warp, so each row's loads are coalesced) by 8
// row lanes. A column's bias gradient is reduced over the 8 lanes in shared memory in a fixed order,
// so the result depends on the shape only.
inline constexpr int epilogue_columns = 32;
inline constexpr int epilogue_row_lanes = 8;

// D = epilogue(t + beta * C) for an M x N row-major product t in Acc (null: a zero product, K = 0).
// Block (x, y) owns 32 columns and rows [y * rows_per_block, ...); its row lanes take every 8th row.
// With a column bias gradient the grid has one row block, so each column's sum covers every row:
// each lane sums its rows in order, then lane sums are added in lane order. A warp's 32 columns are
// one word of a ReLU mask row (block x is word x), which the warp writes with one ballot; so every
// lane runs the row loop, the columns past N included.
template <class Acc, class DT>
__global__ void __launch_bounds__(epilogue_columns* epilogue_row_lanes)
    apply_epilogue_kernel(const Acc* __restrict__ t, const DT* c, Acc beta, DT* d,
                          const DT* __restrict__ bias, DT* aux, std::int32_t* relu_mask,
                          Acc* __restrict__ bias_grad, Epilogue epilogue, std::int64_t m, std::int64_t n,
                          std::int64_t rows_per_block) {
  static_assert(epilogue_columns == 32, "a warp's columns are one word of the ReLU mask");
  __shared__ Acc lane_sums[epilogue_row_lanes][epilogue_columns];
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * epilogue_columns + threadIdx.x;
  const bool in_range = col < n;
  const std::int64_t row_begin = static_cast<std::int64_t>(blockIdx.y) * rows_per_block;
  const std::int64_t row_end = row_begin + rows_per_block < m ? row_begin + rows_per_block : m;
  const std::int64_t mask_words = relu_mask_words(n);
  Acc column_sum = 0;
  const Acc column_bias = in_range && reads_bias(epilogue) ? load_as<Acc>(bias + col) : Acc(0);
  for (std::int64_t row = row_begin + threadIdx.y; row < row_end; row += epilogue_row_lanes) {
    const std::int64_t index = row * n + col;
    Acc value = in_range && t != nullptr ? t[index] : Acc(0);
    if (in_range && beta != Acc(0)) value += beta * load_as<Acc>(c + index);
    switch (epilogue) {
      case Epilogue::Bias: value += column_bias; break;
      case Epilogue::ReluBias: value = relu(value + column_bias); break;
      case Epilogue::ReluAuxBias: {
        const Acc pre = value + column_bias;
        const unsigned word = __ballot_sync(0xffffffffu, in_range && pre > Acc(0));
        if (threadIdx.x == 0) relu_mask[row * mask_words + blockIdx.x] = static_cast<std::int32_t>(word);
        value = relu(pre);
        break;
      }
      case Epilogue::GeluBias: value = gelu_tanh(value + column_bias); break;
      case Epilogue::GeluAuxBias: {
        const Acc pre = value + column_bias;
        if (in_range) store_from(aux + index, pre);
        value = gelu_tanh(pre);
        break;
      }
      case Epilogue::DRelu:
      case Epilogue::DReluBGrad:
        if (in_range) value *= relu_mask_bit(relu_mask + row * mask_words, col) ? Acc(1) : Acc(0);
        break;
      case Epilogue::DGelu:
      case Epilogue::DGeluBGrad:
        if (in_range) value *= gelu_tanh_derivative(load_as<Acc>(aux + index));
        break;
      default: break;
    }
    if (in_range) {
      column_sum += value;
      store_from(d + index, value);
    }
  }
  if (bias_grad == nullptr) return;  // uniform over the grid: no thread skips the barrier alone
  lane_sums[threadIdx.y][threadIdx.x] = column_sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < n) {
    Acc sum = lane_sums[0][threadIdx.x];
    for (int lane = 1; lane < epilogue_row_lanes; ++lane) sum += lane_sums[lane][threadIdx.x];
    bias_grad[col] = sum;
  }
}

// out[i] = sum_j x[i * stride_i + j * stride_j] in Acc, for i < count_i, j < count_j, in a fixed
// order whatever the strides. Rows (stride_j == 1): one warp per i, lanes taking every 32nd j, then
// a shuffle tree. Columns (otherwise): the apply_epilogue_kernel layout, 32 consecutive i per block
// (coalesced when stride_i == 1) and 8 lanes over j, added in lane order.
template <class Acc, class ST, bool Tf32>
__global__ void __launch_bounds__(epilogue_columns* epilogue_row_lanes)
    reduce_operand_kernel(const ST* __restrict__ x, Acc* __restrict__ out, std::int64_t count_i,
                          std::int64_t count_j, std::int64_t stride_i, std::int64_t stride_j) {
  const auto load = [&](std::int64_t i, std::int64_t j) {
    Acc value = load_as<Acc>(x + i * stride_i + j * stride_j);
    if constexpr (Tf32) value = round_tf32_device(value);
    return value;
  };
  if (stride_j == 1) {
    const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * epilogue_row_lanes + threadIdx.y;
    if (i >= count_i) return;  // a whole warp leaves together
    Acc sum = 0;
    for (std::int64_t j = threadIdx.x; j < count_j; j += epilogue_columns) sum += load(i, j);
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (threadIdx.x == 0) out[i] = sum;
    return;
  }
  __shared__ Acc lane_sums[epilogue_row_lanes][epilogue_columns];
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * epilogue_columns + threadIdx.x;
  Acc sum = 0;
  if (i < count_i) {
    for (std::int64_t j = threadIdx.y; j < count_j; j += epilogue_row_lanes) sum += load(i, j);
  }
  lane_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && i < count_i) {
    Acc total = lane_sums[0][threadIdx.x];
    for (int lane = 1; lane < epilogue_row_lanes; ++lane) total += lane_sums[lane][threadIdx.x];
    out[i] = total;
  }
}

/// Launches `apply_epilogue_kernel` on `stream`; `c` is C or D's previous contents (read when beta != 0),
/// `t` the product (null for a zero product).
template <class Acc, class DT>
void launch_apply_epilogue(const Acc* t, const DT* c, Acc beta, DT* d, const DT* bias, DT* aux,
                           std::int32_t* relu_mask, Acc* bias_grad, Epilogue epilogue, std::int64_t m,
                           std::int64_t n, cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  // grid.y is at most 65535: very tall problems give each block more rows.
  constexpr std::int64_t max_grid_y = 65535;
  const std::int64_t rows_per_block =
      bias_grad != nullptr ? m : std::max<std::int64_t>(64, (m + max_grid_y - 1) / max_grid_y);
  const dim3 grid(static_cast<unsigned>((n + epilogue_columns - 1) / epilogue_columns),
                  static_cast<unsigned>((m + rows_per_block - 1) / rows_per_block));
  const dim3 block(epilogue_columns, epilogue_row_lanes);
  apply_epilogue_kernel<<<grid, block, 0, stream>>>(t, c, beta, d, bias, aux, relu_mask, bias_grad, epilogue,
                                                    m, n, rows_per_block);
  MPX_CUDA_CHECK(cudaGetLastError());
}

/// Launches `reduce_operand_kernel` on `stream`.
template <class Acc, class ST, bool Tf32>
void launch_reduce_operand(const ST* x, Acc* out, std::int64_t count_i, std::int64_t count_j,
                           std::int64_t stride_i, std::int64_t stride_j, cudaStream_t stream) {
  if (count_i == 0) return;
  const std::int64_t per_block = stride_j == 1 ? epilogue_row_lanes : epilogue_columns;
  const auto blocks = static_cast<unsigned>((count_i + per_block - 1) / per_block);
  const dim3 block(epilogue_columns, epilogue_row_lanes);
  reduce_operand_kernel<Acc, ST, Tf32>
      <<<blocks, block, 0, stream>>>(x, out, count_i, count_j, stride_i, stride_j);
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

// Fills every slot `gemm<Compute, TD>` reads, for TD = storage_t<Compute> and TD = accumulate_t<Compute>,
// for each format of the list that the CUDA backend runs (`CudaFormat`).
template <class Compute>
void register_unfused_gemm_for() {
  if constexpr (CudaFormat<Compute>) {
    register_launcher(UnfusedEpilogueFor<Compute, storage_t<Compute>>{});
    register_launcher(UnfusedEpilogueFor<Compute, accumulate_t<Compute>>{});
    register_launcher(UnfusedOperandReductionFor<Compute>{});
  }
}
template <class... Computes>
bool register_unfused_gemm(FormatList<Computes...>) {
  (register_unfused_gemm_for<Computes>(), ...);
  return true;
}

// Every built-in format (numeric/tags.hpp) the CUDA backend runs. An inline variable: its initialiser
// runs once per program, during static initialisation, however many translation units include this
// header.
inline const bool unfused_gemm_registered = register_unfused_gemm(BuiltinFormats{});

}  // namespace mpx::cuda::detail
