// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The casts into FP8 GEMM operands on the GPU, with the CPU's results bit for bit
/// (backend/cpu/fp8_cast.hpp): a tensor's amax, the tensor times its scale cast into an 8-bit format,
/// and that cast fused with its transpose, which cuBLASLt's FP8 GEMMs need for operands they read
/// along the other dimension (both operands K-major: backend/cuda/gemm_scaled.cuh).
///
/// Each code is `Encoded<Format>::rounded<Overflow::Saturate>(x * scale)` run as device code: the
/// product rounded to fp32, then to nearest even, saturating at the format's largest finite value,
/// a NaN kept with its sign (not the GPU multiply's canonical +NaN); the CPU's branch-free encoder is that
/// same function bit for bit (tests/unit/fp8_linear_test.cpp), and tests/cuda/fp8_cuda_test.cu compares the
/// two backends. An amax is the largest |x| of the tensor as it was (NaN passed over, infinities counted),
/// taken as the largest bit pattern of |x| (non-negative floats order as their bits do): a block reduces its
/// threads' and folds the result into `*amax` with one `atomicMax` on those bits, so the result does
/// not depend on the grid or the order of the blocks. Everything is queued on the context's stream:
/// the scale is read and the amax written when the kernel runs, with no host wait.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/fp8_cast.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <cstdint>

#include "mpx/backend/cuda/context.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/error.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// |x|'s bit pattern, 0 for a NaN: what an amax is the largest of.
__device__ inline std::uint32_t amax_bits(float x) {
  const std::uint32_t magnitude = __float_as_uint(x) & 0x7fffffffu;
  return magnitude <= 0x7f800000u ? magnitude : 0u;
}

// The largest `bits` of the block's `Threads` threads folded into *amax (a non-negative float):
// shuffles within each warp, the warps' maxima through shared memory, one atomicMax on the bits.
// Every thread of the block calls it.
template <int Threads>
__device__ inline void fold_amax(std::uint32_t bits, float* amax) {
  static_assert(Threads % 32 == 0 && Threads <= 1024, "fold_amax: whole warps");
  __shared__ std::uint32_t warp_largest[Threads / 32];
  for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
  const unsigned thread = threadIdx.x + threadIdx.y * blockDim.x;
  if (thread % 32 == 0) warp_largest[thread / 32] = bits;
  __syncthreads();
  if (thread == 0) {
    std::uint32_t largest = warp_largest[0];
    for (int warp = 1; warp < Threads / 32; ++warp) largest = max(largest, warp_largest[warp]);
    if (largest != 0) atomicMax(reinterpret_cast<unsigned int*>(amax), largest);
  }
}

// The code of x * scale in Format: the CPU's rule, the product rounded to fp32 first. A NaN x is
// encoded as it is: the GPU's multiply returns its canonical NaN, whose sign is +, where the CPU's
// keeps x's NaN, sign included (a -NaN's E4M3 code is 0xff, not 0x7f; the H200 showed it).
template <class Format>
__device__ inline Encoded<Format> encode_scaled(float x, float scale) {
  return Encoded<Format>::template rounded<Overflow::Saturate>(isnan(x) ? x : __fmul_rn(x, scale));
}

// *amax = max(*amax, the largest |x[i]|) over a grid-stride loop.
template <class S>
__global__ void __launch_bounds__(elementwise_threads)
    accumulate_amax_kernel(const S* __restrict__ x, std::int64_t count, float* amax) {
  std::uint32_t largest = 0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    largest = max(largest, amax_bits(static_cast<float>(x[i])));
  }
  fold_amax<elementwise_threads>(largest, amax);
}

// out[i] = fp8(x[i] * *scale), and with `Amax` the largest |x[i]| folded into *amax.
template <class Format, class S, bool Amax>
__global__ void __launch_bounds__(elementwise_threads)
    cast_scaled_kernel(const S* __restrict__ x, const float* scale, Encoded<Format>* __restrict__ out,
                       std::int64_t count, float* amax) {
  const float factor = *scale;
  std::uint32_t largest = 0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const float value = static_cast<float>(x[i]);
    if constexpr (Amax) largest = max(largest, amax_bits(value));
    out[i] = encode_scaled<Format>(value, factor);
  }
  if constexpr (Amax) fold_amax<elementwise_threads>(largest, amax);
}

