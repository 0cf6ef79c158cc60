// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `mpx::cuda::gemm_block_scaled`: the contract of `mpx::cpu::gemm_block_scaled`
/// (backend/cpu/block_scaled_gemm.hpp) on the GPU, under `Fp32Accumulation`: D = epilogue(alpha A B^T
/// + beta C) for A [M, K] and B [N, K] quantized along K under block-scaling recipes.
///
/// Two paths, chosen per call:
/// - **cuBLASLt's block-scaled GEMM** (CUDA 12.8 or newer, a GPU of compute capability 10.0 or
///   newer): MXFP8 (E4M3 or E5M2 codes, `CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0`), MXFP4 (E2M1,
///   VEC32_UE8M0) and NVFP4 (E2M1, `VEC16_UE4M3`). The scales are written in cuBLASLt's tiled layout
///   (`mpx::swizzled_scale_offset`: 128 x 4 tiles), a 16 x 16 weight block's scale repeated on each
///   of its 16 rows (Transformer Engine does the same: cuBLASLt's blocks are 1D); E2M1 codes are packed
///   two to a byte, the lower index in the low nibble; NVFP4's global decode scales multiply alpha.
///   cuBLASLt sums the products of each block with its scales inside the MMA, in fp32 or wider.
/// - **Decoded**, for every other call (a recipe, a GPU or a shape cuBLASLt's kernels do not take, e.g.
///   on Hopper, or K not a multiple of 32): each operand decoded into bf16 (code times block scale:
///   exact for every recipe's values, which have at most 8 significant bits, as on the CPU; FP8 blocks
///   with fp32 scales that are not powers of two are rounded there, where the CPU keeps them in fp32)
///   and multiplied by `cuda::gemm<BFloat16>`: exact products summed in fp32, the CPU's fast path.
///   `GemmPathCounts::decoded` counts these calls.
/// D holds bf16 or fp32. The 128-element FP8 block modes (VEC128_32F, BLK128x128_32F on sm_90) are not
/// used yet: FP8 128-blocks take the decoded path.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/gemm_block_scaled.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>
#include <type_traits>

#include <cublasLt.h>
#include <library_types.h>

#include "mpx/backend/block_quantize_spec.hpp"
#include "mpx/backend/cuda/context.hpp"
#include "mpx/backend/cuda/device_array.hpp"
#include "mpx/backend/cuda/gemm.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/accumulation.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/policy/block_scaling.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// What cuBLASLt's block-scaled GEMM takes of a recipe: `native` where it has a kernel for it, the
// operand type, the scale mode, and whether codes are packed two to a byte (FP4).
template <class Recipe>
struct CublasBlockScaling {
  static constexpr bool native = false;
};
#if CUBLAS_VERSION >= 120800
template <E8M0Rounding Rounding>
struct CublasBlockScaling<MxScaling<Float8E4M3, Rounding>> {
  static constexpr bool native = true, packed = false;
  static constexpr cudaDataType_t type = CUDA_R_8F_E4M3;
  static constexpr std::int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
};
template <E8M0Rounding Rounding>
struct CublasBlockScaling<MxScaling<Float8E5M2, Rounding>> {
  static constexpr bool native = true, packed = false;
  static constexpr cudaDataType_t type = CUDA_R_8F_E5M2;
  static constexpr std::int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
};
template <E8M0Rounding Rounding>
struct CublasBlockScaling<MxScaling<Float4E2M1, Rounding>> {
  static constexpr bool native = true, packed = true;
  static constexpr cudaDataType_t type = CUDA_R_4F_E2M1;
  static constexpr std::int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
};
template <bool TwoDimensionalWeights, bool StochasticGradients, bool HadamardWgrad>
struct CublasBlockScaling<Nvfp4Scaling<TwoDimensionalWeights, StochasticGradients, HadamardWgrad>> {
  static constexpr bool native = true, packed = true;
  static constexpr cudaDataType_t type = CUDA_R_4F_E2M1;
  static constexpr std::int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
};
#endif  // CUBLAS_VERSION >= 120800

// out[r, c] = bf16(code * block scale), row-major [rows, cols].
template <class Recipe>
__global__ void __launch_bounds__(elementwise_threads)
    decode_block_scaled_kernel(const Encoded<typename Recipe::element_format>* __restrict__ codes,
                               const block_scale_storage_t<Recipe>* __restrict__ scales, std::int64_t rows,
                               std::int64_t cols, BlockShape block, std::int64_t scale_cols,
                               storage_t<BFloat16>* __restrict__ out) {
  const std::int64_t count = rows * cols;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t r = i / cols, c = i % cols;
    const float scale = static_cast<float>(scales[(r / block.rows) * scale_cols + c / block.cols]);
    out[i] = round_to<BFloat16>(static_cast<float>(codes[i]) * scale);
  }
}

