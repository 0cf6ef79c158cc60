// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Block-scaled quantization on the CPU: a matrix into the element codes and per-block scales
/// of a block-scaling recipe (policy/block_scaling.hpp), its transpose's copy quantized from the same
/// source, and the values the codes stand for.
///
/// Each block's amax is the largest |x| in it, NaN when any element is NaN (torch.amax's rule, which
/// the MX and NVFP4 references use); the block's scale follows from it by the recipe's published rule;
/// each element is encoded as fp32(x * multiplier) rounded to nearest even into the element format,
/// saturating (`__NV_SATFINITE`; NaN stays NaN where the format has one, else becomes its largest value).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/fp8_cast.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/policy/block_scaling.hpp"
#include "mpx/policy/fp8_scaling.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief The extent of a block: `rows` x `cols` elements of the matrix being quantized, its columns
/// along the reduction dimension K. 1 x 32 (MX), 1 x 16 (NVFP4), 1 x 128 (FP8 activations and
/// gradients), 16 x 16 (NVFP4 weights), 128 x 128 (FP8 weights).
struct BlockShape {
  std::int64_t rows = 1;   ///< rows per block
  std::int64_t cols = 32;  ///< columns per block (along K)
};

/// @brief How a recipe stores a block's scale: E8M0 or E4M3 codes, or an fp32 (FP8 128-blocks).
template <class Recipe>
using block_scale_storage_t = std::conditional_t<std::is_same_v<typename Recipe::scale_format, Float>, float,
                                                 Encoded<typename Recipe::scale_format>>;

/// @brief A matrix quantized under `Recipe`: codes [rows, cols] and one scale per block
/// [rows / block rows, cols / block cols]. The value of code (r, c) is value(code) * value(scale of its
/// block) * `global_decode_scale` (NVFP4's 1 / S_enc; 1 for the others).
template <class Recipe>
struct BlockQuantized {
  Tensor<Encoded<typename Recipe::element_format>, Host> codes;  ///< [rows, cols]
  Tensor<block_scale_storage_t<Recipe>, Host> scales;            ///< a scale per block
  float global_decode_scale = 1.0f;                              ///< NVFP4's 1 / S_enc, else 1
  BlockShape block;                                              ///< the blocks' extent
};

