// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `mpx::cuda::gemm_scaled`: the contract of `mpx::cpu::gemm_scaled` (backend/cpu/gemm.hpp)
/// through cuBLASLt's FP8 matmuls, on GPUs of compute capability 8.9 (Ada) or newer; the plan cache,
/// the algorithm heuristic and the unfused-epilogue fallback are `cuda::gemm`'s (gemm.hpp).
///
/// What cuBLASLt's FP8 matmuls require (cuBLAS documentation, `cublasLtMatmul`), and how mpx meets it:
/// - operands E4M3 x E4M3, E4M3 x E5M2 or E5M2 x E4M3 (E5M2 x E5M2 has no kernel: a static_assert),
///   compute type CUBLAS_COMPUTE_32F, scale type fp32; C and D bf16, fp16 or fp32 (or FP8, which mpx
///   does not produce).
/// - The "TN" layout: cuBLASLt's A transposed and its B not, both read along K. cuBLASLt's A is our B
///   and its B our A (gemm.hpp), so in mpx's row-major terms A is [M, K] with `transpose_a = No` and B
///   is stored [N, K] with `transpose_b = Yes`. Any other layout throws `mpx::invalid_argument`: an
///   operand a GEMM reads along its other dimension needs its transposed copy, which
///   `cuda::cast_transpose_scaled` writes in the same pass as the cast (backend/cuda/fp8_cast.cuh).
/// - The inverse scales are CUBLASLT_MATMUL_DESC_A_SCALE_POINTER and B_SCALE_POINTER: device floats
///   cuBLASLt multiplies the fp32 sums by, read when the GEMM runs (our A's is its B's). D_SCALE_POINTER
///   and AMAX_D_POINTER serve an FP8 D only (cuBLAS rejects the amax of a 16-bit or fp32 D with FP8
///   operands: pytorch/pytorch#122821), so the amax of D, where asked for (`d_amax`), is a pass of
///   `cuda::accumulate_amax` over D after the GEMM.
/// - Epilogues: the bias of a bf16 or fp16 D is of D's type, as mpx's; an fp32 D takes a bf16 bias in
///   cuBLASLt and an fp32 one in mpx, so cuBLASLt refuses it, and the epilogues it does not fuse with
///   FP8 operands (the ReLU mask, DRELU, ...) are refused too: those calls take `cuda::gemm`'s unfused
///   path, a plain FP8 product into fp32 scratch (the inverse scales applied) and mpx's epilogue kernel.
/// - Every pointer and leading dimension 16-byte aligned (K a multiple of 16, N of 8 for a bf16 D,
///   ...). A call cuBLASLt has no FP8 kernel for at all runs on the codes decoded into bf16 (exactly:
///   every E4M3 and E5M2 value is a bf16 value), multiplied by cuBLASLt's bf16 GEMM into fp32, scaled
///   and finished by the unfused epilogue kernel (`GemmPathCounts::decoded`), so that a layer of 10
///   outputs trains too; its products are then summed as 16-bit GEMMs sum them (close to fp32),
///   whatever the model.
///
/// Accumulation. cuBLASLt sums FP8 products either with fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM
/// on: the Tensor Cores' own accumulator throughout, which `HopperFp8FastAccumulation` models after
/// MMA-Sim) or, by default, with its split accumulator: partial sums of the Tensor Cores promoted into
/// fp32 registers at intervals (what `PromotedAccumulation<Interval, HopperFp8FastAccumulation>`
/// models: every 128 products by DeepSeek-V3's and Transformer Engine's account; cuBLAS documents
/// neither the interval nor the order of its products along k, which the first GPU run measures:
/// tests/cuda/fp8_cuda_test.cu). So FAST_ACCUM is on exactly when the GEMM's model is
/// `HopperFp8FastAccumulation`, and off under `PromotedAccumulation` and under `Fp32Accumulation`:
/// there is no round-to-nearest fp32 FP8 accumulator on the GPU, so `Fp32GemmAccumulation` runs there
/// as `HopperGemmAccumulation`'s dgrad and wgrad do, with the split accumulator, whose error the CPU's
/// fp32 sums leave out. Any other model has no GPU counterpart: a static_assert names the fix.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/gemm_scaled.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cublasLt.h>
#include <library_types.h>