// The transpose's tiles: 32 x 32 elements, a block of 32 x 8 threads taking 4 rows each.
inline constexpr int transpose_tile = 32;
inline constexpr int transpose_lanes = 8;

// For x viewed as rows x cols: out[r][c] = out_transposed[c][r] = fp8(x[r][c] * *scale), and with
// `Amax` the largest |x| folded into *amax. Block (bx, by) casts tiles (bx, by + k gridDim.y): it
// reads each tile's rows (coalesced), writes them to `out`, keeps the codes in shared memory and
// writes the tile's columns as rows of `out_transposed` (coalesced too).
template <class Format, class S, bool Amax>
__global__ void __launch_bounds__(transpose_tile* transpose_lanes)
    cast_transpose_scaled_kernel(const S* __restrict__ x, const float* scale,
                                 Encoded<Format>* __restrict__ out,
                                 Encoded<Format>* __restrict__ out_transposed, std::int64_t rows,
                                 std::int64_t cols, float* amax) {
  // Codes widened to words, with a column of padding: a warp reads a tile column without bank
  // conflicts.
  __shared__ std::uint32_t tile[transpose_tile][transpose_tile + 1];
  using Bits = typename Encoded<Format>::bits_type;
  const float factor = *scale;
  std::uint32_t largest = 0;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * transpose_tile + threadIdx.x;
  const std::int64_t row_tiles = (rows + transpose_tile - 1) / transpose_tile;
  for (std::int64_t row_tile = blockIdx.y; row_tile < row_tiles; row_tile += gridDim.y) {
    const std::int64_t first_row = row_tile * transpose_tile;
    for (int r = static_cast<int>(threadIdx.y); r < transpose_tile; r += transpose_lanes) {
      const std::int64_t row = first_row + r;
      if (row < rows && col < cols) {
        const float value = static_cast<float>(x[row * cols + col]);
        if constexpr (Amax) largest = max(largest, amax_bits(value));
        const Encoded<Format> code = encode_scaled<Format>(value, factor);
        out[row * cols + col] = code;
        tile[r][threadIdx.x] = code.bits;
      }
    }
    __syncthreads();
    // Thread x now writes row first_row + x of the tile's columns.
    const std::int64_t row = first_row + threadIdx.x;
    for (int c = static_cast<int>(threadIdx.y); c < transpose_tile; c += transpose_lanes) {
      const std::int64_t column = static_cast<std::int64_t>(blockIdx.x) * transpose_tile + c;
      if (row < rows && column < cols) {
        out_transposed[column * rows + row] =
            Encoded<Format>::from_bits(static_cast<Bits>(tile[threadIdx.x][c]));
      }
    }
    __syncthreads();  // before the next tile overwrites the shared one
  }
  if constexpr (Amax) fold_amax<transpose_tile * transpose_lanes>(largest, amax);
}

}  // namespace detail

/// @brief `*amax` = max(`*amax`, the largest |x[i]|): NaNs passed over, infinities counted, as
/// `cpu::accumulate_amax`. Queued on the context's stream.
/// @param x    any floating tensor (fp32, bf16, fp16) on the GPU
/// @param amax a float in device memory holding +0 or a positive value (an amax so far)
template <FloatingElement S>
void accumulate_amax(const Tensor<S, Cuda>& x, float* amax) {
  const std::int64_t count = x.numel();
  if (count == 0) return;
  detail::accumulate_amax_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                   detail::stream()>>>(x.data(), count, amax);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::accumulate_amax_kernel");
}

