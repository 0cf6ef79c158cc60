// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What a backend's block quantizer and block-scaled GEMM exchange: a matrix's element codes
/// and per-block scales under a block-scaling recipe (policy/block_scaling.hpp), the blocks' extent,
/// and how a quantization is asked for (transposed copy, stochastic rounding, Hadamard transform).

#include <cstdint>
#include <type_traits>

#include "mpx/backend/gemm_spec.hpp"
#include "mpx/config.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/numeric/tags.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief The extent of a block: `rows` x `cols` elements of the matrix being quantized, its columns
/// along the reduction dimension K. 1 x 32 (MX), 1 x 16 (NVFP4), 1 x 128 (FP8 activations and
/// gradients), 16 x 16 (NVFP4 weights), 128 x 128 (FP8 weights). A matrix whose extents are not
/// multiples of the block's ends in partial blocks, quantized as if padded with zeros.
struct BlockShape {
  std::int64_t rows = 1;   ///< rows per block
  std::int64_t cols = 32;  ///< columns per block (along K)
};

/// @brief How a recipe stores a block's scale: E8M0 or E4M3 codes, or an fp32 (FP8 128-blocks).
template <class Recipe>
using block_scale_storage_t = std::conditional_t<std::is_same_v<typename Recipe::scale_format, Float>, float,
                                                 Encoded<typename Recipe::scale_format>>;

/// @brief A matrix quantized under `Recipe`: codes [rows, cols] and one scale per block
/// [ceil(rows / block rows), ceil(cols / block cols)], row-major. The value of code (r, c) is
/// value(code) * value(scale of its block) * `global_decode_scale` (NVFP4's 1 / S_enc; 1 for the
/// others).
template <class Recipe, class Device = Host>
struct BlockQuantized {
  Tensor<Encoded<typename Recipe::element_format>, Device> codes;  ///< [rows, cols]
  Tensor<block_scale_storage_t<Recipe>, Device> scales;            ///< a scale per block
  float global_decode_scale = 1.0f;                                ///< NVFP4's 1 / S_enc, else 1
  BlockShape block;                                                ///< the blocks' extent
};

/// @brief How `quantize_blocks` quantizes a matrix.
struct BlockQuantizeOptions {
  /// Quantize the matrix's transpose [cols, rows] (the columnwise copy a GEMM reads along the
  /// other dimension), from the same source.
  bool transpose = false;
  /// Multiply each run of 16 consecutive values along the quantized matrix's rows by the 16 x 16
  /// random Hadamard matrix (`random_hadamard_16`) before quantizing: NVFP4's transform of the
  /// weight gradient's operands. Both operands of a GEMM must take it (it is orthogonal, so their
  /// product is unchanged); a last run shorter than 16 is left as it is, in both alike.
  bool hadamard = false;
  /// Round the elements stochastically (off: to nearest even): element i of the quantized matrix
  /// (row-major) is rounded up with the probability of its distance from the value below, using the
  /// 32 Philox bits `random_bits(seed, stream, i)` (numeric/random.hpp), so that the CPU and a GPU
  /// kernel draw the same bits for the same element.
  bool stochastic = false;
  std::uint64_t seed = 0;    ///< stochastic rounding's Philox key
  std::uint64_t stream = 0;  ///< its Philox stream: one per tensor and step
};

/// @brief Checks what every backend's block-scaled GEMM requires (`cpu::gemm_block_scaled`,
/// `cuda::gemm_block_scaled`): A's codes [M, K] and B's [N, K], quantized along K in blocks as wide,
/// read as they are (no transpose), one matrix, and no bias-gradient epilogue (its sums would be of
/// the quantized values: sum the tensor the operand was quantized from instead).
/// @throws mpx::invalid_argument for the layout or epilogue, mpx::shape_error for the operands,
///         each naming `where` and the values
inline void validate_block_scaled_gemm(const char* where, const Shape& a_codes, BlockShape a_block,
                                       const Shape& b_codes, BlockShape b_block, const GemmConfig& config) {
  if (config.transpose_a == Transpose::Yes || config.transpose_b == Transpose::Yes ||
      config.batch_count != 1 || config.epilogue == Epilogue::BGradA || config.epilogue == Epilogue::BGradB) {
    throw invalid_argument(detail::concat(
        where,
        ": A and B are both read along K as quantized ([M, K] and [N, K]), one matrix each, and a "
        "bias gradient is summed from the unquantized tensor; got transpose_a ",
        config.transpose_a == Transpose::Yes, ", transpose_b ", config.transpose_b == Transpose::Yes,
        ", batch_count ", config.batch_count, ", epilogue ", to_string(config.epilogue)));
  }
  if (a_codes.rank() != 2 || b_codes.rank() != 2 || b_codes.cols() != a_codes.cols() ||
      a_block.cols != b_block.cols) {
    throw shape_error(detail::concat(where, ": A's codes ", a_codes, " in ", a_block.rows, " x ",
                                     a_block.cols, " blocks and B's ", b_codes, " in ", b_block.rows, " x ",
                                     b_block.cols,
                                     " blocks must both be [rows, K] with blocks as wide along K"));
  }
}

/// @brief Where cuBLASLt reads the scale of block (row, col) of an operand's [rows, scale_cols] scales
/// under `VEC16_UE4M3` and `VEC32_UE8M0` (cuBLAS's "1D block scaling factors layout"): the scales are
/// padded to multiples of 128 rows and 4 columns, cut into 128 x 4 tiles stored one after another
/// (a tile row at a time), and each tile's 512 bytes hold row r's 4 scales at (r % 32) * 16 +
/// (r / 32) * 4, so that 32 rows' scales for 4 blocks of K sit in one 16-byte vector.
/// @param row        the operand's row (M or N)
/// @param col        the block's index along K
/// @param scale_cols the unpadded number of scale columns (blocks along K)
MPX_HOST_DEVICE constexpr std::int64_t swizzled_scale_offset(std::int64_t row, std::int64_t col,
                                                             std::int64_t scale_cols) {
  const std::int64_t tile_cols = (scale_cols + 3) / 4;
  const std::int64_t tile = (row / 128) * tile_cols + col / 4;
  return tile * 512 + (row % 32) * 16 + ((row % 128) / 32) * 4 + col % 4;
}

/// @brief Bytes of the swizzled scales of an operand with [rows, scale_cols] scales (padding
/// included).
MPX_HOST_DEVICE constexpr std::int64_t swizzled_scale_bytes(std::int64_t rows, std::int64_t scale_cols) {
  return ((rows + 127) / 128) * 128 * ((scale_cols + 3) / 4) * 4;
}

}  // namespace mpx