#include "mpx/backend/cuda/context.hpp"
#include "mpx/backend/cuda/data_type.hpp"
#include "mpx/backend/cuda/fp8_cast.cuh"
#include "mpx/backend/cuda/gemm.hpp"
#include "mpx/backend/cuda/gemm_epilogue.cuh"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/accumulation.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// How cuBLASLt's FP8 GEMM sums as an accumulator model says: whether it can (`runs`) and with fast
// accumulation on or off (see the file comment).
template <class Model>
struct CublasFp8Accumulation {
  static constexpr bool runs = false;
  static constexpr bool fast = false;
};
template <>
struct CublasFp8Accumulation<HopperFp8FastAccumulation> {
  static constexpr bool runs = true;
  static constexpr bool fast = true;
};
template <std::size_t Interval>
struct CublasFp8Accumulation<PromotedAccumulation<Interval, HopperFp8FastAccumulation>> {
  static constexpr bool runs = true;
  static constexpr bool fast = false;
};
template <>
struct CublasFp8Accumulation<Fp32Accumulation> {
  static constexpr bool runs = true;
  static constexpr bool fast = false;
};

// The cuBLASLt FP8 type of a format kept in a byte (CUDA_R_8F_E4M3 or CUDA_R_8F_E5M2), or none.
template <class Format>
consteval bool is_cublaslt_fp8() {
  if constexpr (NumericTag<Format>) {
    const auto* type = mpx::detail::find_cuda_data_type(numeric_traits<Format>::cuda_data_type);
    return type != nullptr && (type->value == CUDA_R_8F_E4M3 || type->value == CUDA_R_8F_E5M2) &&
           mpx::detail::is_encoded_v<storage_t<Format>> && sizeof(storage_t<Format>) == 1;
  } else {
    return false;
  }
}
template <class Format>
inline constexpr cudaDataType_t cublaslt_fp8_type =
    mpx::detail::find_cuda_data_type(numeric_traits<Format>::cuda_data_type)->value;

// out[i] = in[i] as bf16: exact for every FP8 code.
template <class Format>
__global__ void __launch_bounds__(elementwise_threads)
    decode_to_bf16_kernel(const Encoded<Format>* __restrict__ in, storage_t<BFloat16>* __restrict__ out,
                          std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = round_to<BFloat16>(static_cast<float>(in[i]));
  }
}

// t[i] = (alpha * a_scale_inverse * b_scale_inverse) * t[i], the factor multiplied in that order in
// fp32, as `cpu::gemm_scaled` applies it to each sum. (A template, as every kernel in a header: one
// definition however many translation units include it.)
template <class Acc>
__global__ void __launch_bounds__(elementwise_threads)
    apply_inverse_scales_kernel(Acc* t, std::int64_t count, Acc alpha, const Acc* a_scale_inverse,
                                const Acc* b_scale_inverse) {
  const float factor = __fmul_rn(__fmul_rn(alpha, *a_scale_inverse), *b_scale_inverse);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    t[i] = __fmul_rn(factor, t[i]);
  }
}

// Codes of Format decoded into the bf16 buffer `out` (count elements), on the context's stream.
template <class Format>
void decode_to_bf16(const Encoded<Format>* in, storage_t<BFloat16>* out, std::int64_t count) {
  decode_to_bf16_kernel<Format>
      <<<elementwise_blocks(count), elementwise_threads, 0, stream()>>>(in, out, count);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::decode_to_bf16_kernel");
}

