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
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "mpx/backend/block_quantize_spec.hpp"
#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/fp8_cast.hpp"
#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/numeric/random.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/policy/block_scaling.hpp"
#include "mpx/policy/fp8_scaling.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

namespace detail {

// The largest |x| of a block, NaN when any element is NaN (infinity counts): the largest magnitude's
// bits, as integers (a NaN's are above infinity's), in one reduction that vectorises.
inline float block_amax(const float* values, std::int64_t count) {
  std::uint32_t largest = 0;
#ifdef _OPENMP
#pragma omp simd reduction(max : largest)
#endif
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint32_t magnitude = std::bit_cast<std::uint32_t>(values[i]) & 0x7fffffffu;
    largest = magnitude > largest ? magnitude : largest;
  }
  return largest > 0x7f800000u ? std::numeric_limits<float>::quiet_NaN() : std::bit_cast<float>(largest);
}

// codes[i] = round_stochastic<Format>(values[i] * factor, bits[i]), for a format with subnormals,
// branch-free so that the loop vectorises: with q = |v| / spacing (v's spacing in the format:
// 2^(max(exponent, smallest normal exponent) - mantissa bits), a power of two, so q is exact), the
// result is (floor(q) + up) * spacing, up when the bits are below floor((q - floor(q)) * 2^32), the
// largest value from it on; then encoded exactly. That is round_stochastic's rule (lo, hi and their
// difference are floor(q) * spacing, its successor and the spacing), bit for bit
// (tests/unit/block_scaled_gemm_test.cpp compares them).
template <NumericTag Format, class Bits>
void encode_block_stochastic(const float* values, std::int64_t count, float factor, const std::uint32_t* bits,
                             Bits* codes) {
  using L = mpx::detail::format_layout<Format>;
  static_assert(numeric_traits<Format>::has_subnormals && L::has_zero,
                "encode_block_stochastic: a format with zero and subnormals (FP8, FP6, FP4)");
  constexpr float largest = static_cast<float>(numeric_traits<Format>::max_finite);
  constexpr int smallest_normal_field = 127 + L::min_exponent;  // fp32 exponent field
  constexpr int m = L::mantissa_bits;
  constexpr std::int64_t chunk = 64;
  float rounded[chunk];
  for (std::int64_t begin = 0; begin < count; begin += chunk) {
    const std::int64_t length = std::min(chunk, count - begin);
    const float* chunk_values = values + begin;
    const std::uint32_t* chunk_bits = bits + begin;
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t i = 0; i < length; ++i) {
      const float v = chunk_values[i] * factor;
      const std::uint32_t u = std::bit_cast<std::uint32_t>(v);
      const float magnitude = std::bit_cast<float>(u & 0x7fffffffu);
      const int field = static_cast<int>((u >> 23) & 0xffu);
      const int spacing_field = (field > smallest_normal_field ? field : smallest_normal_field) - m;
      const float spacing = std::bit_cast<float>(static_cast<std::uint32_t>(spacing_field) << 23);
      const float inverse = std::bit_cast<float>(static_cast<std::uint32_t>(254 - spacing_field) << 23);
      // q < 2^(m + 2) below the largest value; beyond it (and for NaN) the result is not used, and q
      // is replaced by 0 so that its conversions stay defined. Floors are conversions to int32 of
      // non-negative values (std::floor keeps GCC from vectorising the loop).
      const float in_range = magnitude < largest ? magnitude : 0.0f;
      const float q = in_range * inverse;
      const float below = static_cast<float>(static_cast<std::int32_t>(q));
      // floor(fraction * 2^32) as two 16-bit halves, each exact in fp32 (an unsigned or a double
      // conversion would keep the loop from vectorising too).
      const float scaled = (q - below) * 0x1p16f;
      const auto high = static_cast<std::int32_t>(scaled);
      const auto low = static_cast<std::int32_t>((scaled - static_cast<float>(high)) * 0x1p16f);
      const std::uint32_t threshold =
          (static_cast<std::uint32_t>(high) << 16) | static_cast<std::uint32_t>(low);
      const float up = chunk_bits[i] < threshold ? 1.0f : 0.0f;
      const float result = (below + up) * spacing;
      // NaN and |v| >= largest: what the saturating encoder gives them (NaN: the largest or NaN).
      const float kept = magnitude < largest ? (result < largest ? result : largest) : magnitude;
      rounded[i] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(kept) | (u & 0x80000000u));
    }
    encode_block<Format>(rounded, length, 1.0f, codes + begin);
  }
}

