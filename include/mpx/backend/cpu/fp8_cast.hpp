// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The casts into an FP8 GEMM operand: a tensor's amax, and the tensor times its scale rounded
/// into an 8-bit format, as Transformer Engine's cast kernels compute them.
///
/// TE records the amax of the tensor as it was (not of the scaled values), passing NaNs over as
/// `fmaxf` does, and writes fp8(x * scale): the product rounded to fp32, then encoded to nearest,
/// ties to even, saturating at the format's largest value (`__NV_SATFINITE`). An amax is a maximum,
/// so its bits do not depend on the order of the comparisons or the number of threads.

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

namespace detail {

// max(start, the largest |values[i]|), NaNs passed over; start >= 0. As the largest bit pattern of
// |x| (non-negative floats order as their bits do), NaN patterns skipped: an integer maximum, which
// vectorises where a float one does not without -ffast-math.
inline float largest_magnitude(const float* values, std::int64_t count, float start) {
  std::uint32_t largest = std::bit_cast<std::uint32_t>(start);
#ifdef _OPENMP
#pragma omp simd reduction(max : largest)
#endif
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint32_t magnitude = std::bit_cast<std::uint32_t>(values[i]) & 0x7fffffffu;
    const std::uint32_t counted = magnitude <= 0x7f800000u ? magnitude : 0u;  // a NaN counts as 0
    largest = counted > largest ? counted : largest;
  }
  return std::bit_cast<float>(largest);
}

// The largest |x[i]| over [begin, end), NaNs passed over; 0 for none.
template <class S>
float amax_of_range(const S* x, std::int64_t begin, std::int64_t end) {
  float widened[conversion_block];
  float largest = 0.0f;
  for (std::int64_t first = begin; first < end; first += conversion_block) {
    const std::int64_t length = std::min(conversion_block, end - first);
    widen_range<tag_of_t<S>>(x + first, widened, 0, length);
    largest = largest_magnitude(widened, length, largest);
  }
  return largest;
}

// Whether encode_saturating's branch-free rule applies to Format: it has subnormals (the rule
// rounds to multiples of the smallest one), its smallest subnormal's reciprocal is a normal float,
// and its subnormal codes stay below 2^22 (where adding 2^23 rounds to an integer).
template <NumericTag Format>
inline constexpr bool branch_free_encoding =
    (numeric_traits<Format>::has_subnormals) && numeric_traits<Format>::mantissa_bits >= 1 &&
    numeric_traits<Format>::mantissa_bits <= 21 &&
    numeric_traits<Format>::exponent_bias - 1 + numeric_traits<Format>::mantissa_bits <= 127;

// The code of Format that x rounds to, saturating: mpx::detail::encode_bits<Format, true>, bit for
// bit (tests/unit/fp8_linear_test.cpp compares them over 2^24 inputs), written without branches so
// that a loop of it vectorises. At or above the smallest normal value, x's fp32 bits are rounded to
// the format's mantissa width (ties to even: the carry moves into the exponent) and rebiased; below
// it, |x| over the smallest subnormal is rounded to an integer by adding 2^23 (fp32's ties-to-even
// rounding does it), which is the code itself (2^m being the smallest normal's code).
template <NumericTag Format>
inline std::uint32_t encode_saturating(float x) {
  using L = mpx::detail::format_layout<Format>;
  constexpr int m = L::mantissa_bits, shift = 23 - m;
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (u >> 31) << (L::exponent_bits + m);
  const std::uint32_t a = u & 0x7fffffffu;
  const std::uint32_t rounded = a + ((1u << (shift - 1)) - 1u) + ((a >> shift) & 1u);
  const std::uint32_t normal = (rounded >> shift) - (static_cast<std::uint32_t>(127 - L::bias) << m);
  constexpr float per_subnormal_step =
      std::bit_cast<float>(static_cast<std::uint32_t>(127 + L::bias - 1 + m) << 23);
  const float in_subnormal_steps = std::bit_cast<float>(a) * per_subnormal_step;
  const std::uint32_t subnormal = std::bit_cast<std::uint32_t>(in_subnormal_steps + 0x1p23f) - 0x4b000000u;
  const bool below_normal = a < (static_cast<std::uint32_t>(127 + L::min_exponent) << 23);
  std::uint32_t code = below_normal ? subnormal : normal;
  code =
      !below_normal && (rounded >> shift) > (L::max_finite + (static_cast<std::uint32_t>(127 - L::bias) << m))
          ? L::max_finite
          : code;
  const std::uint32_t nan = L::non_finite == NonFinite::None ? L::max_finite : sign | L::nan;
  return a > 0x7f800000u ? nan : sign | code;
}