// `gemm_scaled` where cuBLASLt has no FP8 kernel for the call: A and B decoded into bf16, their
// product summed by cuBLASLt's bf16 GEMM into fp32 scratch, the inverse scales applied, then the
// epilogue and the rounding into D by the unfused path's kernel.
template <NumericTag AFormat, NumericTag BFormat, FloatingElement TD>
void gemm_scaled_decoded(const char* where, const GemmShape& g, const Tensor<storage_t<AFormat>, Cuda>& a,
                         const Tensor<storage_t<BFormat>, Cuda>& b, Tensor<TD, Cuda>& d,
                         const GemmConfig& config, const mpx::GemmOperands<TD, float, Cuda>& operands,
                         const float* a_scale_inverse, const float* b_scale_inverse, CudaContext& context) {
  using Bf16 = storage_t<BFloat16>;
  using DT = typename cuda_traits<tag_of_t<TD>>::device_type;
  const auto apply_epilogue = unfused_launcher(UnfusedEpilogue<float, DT>::launch, where, config.epilogue, g);
  DecodedOperands& decoded = gemm_decoded_operands()[context.device()];
  auto* a16 = static_cast<Bf16*>(decoded.a.get(static_cast<std::size_t>(a.numel()) * sizeof(Bf16)));
  auto* b16 = static_cast<Bf16*>(decoded.b.get(static_cast<std::size_t>(b.numel()) * sizeof(Bf16)));
  const std::int64_t outputs = g.batch * g.m * g.n;
  auto* t = static_cast<float*>(
      gemm_scratches()[context.device()].get(static_cast<std::size_t>(outputs) * sizeof(float)));
  decode_to_bf16<AFormat>(a.data(), a16, a.numel());
  decode_to_bf16<BFormat>(b.data(), b16, b.numel());
  // A plain bf16 GEMM: a fused one with an fp32 D never takes the unfused path, whose scratch holds t.
  const Tensor<Bf16, Cuda> a_view = Tensor<Bf16, Cuda>::view(a16, a.shape());
  const Tensor<Bf16, Cuda> b_view = Tensor<Bf16, Cuda>::view(b16, b.shape());
  Tensor<float, Cuda> t_view = Tensor<float, Cuda>::view(t, d.shape());
  GemmPathCounts& counts = gemm_path_counts_of_thread();
  const GemmPathCounts before = counts;
  cuda::gemm<BFloat16>(a_view, b_view, t_view,
                       GemmConfig{.transpose_a = config.transpose_a,
                                  .transpose_b = config.transpose_b,
                                  .batch_count = config.batch_count},
                       {}, context);
  counts = before;
  ++counts.decoded;
  apply_inverse_scales_kernel<float>
      <<<elementwise_blocks(outputs), elementwise_threads, 0, context.stream()>>>(
          t, outputs, config.alpha, a_scale_inverse, b_scale_inverse);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::apply_inverse_scales_kernel");
  const void* c = operands.c != nullptr ? operands.c->data() : d.data();
  apply_epilogue(t, static_cast<const DT*>(c), config.beta, reinterpret_cast<DT*>(d.data()),
                 operands.bias != nullptr ? reinterpret_cast<const DT*>(operands.bias->data()) : nullptr,
                 operands.aux != nullptr ? reinterpret_cast<DT*>(operands.aux->data()) : nullptr,
                 operands.relu_mask != nullptr ? operands.relu_mask->data() : nullptr, nullptr,
                 config.epilogue, g.batch * g.m, g.n, context.stream());
}

}  // namespace detail

/// @brief `cpu::gemm_scaled` on the GPU: D = epilogue(alpha * a_scale_inverse * b_scale_inverse *
/// op(A) op(B) + beta * C) with FP8 operands, through cuBLASLt (see the file comment for its rules),
/// queued on `context`'s stream with no host wait.
///
/// @tparam AFormat, BFormat the operands' FP8 formats (`mpx::Float8E4M3`, `mpx::Float8E5M2`; not both
///         E5M2)
/// @tparam Accumulation the accumulator model the GEMM is to follow: `HopperFp8FastAccumulation`
///         (cuBLASLt's fast accumulation), `PromotedAccumulation<N>` or `Fp32Accumulation` (its split
///         accumulator)
/// @param a [M, K] codes, not transposed
/// @param b [N, K] codes, `config.transpose_b = Yes`
/// @param d bf16, fp16 or fp32 (`beta` = 1 accumulates into it: the fp32 weight gradient)
/// @param config the layout, alpha, beta and epilogue (`cpu::gemm_scaled`'s)
/// @param operands the epilogue's bias, aux output, ReLU mask and C
/// @param a_scale_inverse a float in device memory, read when the GEMM runs: A's inverse scale
/// @param b_scale_inverse B's, likewise
/// @param d_amax when not null, a float in device memory (+0 or a positive amax) that the largest |D|
///        is accumulated into after the epilogue (a pass of `accumulate_amax` over D)
/// @param context the CUDA context whose stream and cuBLASLt handle the GEMM uses
/// @throws mpx::shape_error / mpx::invalid_argument as `cpu::gemm_scaled`, mpx::invalid_argument for
///         a layout cuBLASLt's FP8 GEMMs do not take, mpx::error on a device older than 8.9,
///         mpx::cuda_error when cuBLASLt fails.
/// @code
/// // y = (x8 w8^T) / (x_scale * w_scale) + b, in bf16: x8 [tokens, in] and w8 [out, in] in E4M3
/// mpx::cuda::gemm_scaled<mpx::Float8E4M3, mpx::Float8E4M3, mpx::HopperFp8FastAccumulation>(
///     x8, w8, y, {.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::Bias}, {.bias = &b},
///     x_scale_inverse, w_scale_inverse);
/// @endcode
template <NumericTag AFormat, NumericTag BFormat, AccumulationModel Accumulation = Fp32Accumulation,
          FloatingElement TD>
