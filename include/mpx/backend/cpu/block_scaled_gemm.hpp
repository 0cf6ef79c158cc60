// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The block-scaled GEMM on the CPU: D = epilogue(alpha * A B^T + beta * C) where A [M, K] and
/// B [N, K] are matrices quantized along K under block-scaling recipes (block_quantize.hpp), each
/// block's values being its codes times its scale (times NVFP4's global scale), with the accumulator
/// model the caller names:
/// - `Fp32Accumulation`: every operand value decoded exactly (a code times its block's scale: at most
///   4 + 4 significant bits for NVFP4, a power of two times the code for MX and FP8 128-blocks with
///   power-of-two scales: at most 8 significant bits, so a bf16, and the CPU's bf16 GEMM multiplies
///   them exactly; a rounded product, in fp32, only for FP8 blocks with fp32 scales that are not
///   powers of two), the products summed in fp32 in the CPU GEMM's order, the global scales folded
///   into alpha as cuBLASLt takes them. A machine whose block-scaled MMA keeps every product
///   and sums in fp32 gives this up to the order of the sums.
/// - any other model (`HopperFp8FastAccumulation`, ...): each K-block's partial sum of code products
///   from zero by that model, then the partial times both blocks' scales (the scale product exact,
///   the scaled partial rounded once to fp32) added to an fp32 accumulator rounded to nearest: the
///   "promotion with scaling on CUDA cores" of DeepSeek-V3's FP8 GEMMs on Hopper (section 3.3.2)
///   and of blockwise-FP8 kernels generally.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "mpx/backend/block_quantize_spec.hpp"
#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/backend/cpu/gemm_accumulation.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/accumulation.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

namespace detail {

// The scale of block (r / block rows, c / block cols) of q, as a float (an fp32 block scale is stored
// as what a code is multiplied by).
template <class Recipe>
float block_scale_at(const BlockQuantized<Recipe>& q, std::int64_t r, std::int64_t block_col) {
  const std::int64_t block_cols = q.scales.shape().cols();
  return static_cast<float>(q.scales.data()[(r / q.block.rows) * block_cols + block_col]);
}

// q's values without its global scale (code times block scale) into `out` [rows, cols], as fp32 or,
// for T = bf16, as the top 16 bits of each fp32 value; returns false when some value has bits below
// them (is not a bf16), true otherwise.
// `out` is a view of this thread's scratch slot `slot` (0 or 1), kept between calls: fresh
// megabyte blocks would be page-faulted in at every call (as gemm.hpp's ScratchBuffer says).
template <class T, class Recipe>
bool block_scaled_values(const BlockQuantized<Recipe>& q, Tensor<T, Host>& out, int slot) {
  const std::int64_t rows = q.codes.shape().rows(), cols = q.codes.shape().cols();
  static thread_local std::vector<T> scratch[2];
  std::vector<T>& buffer = scratch[slot];
  if (buffer.size() < static_cast<std::size_t>(rows * cols))
    buffer.resize(static_cast<std::size_t>(rows * cols));
  out = Tensor<T, Host>::view(buffer.data(), Shape{rows, cols});
  std::vector<std::uint8_t> exact_rows(static_cast<std::size_t>(rows), 1);
  parallel_for_chunks(rows, rows_per_chunk(cols), [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> row(static_cast<std::size_t>(cols));
    for (std::int64_t r = begin; r < end; ++r) {
      widen_range<typename Recipe::element_format>(q.codes.data() + r * cols, row.data(), 0, cols);
      for (std::int64_t first = 0; first < cols; first += q.block.cols) {
        const float scale = block_scale_at(q, r, first / q.block.cols);
        const std::int64_t last = std::min(cols, first + q.block.cols);
        float* values = row.data();
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t c = first; c < last; ++c) values[c] = values[c] * scale;
      }
      if constexpr (std::is_same_v<T, float>) {
        std::copy_n(row.data(), cols, out.data() + r * cols);
      } else {
        static_assert(std::is_same_v<T, Eigen::bfloat16>);
        std::uint32_t below = 0;
        auto* bits = reinterpret_cast<std::uint16_t*>(out.data() + r * cols);
#ifdef _OPENMP
#pragma omp simd reduction(| : below)
#endif
        for (std::int64_t c = 0; c < cols; ++c) {
          const auto value = std::bit_cast<std::uint32_t>(row[static_cast<std::size_t>(c)]);
          bits[c] = static_cast<std::uint16_t>(value >> 16);
          below |= value & 0xffffu;
        }
        exact_rows[static_cast<std::size_t>(r)] = below == 0;
      }
    }
  });
  return std::all_of(exact_rows.begin(), exact_rows.end(), [](std::uint8_t exact) { return exact != 0; });
}

// Columns [first, first + width) of q's codes, as a contiguous [rows, width] matrix.
template <class Recipe>
Tensor<Encoded<typename Recipe::element_format>, Host> code_columns(const BlockQuantized<Recipe>& q,
                                                                    std::int64_t first, std::int64_t width) {
  const std::int64_t rows = q.codes.shape().rows(), cols = q.codes.shape().cols();
  Tensor<Encoded<typename Recipe::element_format>, Host> out(Shape{rows, width});
  for (std::int64_t r = 0; r < rows; ++r)
    std::copy_n(q.codes.data() + r * cols + first, width, out.data() + r * width);
  return out;
}

}  // namespace detail