// The scales of an operand with `rows` rows in cuBLASLt's tiled layout (`swizzled_scale_offset`),
// each row taking the scale of its block (a 2D block's on each of its rows); `out` is zero-filled
// first, so that the padding holds zeros.
template <class Scale>
__global__ void __launch_bounds__(elementwise_threads)
    swizzle_block_scales_kernel(const Scale* __restrict__ scales, std::int64_t rows, std::int64_t block_rows,
                                std::int64_t scale_cols, Scale* __restrict__ out) {
  const std::int64_t count = rows * scale_cols;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t r = i / scale_cols, c = i % scale_cols;
    out[swizzled_scale_offset(r, c, scale_cols)] = scales[(r / block_rows) * scale_cols + c];
  }
}

// E2M1 codes (one a byte) packed two to a byte, element 2i in the low nibble: `count` (even) codes.
// (A template, as every kernel in a header: one definition however many translation units include it.)
template <class Byte>
__global__ void __launch_bounds__(elementwise_threads)
    pack_fp4_kernel(const Byte* __restrict__ codes, std::int64_t count, Byte* __restrict__ out) {
  const std::int64_t pairs = count / 2;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs;
       i += stride) {
    out[i] = static_cast<Byte>((codes[2 * i] & 0x0Fu) | ((codes[2 * i + 1] & 0x0Fu) << 4));
  }
}

// q's values (code times block scale) as bf16 [rows, cols], in `out` (allocated here).
template <class Recipe>
void decode_block_scaled(const BlockQuantized<Recipe, Cuda>& q, Tensor<storage_t<BFloat16>, Cuda>& out,
                         CudaContext& context) {
  const std::int64_t rows = q.codes.shape().rows(), cols = q.codes.shape().cols();
  out = Tensor<storage_t<BFloat16>, Cuda>(Shape{rows, cols});
  decode_block_scaled_kernel<Recipe>
      <<<elementwise_blocks(rows * cols), elementwise_threads, 0, context.stream()>>>(
          q.codes.data(), q.scales.data(), rows, cols, q.block, q.scales.shape().cols(), out.data());
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::decode_block_scaled_kernel");
}

// q's operand as cuBLASLt's block-scaled GEMM reads it: its codes (packed for FP4) and its scales in
// the tiled layout, in `codes` and `scales` (allocated here). Returns the codes' pointer.
template <class Recipe>
const void* cublaslt_block_operand(const BlockQuantized<Recipe, Cuda>& q, DeviceArray<std::uint8_t>& codes,
                                   DeviceArray<std::uint8_t>& scales, CudaContext& context) {
  using Scale = block_scale_storage_t<Recipe>;
  static_assert(sizeof(Scale) == 1, "cuBLASLt's 1D block scales are one byte each (UE8M0, UE4M3)");
  const std::int64_t rows = q.codes.shape().rows(), scale_cols = q.scales.shape().cols();
  scales = DeviceArray<std::uint8_t>(static_cast<std::size_t>(swizzled_scale_bytes(rows, scale_cols)));
  MPX_CUDA_CHECK(cudaMemsetAsync(scales.data(), 0, scales.size(), context.stream()));
  swizzle_block_scales_kernel<std::uint8_t>
      <<<elementwise_blocks(rows * scale_cols), elementwise_threads, 0, context.stream()>>>(
          reinterpret_cast<const std::uint8_t*>(q.scales.data()), rows, q.block.rows, scale_cols,
          scales.data());
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::swizzle_block_scales_kernel");
  if constexpr (CublasBlockScaling<Recipe>::packed) {
    const std::int64_t count = q.codes.numel();
    codes = DeviceArray<std::uint8_t>(static_cast<std::size_t>(count / 2));
    pack_fp4_kernel<std::uint8_t>
        <<<elementwise_blocks(count / 2), elementwise_threads, 0, context.stream()>>>(
            reinterpret_cast<const std::uint8_t*>(q.codes.data()), count, codes.data());
    MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::pack_fp4_kernel");
    return codes.data();
  } else {
    return q.codes.data();
  }
}

}  // namespace detail

/// @brief Whether cuBLASLt runs block-scaled GEMMs of these recipes natively on a device of compute
/// capability major.minor (the rest take the decoded path; see the file comment).
template <class RecipeA, class RecipeB>
constexpr bool native_block_scaled_gemm(int major, int /*minor*/) {
  if constexpr (detail::CublasBlockScaling<RecipeA>::native && detail::CublasBlockScaling<RecipeB>::native) {
    return major >= 10 &&
           detail::CublasBlockScaling<RecipeA>::mode == detail::CublasBlockScaling<RecipeB>::mode;
  } else {
    return false;
  }
}