void gemm_scaled(const Tensor<storage_t<AFormat>, Cuda>& a, const Tensor<storage_t<BFormat>, Cuda>& b,
                 Tensor<TD, Cuda>& d, const GemmConfig& config, const GemmOperands<TD, float>& operands,
                 const float* a_scale_inverse, const float* b_scale_inverse, float* d_amax = nullptr,
                 CudaContext& context = cuda_context()) {
  static_assert(detail::is_cublaslt_fp8<AFormat>() && detail::is_cublaslt_fp8<BFormat>(),
                "mpx::cuda::gemm_scaled<AFormat, BFormat>: cuBLASLt's scaled GEMMs take FP8 operands, "
                "mpx::Float8E4M3 or mpx::Float8E5M2; multiply 16-bit operands with mpx::cuda::gemm");
  static_assert(!(detail::cublaslt_fp8_type<AFormat> == CUDA_R_8F_E5M2 &&
                  detail::cublaslt_fp8_type<BFormat> == CUDA_R_8F_E5M2),
                "mpx::cuda::gemm_scaled<Float8E5M2, Float8E5M2>: cuBLASLt has no E5M2 x E5M2 GEMM; one "
                "operand must be E4M3 (mpx::Fp8Hybrid casts inputs and weights to E4M3)");
  static_assert(std::is_same_v<TD, float> || sizeof(TD) == 2,
                "mpx::cuda::gemm_scaled: D holds fp32, bf16 or fp16");
  static_assert(detail::CublasFp8Accumulation<Accumulation>::runs,
                "mpx::cuda::gemm_scaled<AFormat, BFormat, Accumulation>: cuBLASLt's FP8 GEMM sums either as "
                "mpx::HopperFp8FastAccumulation (fast accumulation) or with its split accumulator "
                "(mpx::PromotedAccumulation<N> or mpx::Fp32Accumulation); this model has no GPU "
                "counterpart: train it on mpx::Host, or name one of those in the precision's "
                "mpx::GemmAccumulation");
  constexpr const char* where = "mpx::cuda::gemm_scaled";
  const GemmShape g = validate_gemm(where, a.shape(), b.shape(), d.shape(), config, operands);
  if (config.epilogue == Epilogue::BGradA || config.epilogue == Epilogue::BGradB) {
    // Their sums would be of the scaled codes; a bias gradient comes from the tensor before its cast.
    throw invalid_argument(mpx::detail::concat(
        where, ": epilogue ", to_string(config.epilogue),
        " sums an operand's scaled codes; sum the tensor the operand was cast from instead"));
  }
  if (config.transpose_a != Transpose::No || config.transpose_b != Transpose::Yes) {
    throw invalid_argument(mpx::detail::concat(
        where, ": A ", a.shape(), (config.transpose_a == Transpose::Yes ? " transposed" : " not transposed"),
        ", B ", b.shape(), (config.transpose_b == Transpose::Yes ? " transposed" : " not transposed"),
        ": cuBLASLt's FP8 GEMMs read both operands along K (A [M, K] not transposed, B stored [N, K] and "
        "transposed); pass the transposed copies of the operands (mpx::cuda::cast_transpose_scaled "
        "writes them with the cast)"));
  }
  const cudaDeviceProp& properties = context.properties();
  if (!fp8_gemm_capable(properties.major, properties.minor)) {
    throw error(mpx::detail::concat(where, ": FP8 GEMMs need a GPU of compute capability 8.9 or newer (Ada, ",
                                    "Hopper, Blackwell); device ", context.device(), " (", properties.name,
                                    ") has ", properties.major, ".", properties.minor,
                                    ". Train FP8 precisions on mpx::Host, or a 16-bit precision here"));
  }
  if (g.m == 0 || g.n == 0) return;
  detail::MatmulCall call =
      detail::operand_call(g, config, a.data(), a.shape(), detail::cublaslt_fp8_type<AFormat>, b.data(),
                           b.shape(), detail::cublaslt_fp8_type<BFormat>, CUBLAS_COMPUTE_32F);
  call.key.scaled = true;
  call.key.fast_accumulation = detail::CublasFp8Accumulation<Accumulation>::fast;
  call.a_scale_inverse = a_scale_inverse;
  call.b_scale_inverse = b_scale_inverse;
  const detail::GemmRun run = detail::run_gemm<float, TD, void>(where, g, config, operands, d, call, 1, 1,
                                                                /*product_fallback=*/true, context);
  if (run == detail::GemmRun::no_product_algorithm) {
    detail::gemm_scaled_decoded<AFormat, BFormat>(where, g, a, b, d, config, operands, a_scale_inverse,
                                                  b_scale_inverse, context);
  }
  if (d_amax != nullptr) accumulate_amax(d, d_amax);
}

}  // namespace mpx::cuda