/// @brief D = epilogue(alpha * A B^T + beta * C) for A [M, K] and B [N, K] quantized along K in blocks
/// of the same width, summed as `Accumulation` says (see the file's description); D holds fp32 or
/// any 16-bit format. The epilogues are `gemm`'s (bias, ReLU, GELU and their gradients' masks), except
/// the bias gradients, which would sum the quantized values: sum the tensor the operand was
/// quantized from instead.
/// @throws mpx::shape_error when the operands' K or their blocks' widths differ, or D is not [M, N];
///         mpx::invalid_argument for a transposed operand, a batch or a bias-gradient epilogue.
/// @code
/// // y = x W^T + b in bf16, both quantized to MXFP8 along K (1 x 32 blocks)
/// mpx::BlockQuantized<mpx::MxScaling<>> xq, wq;
/// mpx::cpu::quantize_blocks(x, {1, 32}, xq);
/// mpx::cpu::quantize_blocks(w, {1, 32}, wq);
/// mpx::cpu::gemm_block_scaled(xq, wq, y, {.epilogue = mpx::Epilogue::Bias}, {.bias = &b});
/// @endcode
template <AccumulationModel Accumulation = Fp32Accumulation, class RecipeA, class RecipeB, FloatingElement TD>
void gemm_block_scaled(const BlockQuantized<RecipeA>& a, const BlockQuantized<RecipeB>& b,
                       Tensor<TD, Host>& d, const GemmConfig& config,
                       const GemmOperands<TD, float>& operands = {}) {
  using ElementA = typename RecipeA::element_format;
  using ElementB = typename RecipeB::element_format;
  constexpr const char* where = "mpx::cpu::gemm_block_scaled";
  validate_block_scaled_gemm(where, a.codes.shape(), a.block, b.codes.shape(), b.block, config);
  const std::int64_t k = a.codes.shape().cols();
  GemmConfig product_config = config;
  product_config.transpose_b = Transpose::Yes;
  // NVFP4's global decode scales multiply alpha, as cuBLASLt's callers fold them in.
  const float alpha = config.alpha * a.global_decode_scale * b.global_decode_scale;
  if constexpr (std::is_same_v<Accumulation, Fp32Accumulation>) {
    // The values of every recipe's codes times power-of-two or E4M3 scales have at most 8 significant
    // bits: bf16 holds them exactly, and the bf16 GEMM's products of them are exact and summed in
    // fp32 (oneDNN's where its products are exact: gemm_kernel.hpp). Values that are not all bf16s
    // (FP8 blocks with scales that are not powers of two) take the fp32 GEMM.
    Tensor<Eigen::bfloat16, Host> a16, b16;
    if (detail::block_scaled_values(a, a16, 0) && detail::block_scaled_values(b, b16, 1)) {
      detail::gemm_widened<BFloat16, BFloat16, Fp32Accumulation>(where, a16, b16, d, product_config, operands,
                                                                 alpha);
    } else {
      Tensor<float, Host> a32, b32;
      detail::block_scaled_values(a, a32, 0);
      detail::block_scaled_values(b, b32, 1);
      detail::gemm_widened<Float, Float, Fp32Accumulation>(where, a32, b32, d, product_config, operands,
                                                           alpha);
    }
  } else {
    const std::int64_t m = a.codes.shape().rows(), n = b.codes.shape().rows(), width = a.block.cols;
    const auto per_block_sums = [&](float* values, const auto& finish_row) {
      std::fill(values, values + m * n, 0.0f);
      std::vector<float> partial(static_cast<std::size_t>(m * n));
      for (std::int64_t first = 0, block = 0; first < k; first += width, ++block) {
        const std::int64_t w = std::min(width, k - first);
        const auto a_block = detail::code_columns(a, first, w);
        const auto b_block = detail::code_columns(b, first, w);
        detail::modelled_product<Accumulation, ElementA, ElementB>(
            GemmShape{.m = m, .n = n, .k = w, .batch = 1}, GemmConfig{.transpose_b = Transpose::Yes},
            a_block.data(), m, w, b_block.data(), n, w, partial.data(), 1.0f, [](std::int64_t) {});
        parallel_for_chunks(m, rows_per_chunk(n), [&](std::int64_t begin, std::int64_t end) {
          for (std::int64_t i = begin; i < end; ++i) {
            const double a_scale = detail::block_scale_at(a, i, block);
            for (std::int64_t j = 0; j < n; ++j) {
              const double scale = a_scale * static_cast<double>(detail::block_scale_at(b, j, block));
              values[i * n + j] =
                  values[i * n + j] + static_cast<float>(static_cast<double>(partial[i * n + j]) * scale);
            }
          }
        });
      }
      parallel_for_chunks(m, rows_per_chunk(n), [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) {
          for (std::int64_t j = 0; j < n; ++j) values[i * n + j] = alpha * values[i * n + j];
          finish_row(i);
        }
      });
    };
    detail::gemm_widened<ElementA, ElementB, Accumulation>(where, a.codes, b.codes, d, product_config,
                                                           operands, alpha, per_block_sums);
  }
}

}  // namespace mpx::cpu