/// @brief `cpu::gemm_block_scaled<Fp32Accumulation>` on the GPU (see the file comment for its two
/// paths), queued on `context`'s stream.
/// @param a [M, K] codes and scales quantized along K (`BlockQuantized<RecipeA, Cuda>`)
/// @param b [N, K] likewise, in blocks as wide along K
/// @param d [M, N] bf16 or fp32 (`beta` = 1 accumulates into it)
/// @param config alpha, beta and the epilogue (`cpu::gemm_block_scaled`'s; no transposes)
/// @param operands the epilogue's bias, aux output, ReLU mask and C
/// @param context the CUDA context whose stream and cuBLASLt handle the GEMM uses
/// @throws as `cpu::gemm_block_scaled`; mpx::cuda_error when cuBLASLt fails.
template <AccumulationModel Accumulation = Fp32Accumulation, class RecipeA, class RecipeB, FloatingElement TD>
void gemm_block_scaled(const BlockQuantized<RecipeA, Cuda>& a, const BlockQuantized<RecipeB, Cuda>& b,
                       Tensor<TD, Cuda>& d, const GemmConfig& config,
                       const GemmOperands<TD, float>& operands = {}, CudaContext& context = cuda_context()) {
  static_assert(std::is_same_v<Accumulation, Fp32Accumulation>,
                "mpx::cuda::gemm_block_scaled<Accumulation>: the GPU sums block-scaled products as cuBLASLt "
                "or its bf16 GEMM does (mpx::Fp32Accumulation); per-block accumulator models "
                "(mpx::HopperBlockScaledAccumulation) run on mpx::Host");
  static_assert(std::is_same_v<TD, float> || std::is_same_v<TD, storage_t<BFloat16>>,
                "mpx::cuda::gemm_block_scaled: D holds fp32 or bf16");
  constexpr const char* where = "mpx::cuda::gemm_block_scaled";
  validate_block_scaled_gemm(where, a.codes.shape(), a.block, b.codes.shape(), b.block, config);
  const std::int64_t k = a.codes.shape().cols();
  GemmConfig product = config;
  product.transpose_b = Transpose::Yes;
  product.alpha = config.alpha * a.global_decode_scale * b.global_decode_scale;
  const GemmShape g = validate_gemm(where, a.codes.shape(), b.codes.shape(), d.shape(), product, operands);
  if (g.m == 0 || g.n == 0) return;
  const cudaDeviceProp& properties = context.properties();
  // cuBLASLt's blocks are 1D along K, whole (K a multiple of the 128 elements of a scale tile's 4
  // blocks of 32, which the 16-element NVFP4 blocks' alignment needs too).
  const bool native = native_block_scaled_gemm<RecipeA, RecipeB>(properties.major, properties.minor) &&
                      k % 128 == 0 && a.block.cols == RecipeA::block_size;
  if constexpr (detail::CublasBlockScaling<RecipeA>::native && detail::CublasBlockScaling<RecipeB>::native) {
    if (native) {
      using ScalingA = detail::CublasBlockScaling<RecipeA>;
      using ScalingB = detail::CublasBlockScaling<RecipeB>;
      DeviceArray<std::uint8_t> a_codes, a_scales, b_codes, b_scales;
      const void* a_data = detail::cublaslt_block_operand(a, a_codes, a_scales, context);
      const void* b_data = detail::cublaslt_block_operand(b, b_codes, b_scales, context);
      detail::MatmulCall call =
          detail::operand_call(g, product, a_data, a.codes.shape(), ScalingA::type, b_data, b.codes.shape(),
                               ScalingB::type, CUBLAS_COMPUTE_32F);
      call.key.scaled = true;
      call.key.a_scale_mode = ScalingA::mode;
      call.key.b_scale_mode = ScalingB::mode;
      call.a_scale_inverse = a_scales.data();
      call.b_scale_inverse = b_scales.data();
      const detail::GemmRun run =
          detail::run_gemm<float, TD, void>(where, g, product, operands, d, call, 1, 1,
                                            /*product_fallback=*/true, context);
      if (run != detail::GemmRun::no_product_algorithm) {
        // The arrays above are freed when this returns, in stream order (cudaFreeAsync): after the GEMM.
        return;
      }
    }
  }
  Tensor<storage_t<BFloat16>, Cuda> a16, b16;
  detail::decode_block_scaled(a, a16, context);
  detail::decode_block_scaled(b, b16, context);
  GemmPathCounts& counts = detail::gemm_path_counts_of_thread();
  const GemmPathCounts before = counts;
  cuda::gemm<BFloat16>(a16, b16, d, product, operands, context);
  counts = before;
  ++counts.decoded;
}

}  // namespace mpx::cuda