/// @brief out[i] = fp8(x[i] * scale), as `cpu::cast_scaled` computes it bit for bit: the product
/// in fp32, rounded to nearest even into `Format`, saturating at its largest finite value (NaN stays
/// NaN); with `amax`, also `accumulate_amax(x, amax)` in the same pass. Queued on the context's
/// stream.
/// @param x     the tensor to cast (fp32, bf16, fp16)
/// @param scale a float in device memory (the recipe's, read when the cast runs)
/// @param out   the codes, of `x`'s shape
/// @param amax  a float in device memory that the largest |x[i]| is accumulated into, or null
/// @throws mpx::shape_error when `out`'s shape is not `x`'s.
template <NumericTag Format, FloatingElement S>
void cast_scaled(const Tensor<S, Cuda>& x, const float* scale, Tensor<Encoded<Format>, Cuda>& out,
                 float* amax = nullptr) {
  require_shape("mpx::cuda::cast_scaled", "the output", out.shape(), x.shape());
  const std::int64_t count = x.numel();
  if (count == 0) return;
  const unsigned blocks = detail::elementwise_blocks(count);
  if (amax != nullptr) {
    detail::cast_scaled_kernel<Format, S, true><<<blocks, detail::elementwise_threads, 0, detail::stream()>>>(
        x.data(), scale, out.data(), count, amax);
  } else {
    detail::cast_scaled_kernel<Format, S, false>
        <<<blocks, detail::elementwise_threads, 0, detail::stream()>>>(x.data(), scale, out.data(), count,
                                                                       amax);
  }
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::cast_scaled_kernel");
}

/// @brief `cast_scaled(x, scale, out, amax)` and its transpose in one pass: with `x` viewed as a
/// [rows, cols] matrix (cols its last dimension, rows the product of the others),
/// out_transposed[c][r] = out[r][c]. What an FP8 GEMM operand read along its rows by one GEMM and
/// along its columns by another needs on the GPU, where cuBLASLt reads both FP8 operands K-major.
/// @param x              the tensor to cast (fp32, bf16, fp16)
/// @param scale          a float in device memory
/// @param out            the codes, of `x`'s shape
/// @param out_transposed the codes transposed, [cols, rows]
/// @param amax           a float in device memory that the largest |x| is accumulated into, or null
/// @throws mpx::shape_error naming the shapes when `out`'s is not `x`'s or `out_transposed`'s is not
///         [cols, rows].
template <NumericTag Format, FloatingElement S>
void cast_transpose_scaled(const Tensor<S, Cuda>& x, const float* scale, Tensor<Encoded<Format>, Cuda>& out,
                           Tensor<Encoded<Format>, Cuda>& out_transposed, float* amax = nullptr) {
  constexpr const char* where = "mpx::cuda::cast_transpose_scaled";
  const std::int64_t rows = x.shape().rows(), cols = x.shape().cols();
  require_shape(where, "the output", out.shape(), x.shape());
  if (!(out_transposed.shape() == Shape{cols, rows})) {
    throw shape_error(mpx::detail::concat(where, ": the transposed output's shape ", out_transposed.shape(),
                                          " is not ", Shape{cols, rows}, ", the transpose of the input ",
                                          x.shape(), " viewed as [", rows, ", ", cols, "]"));
  }
  if (rows == 0 || cols == 0) return;
  constexpr std::int64_t max_grid_y = 65535;  // further row tiles are taken by the same blocks
  const dim3 grid(static_cast<unsigned>((cols + detail::transpose_tile - 1) / detail::transpose_tile),
                  static_cast<unsigned>(std::min<std::int64_t>(
                      (rows + detail::transpose_tile - 1) / detail::transpose_tile, max_grid_y)));
  const dim3 block(detail::transpose_tile, detail::transpose_lanes);
  if (amax != nullptr) {
    detail::cast_transpose_scaled_kernel<Format, S, true><<<grid, block, 0, detail::stream()>>>(
        x.data(), scale, out.data(), out_transposed.data(), rows, cols, amax);
  } else {
    detail::cast_transpose_scaled_kernel<Format, S, false><<<grid, block, 0, detail::stream()>>>(
        x.data(), scale, out.data(), out_transposed.data(), rows, cols, amax);
  }
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::cast_transpose_scaled_kernel");
}

}  // namespace mpx::cuda