namespace detail {

// The largest |x| of a block, NaN when any element is NaN (infinity counts).
inline float block_amax(const float* values, std::int64_t count) {
  float largest = 0.0f;
  bool nan = false;
  for (std::int64_t i = 0; i < count; ++i) {
    const float magnitude = std::fabs(values[i]);
    nan |= magnitude != magnitude;
    largest = magnitude > largest ? magnitude : largest;
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : largest;
}

// A block's scale (as the recipe stores it) and the multiplier its elements are encoded with.
template <class Recipe>
struct BlockScale {
  block_scale_storage_t<Recipe> stored;
  float multiplier;
};

template <class Recipe>
BlockScale<Recipe> scale_of_block(float amax, float global_encode_scale) {
  using Element = typename Recipe::element_format;
  if constexpr (std::is_same_v<typename Recipe::scale_format, Float8E8M0>) {
    const std::uint8_t code = mx_scale_code<Element>(amax, Recipe::rounding);
    return {Encoded<Float8E8M0>::from_bits(code), e8m0_element_multiplier(code)};
  } else if constexpr (std::is_same_v<typename Recipe::scale_format, Float8E4M3>) {
    const Encoded<Float8E4M3> scale = nvfp4_block_scale(amax, global_encode_scale);
    return {scale, nvfp4_element_multiplier(scale, global_encode_scale)};
  } else {
    // FP8 128-blocks: TE's compute_scale_from_amax; the stored scale is its inverse, what a code is
    // multiplied by.
    const float scale = current_scale(amax, static_cast<float>(numeric_traits<Element>::max_finite),
                                      Recipe::power_of_two_scales, 0.0f);
    return {1.0f / scale, scale};
  }
}

}  // namespace detail

/// @brief Quantizes `x`, viewed as a [rows, cols] matrix (cols its last dimension), or its transpose
/// [cols, rows] when `transpose` (the columnwise copy a GEMM reads along the other dimension,
/// quantized from the same source), into `out` under `Recipe`, in blocks of `block`.
/// NVFP4's global scale comes from the amax of the whole tensor, NaNs passed over (TE's amax kernel).
/// @throws mpx::shape_error when the quantized matrix's extents are not multiples of the block's.
template <class Recipe, FloatingElement S>
void quantize_blocks(const Tensor<S, Host>& x, BlockShape block, BlockQuantized<Recipe>& out,
                     bool transpose = false) {
  const std::int64_t source_rows = x.shape().rank() == 0 ? 0 : x.shape().rows();
  const std::int64_t source_cols = x.shape().rank() == 0 ? 0 : x.shape().cols();
  const std::int64_t rows = transpose ? source_cols : source_rows;
  const std::int64_t cols = transpose ? source_rows : source_cols;
  if (block.rows <= 0 || block.cols <= 0 || rows % block.rows != 0 || cols % block.cols != 0) {
    throw shape_error(mpx::detail::concat(
        "mpx::cpu::quantize_blocks<", Recipe::name, ">: the ", transpose ? "transposed " : "", "matrix [",
        rows, ", ", cols, "] of the tensor ", x.shape(), " is not made of ", block.rows, " x ", block.cols,
        " blocks: pad its extents to multiples of them"));
  }
  const Shape code_shape{rows, cols};
  if (out.codes.shape() != code_shape)
    out.codes = Tensor<Encoded<typename Recipe::element_format>, Host>(code_shape);
  const Shape scale_shape{rows / block.rows, cols / block.cols};
  if (out.scales.shape() != scale_shape)
    out.scales = Tensor<block_scale_storage_t<Recipe>, Host>(scale_shape);
  out.block = block;

  // The source in fp32, in the quantized matrix's order.
  std::vector<float> values(static_cast<std::size_t>(rows * cols));
  {
    std::vector<float> widened(static_cast<std::size_t>(x.numel()));
    detail::widen_range<tag_of_t<S>>(x.data(), widened.data(), 0, x.numel());
    if (transpose) {
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
          values[static_cast<std::size_t>(r * cols + c)] = widened[static_cast<std::size_t>(c * rows + r)];
    } else {
      values.swap(widened);
    }
  }
  float global_encode_scale = 1.0f;
  out.global_decode_scale = 1.0f;
  if constexpr (std::is_same_v<typename Recipe::scale_format, Float8E4M3>) {  // NVFP4
    // The tensor's amax as Transformer Engine's amax kernel takes it: NaNs passed over (fmaxf).
    global_encode_scale =
        nvfp4_global_encode_scale(detail::largest_magnitude(values.data(), rows * cols, 0.0f));
    out.global_decode_scale = 1.0f / global_encode_scale;
  }

  using Element = typename Recipe::element_format;
  using Bits = typename Encoded<Element>::bits_type;
  Bits* codes = &out.codes.data()->bits;
  static_assert(sizeof(Encoded<Element>) == sizeof(Bits));
  const std::int64_t block_cols = cols / block.cols;
  const std::int64_t block_count = (rows / block.rows) * block_cols;
  parallel_for_chunks(block_count, 16, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t b = begin; b < end; ++b) {
      const std::int64_t row0 = (b / block_cols) * block.rows;
      const std::int64_t col0 = (b % block_cols) * block.cols;
      float amax = 0.0f;  // over the block's row segments, NaN when any is
      for (std::int64_t r = 0; r < block.rows; ++r) {
        const float segment = detail::block_amax(values.data() + (row0 + r) * cols + col0, block.cols);
        amax = segment != segment || amax != amax ? std::numeric_limits<float>::quiet_NaN()
                                                  : std::max(amax, segment);
      }
      const auto scale = detail::scale_of_block<Recipe>(amax, global_encode_scale);
      out.scales.data()[b] = scale.stored;
      for (std::int64_t r = 0; r < block.rows; ++r) {
        detail::encode_block<Element>(values.data() + (row0 + r) * cols + col0, block.cols, scale.multiplier,
                                      codes + (row0 + r) * cols + col0);
      }
    }
  });
}

/// @brief The values the codes of `q` stand for, [rows, cols]: value(code) * value(block scale) *
/// `global_decode_scale`, left to right, each product rounded to fp32.
template <class Recipe>
Tensor<float, Host> dequantize_blocks(const BlockQuantized<Recipe>& q) {
  const std::int64_t rows = q.codes.shape().rows(), cols = q.codes.shape().cols();
  Tensor<float, Host> out(Shape{rows, cols});
  const std::int64_t block_cols = cols / q.block.cols;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto stored = q.scales.data()[(r / q.block.rows) * block_cols + c / q.block.cols];
      const float scale = static_cast<float>(stored);
      out.data()[r * cols + c] =
          static_cast<float>(q.codes.data()[r * cols + c]) * scale * q.global_decode_scale;
    }
  }
  return out;
}

}  // namespace mpx::cpu