// The random bits of elements [first, first + count) (random_bits' indexing: element i takes word
// i & 3 of Philox block i >> 2), into `words` (resized); returns where element `first`'s word is.
inline const std::uint32_t* element_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t first,
                                         std::int64_t count, std::vector<std::uint32_t>& words) {
  const std::uint64_t first_block = first >> 2,
                      end_block = (first + static_cast<std::uint64_t>(count) + 3) >> 2;
  words.resize(static_cast<std::size_t>(4 * (end_block - first_block)));
  philox_blocks(seed, stream, first_block, static_cast<std::int64_t>(end_block - first_block), words.data());
  return words.data() + (first & 3u);
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
/// [cols, rows] under `options.transpose` (the columnwise copy a GEMM reads along the other
/// dimension, quantized from the same source), into `out` under `Recipe`, in blocks of `block`; a
/// matrix whose extents are not multiples of the block's ends in partial blocks (as if padded with
/// zeros). With `options.hadamard`, each run of 16 values along a row is transformed first
/// (`random_hadamard_16`); with `options.stochastic`, elements are rounded stochastically
/// (`round_stochastic`, the bits of `options.seed` and `options.stream`) instead of to nearest even.
/// NVFP4's global scale comes from the amax of the whole (transformed) tensor, NaNs passed over (TE's
/// amax kernel).
/// @throws mpx::invalid_argument when a block extent is not positive.
template <class Recipe, FloatingElement S>
void quantize_blocks(const Tensor<S, Host>& x, BlockShape block, BlockQuantized<Recipe>& out,
                     const BlockQuantizeOptions& options = {}) {
  const bool transpose = options.transpose;
  const std::int64_t source_rows = x.shape().rank() == 0 ? 0 : x.shape().rows();
  const std::int64_t source_cols = x.shape().rank() == 0 ? 0 : x.shape().cols();
  const std::int64_t rows = transpose ? source_cols : source_rows;
  const std::int64_t cols = transpose ? source_rows : source_cols;
  if (block.rows <= 0 || block.cols <= 0 || (options.hadamard && block.cols % 16 != 0)) {
    throw invalid_argument(
        mpx::detail::concat("mpx::cpu::quantize_blocks<", Recipe::name, ">: the block ", block.rows, " x ",
                            block.cols, " must have positive extents",
                            options.hadamard ? ", its width a multiple of the transform's 16" : ""));
  }
  const Shape code_shape{rows, cols};
  if (out.codes.shape() != code_shape)
    out.codes = Tensor<Encoded<typename Recipe::element_format>, Host>(code_shape);
  const std::int64_t block_rows = (rows + block.rows - 1) / block.rows;
  const std::int64_t block_cols = (cols + block.cols - 1) / block.cols;
  const Shape scale_shape{block_rows, block_cols};
  if (out.scales.shape() != scale_shape)
    out.scales = Tensor<block_scale_storage_t<Recipe>, Host>(scale_shape);
  out.block = block;

  // The transposed or transformed matrix is made once, into scratch fp32 (the transpose gathered in
  // tiles, the transform applied in place); the plain one is read in place, a block's rows widened as
  // they are loaded.
  std::optional<detail::ScratchBuffer<float>> made;
  if (transpose || options.hadamard) {
    made.emplace(0, rows * cols);
    constexpr std::int64_t tile = 32;
    parallel_for_chunks(
        (rows + tile - 1) / tile, 1,
        [&, t = made->data(), source = x.data()](std::int64_t begin, std::int64_t end) {
          const std::int64_t n = rows, m = cols;  // t [n, m]: source^T (source [m, n]), or source itself
          for (std::int64_t r0 = begin * tile; r0 < std::min(n, end * tile); r0 += tile) {
            const std::int64_t r1 = std::min(n, r0 + tile);
            if (transpose) {
              for (std::int64_t c0 = 0; c0 < m; c0 += tile) {
                const std::int64_t c1 = std::min(m, c0 + tile);
                for (std::int64_t r = r0; r < r1; ++r) {
                  float* out_row = t + r * m;
                  for (std::int64_t c = c0; c < c1; ++c) out_row[c] = static_cast<float>(source[c * n + r]);
                }
              }
            } else {
              detail::widen_range<tag_of_t<S>>(source + r0 * m, t + r0 * m, 0, (r1 - r0) * m);
            }
            if (options.hadamard) {
              for (std::int64_t r = r0; r < r1; ++r)
                for (std::int64_t c = 0; c + 16 <= m; c += 16) random_hadamard_16(t + r * m + c);
            }
          }
        });
  }
  // Block b's values into `values` [height, width].
  const auto load_block = [&](std::int64_t row0, std::int64_t col0, std::int64_t height, std::int64_t width,
                              float* values) {
    for (std::int64_t r = 0; r < height; ++r) {
      if (made) {
        std::copy_n(made->data() + (row0 + r) * cols + col0, width, values + r * width);
      } else {
        detail::widen_range<tag_of_t<S>>(x.data() + (row0 + r) * cols + col0, values + r * width, 0, width);
      }
    }
  };
  // Elements [first, first + count) of the matrix (row-major, rows following each other) into `values`.
  const auto load_range = [&](std::int64_t first, std::int64_t count, float* values) {
    if (made) {
      std::copy_n(made->data() + first, count, values);
    } else {
      detail::widen_range<tag_of_t<S>>(x.data() + first, values, 0, count);
    }
  };
  // Where block b's first element is, and how wide it is (one-row blocks).
  const auto block_start = [&](std::int64_t b) {
    return (b / block_cols) * cols + (b % block_cols) * block.cols;
  };
  const auto block_width = [&](std::int64_t b) {
    return std::min(block.cols, cols - (b % block_cols) * block.cols);
  };
  const std::int64_t block_count = block_rows * block_cols;
  const std::int64_t block_elements = block.rows * block.cols;
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / block_elements);
  // NVFP4's global scale needs the whole (transformed) tensor's amax first: each block's amax is kept
  // from that pass.
  constexpr bool nvfp4 = std::is_same_v<typename Recipe::scale_format, Float8E4M3>;
  std::vector<float> block_amaxes(nvfp4 ? static_cast<std::size_t>(block_count) : 0);
  float global_encode_scale = 1.0f;
  out.global_decode_scale = 1.0f;
  if constexpr (nvfp4) {
    std::vector<float> chunk_largest(static_cast<std::size_t>((block_count + grain - 1) / grain), 0.0f);
    parallel_for_chunks(block_count, grain, [&](std::int64_t begin, std::int64_t end) {
      std::vector<float> values(static_cast<std::size_t>(block_elements));
      float largest = 0.0f;
      if (block.rows == 1) {  // the chunk's blocks are consecutive elements: loaded at once
        const std::int64_t first = block_start(begin),
                           count = block_start(end - 1) + block_width(end - 1) - first;
        values.resize(static_cast<std::size_t>(count));
        load_range(first, count, values.data());
        for (std::int64_t b = begin; b < end; ++b) {
          block_amaxes[static_cast<std::size_t>(b)] =
              detail::block_amax(values.data() + (block_start(b) - first), block_width(b));
        }
        largest = detail::largest_magnitude(values.data(), count, 0.0f);  // NaNs passed over
        chunk_largest[static_cast<std::size_t>(begin / grain)] = largest;
        return;
      }
      for (std::int64_t b = begin; b < end; ++b) {
        const std::int64_t row0 = (b / block_cols) * block.rows, col0 = (b % block_cols) * block.cols;
        const std::int64_t height = std::min(block.rows, rows - row0),
                           width = std::min(block.cols, cols - col0);
        load_block(row0, col0, height, width, values.data());
        block_amaxes[static_cast<std::size_t>(b)] = detail::block_amax(values.data(), height * width);
        largest = detail::largest_magnitude(values.data(), height * width, largest);  // NaNs passed over
      }
      chunk_largest[static_cast<std::size_t>(begin / grain)] = largest;
    });
    // The tensor's amax as Transformer Engine's amax kernel takes it: NaNs passed over (fmaxf).
    const float tensor_amax =
        chunk_largest.empty() ? 0.0f : *std::max_element(chunk_largest.begin(), chunk_largest.end());
    global_encode_scale = nvfp4_global_encode_scale(tensor_amax);
    out.global_decode_scale = 1.0f / global_encode_scale;
  }

  using Element = typename Recipe::element_format;
  using Bits = typename Encoded<Element>::bits_type;
  Bits* codes = &out.codes.data()->bits;
  static_assert(sizeof(Encoded<Element>) == sizeof(Bits));
  parallel_for_chunks(block_count, grain, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> values(static_cast<std::size_t>(block_elements));
    std::vector<std::uint32_t> words;  // stochastic rounding's bits
    if (block.rows == 1) {
      // One-row blocks: the chunk's elements are consecutive (rows follow each other), loaded, each
      // block's multiplied by its multiplier in place (the one fp32 product the encoders take), and
      // encoded in one pass.
      const std::int64_t first = block_start(begin),
                         count = block_start(end - 1) + block_width(end - 1) - first;
      values.resize(static_cast<std::size_t>(count));
      load_range(first, count, values.data());
      for (std::int64_t b = begin; b < end; ++b) {
        float* run = values.data() + (block_start(b) - first);
        const std::int64_t width = block_width(b);
        float amax;
        if constexpr (nvfp4) {
          amax = block_amaxes[static_cast<std::size_t>(b)];
        } else {
          amax = detail::block_amax(run, width);
        }
        const auto scale = detail::scale_of_block<Recipe>(amax, global_encode_scale);
        out.scales.data()[b] = scale.stored;
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t i = 0; i < width; ++i) run[i] = run[i] * scale.multiplier;
      }
      if (options.stochastic) {
        const std::uint32_t* bits = detail::element_bits(options.seed, options.stream,
                                                         static_cast<std::uint64_t>(first), count, words);
        detail::encode_block_stochastic<Element>(values.data(), count, 1.0f, bits, codes + first);
      } else {
        detail::encode_block<Element>(values.data(), count, 1.0f, codes + first);
      }
      return;
    }
    for (std::int64_t b = begin; b < end; ++b) {
      const std::int64_t row0 = (b / block_cols) * block.rows, col0 = (b % block_cols) * block.cols;
      const std::int64_t height = std::min(block.rows, rows - row0),
                         width = std::min(block.cols, cols - col0);
      load_block(row0, col0, height, width, values.data());
      float amax;
      if constexpr (nvfp4) {
        amax = block_amaxes[static_cast<std::size_t>(b)];
      } else {
        amax = detail::block_amax(values.data(), height * width);
      }
      const auto scale = detail::scale_of_block<Recipe>(amax, global_encode_scale);
      out.scales.data()[b] = scale.stored;
      for (std::int64_t r = 0; r < height; ++r) {
        const std::int64_t first = (row0 + r) * cols + col0;
        const float* row = values.data() + r * width;
        if (options.stochastic) {
          const std::uint32_t* bits = detail::element_bits(options.seed, options.stream,
                                                           static_cast<std::uint64_t>(first), width, words);
          detail::encode_block_stochastic<Element>(row, width, scale.multiplier, bits, codes + first);
        } else {
          detail::encode_block<Element>(row, width, scale.multiplier, codes + first);
        }
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
  const std::int64_t block_cols = (cols + q.block.cols - 1) / q.block.cols;
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