// out[i] = encode_saturating(values[i] * factor) for i < count: one vector loop (a function of its
// own, so that no store through `out`, a byte pointer that may alias anything, is seen to reach the
// caller's variables).
template <NumericTag Format, class Bits>
void encode_block(const float* values, std::int64_t count, float factor, Bits* out) {
  MPX_DETAIL_OMP_SIMD
  for (std::int64_t i = 0; i < count; ++i)
    out[i] = static_cast<Bits>(encode_saturating<Format>(values[i] * factor));
}

// max(start, chunk_max(begin, end) over the chunks of [0, count)), the chunks on all threads.
template <class ChunkMax>
float max_over_chunks(std::int64_t count, float start, const ChunkMax& chunk_max) {
  const std::int64_t chunks = (count + parallel_grain - 1) / parallel_grain;
  std::vector<float> partial(static_cast<std::size_t>(chunks), 0.0f);
  parallel_for_chunks(count, parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    partial[static_cast<std::size_t>(begin / parallel_grain)] = chunk_max(begin, end);
  });
  for (const float p : partial) start = p > start ? p : start;
  return start;
}

}  // namespace detail

/// @brief `*amax` = max(`*amax`, the largest |x[i]|): NaNs passed over (as `fmaxf`), infinities
/// counted. Accumulating into `*amax` lets the casts of one step (every micro-batch's) share one
/// history entry.
/// @param x    any floating tensor (fp32, bf16, fp16)
/// @param amax a float in the tensor's device memory
template <FloatingElement S>
void accumulate_amax(const Tensor<S, Host>& x, float* amax) {
  *amax = detail::max_over_chunks(x.numel(), *amax, [&](std::int64_t begin, std::int64_t end) {
    return detail::amax_of_range(x.data(), begin, end);
  });
}

/// @brief out[i] = fp8(x[i] * scale): the product in fp32, rounded to nearest even into `Format`,
/// saturating at its largest finite value (NaN stays NaN); with `amax`, also `accumulate_amax(x,
/// amax)` in the same pass.
/// @param x     the tensor to cast (fp32, bf16, fp16)
/// @param scale a float in the device's memory (the recipe's, read when the cast runs)
/// @param out   the codes, of `x`'s shape
/// @param amax  a float in the device's memory that the largest |x[i]| is accumulated into, or null
/// @throws mpx::shape_error when `out`'s shape is not `x`'s.
template <NumericTag Format, FloatingElement S>
void cast_scaled(const Tensor<S, Host>& x, const float* scale, Tensor<Encoded<Format>, Host>& out,
                 float* amax = nullptr) {
  require_shape("mpx::cpu::cast_scaled", "the output", out.shape(), x.shape());
  const float factor = *scale;
  const S* in = x.data();
  using Bits = typename Encoded<Format>::bits_type;
  Bits* codes = &out.data()->bits;  // Encoded<Format> is its code: one member
  static_assert(sizeof(Encoded<Format>) == sizeof(Bits));
  const float largest_seen =
      detail::max_over_chunks(x.numel(), 0.0f, [&](std::int64_t begin, std::int64_t end) {
        float widened[detail::conversion_block];
        float largest = 0.0f;
        for (std::int64_t first = begin; first < end; first += detail::conversion_block) {
          const std::int64_t length = std::min(detail::conversion_block, end - first);
          detail::widen_range<tag_of_t<S>>(in + first, widened, 0, length);
          largest = detail::largest_magnitude(widened, length, largest);  // then the codes:
          Bits* block = codes + first;
          if constexpr (detail::branch_free_encoding<Format>) {
            detail::encode_block<Format>(widened, length, factor, block);
          } else {
            for (std::int64_t i = 0; i < length; ++i) {
              block[i] = Encoded<Format>::template rounded<Overflow::Saturate>(widened[i] * factor).bits;
            }
          }
        }
        return largest;
      });
  if (amax != nullptr && largest_seen > *amax) *amax = largest_seen;
}

}  // namespace mpx::cpu
