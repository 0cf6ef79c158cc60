// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief When bf16 dot-product instructions that flush subnormals to zero (AVX512_BF16's
/// `vdpbf16ps`, AMX) give the same result as IEEE arithmetic for a product A B.
///
/// Every nonzero |a| >= 2^ea and |b| >= 2^eb with ea + eb >= -100 and no subnormal operand: a product
/// of two bf16 values (8 significant bits each) is then a multiple of 2^(ea + eb - 14), and so is
/// every fp32 partial sum of such products (a sum below 2^24 of those units is exact, and rounding a
/// larger one keeps it a multiple), so nothing nonzero falls below 2^-114, nor below 2^-126 after
/// an alpha with |alpha| >= 2^-12. Zeros of either sign, infinities and NaN take no part in the test
/// (they behave the same either way).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mpx/backend/cpu/parallel.hpp"

namespace mpx::cpu::detail {

// The least nonzero magnitude (bits & 0x7fff) of bits[begin, end), or 0xffff when all are zero: the
// least of magnitude - 1 in 16-bit unsigned arithmetic, where a zero wraps to 0xffff and so never
// wins, is a branch-free minimum that becomes vector code (a select per element, or a pointer read
// through a lambda's capture, did not vectorise and ran about 20 times slower).
inline std::uint16_t least_nonzero_magnitude(const std::uint16_t* bits, std::int64_t begin,
                                             std::int64_t end) {
  std::uint16_t least_minus_one = 0xffff;
#ifdef _OPENMP
#pragma omp simd reduction(min : least_minus_one)
#endif
  for (std::int64_t i = begin; i < end; ++i) {
    least_minus_one = std::min(least_minus_one, static_cast<std::uint16_t>((bits[i] & 0x7fffu) - 1u));
  }
  return least_minus_one == 0xffff ? 0xffff : static_cast<std::uint16_t>(least_minus_one + 1u);
}

/// The binary exponent of the smallest nonzero finite magnitude among `count` bf16 bit patterns:
/// +1000 when there is none, -134 when one is subnormal.
inline int smallest_bf16_exponent(const std::uint16_t* bits, std::int64_t count) {
  constexpr std::uint16_t infinity = 0x7f80;  // above every finite magnitude
  const std::int64_t chunks = (count + parallel_grain - 1) / parallel_grain;
  std::vector<std::uint16_t> per_chunk(static_cast<std::size_t>(chunks), infinity);
  parallel_for_chunks(count, parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    per_chunk[static_cast<std::size_t>(begin / parallel_grain)] =
        std::min(infinity, least_nonzero_magnitude(bits, begin, end));
  });
  std::uint16_t least = infinity;
  for (const std::uint16_t m : per_chunk) least = m < least ? m : least;
  if (least >= infinity) return 1000;
  const int exponent_field = least >> 7;
  return exponent_field == 0 ? -134 : exponent_field - 127;
}

/// Whether bf16 dot products that flush subnormals compute alpha A B exactly as IEEE arithmetic
/// would (the file's comment), for `a_count` and `b_count` bf16 values (any 2-byte bf16 type).
template <class Bf16>
bool bf16_products_stay_normal(const Bf16* a, std::int64_t a_count, const Bf16* b, std::int64_t b_count,
                               float alpha) {
  static_assert(sizeof(Bf16) == 2, "bf16 values are 2 bytes");
  if (!(alpha == 0.0f || alpha >= 0x1p-12f || alpha <= -0x1p-12f)) return false;  // NaN too
  const int a_exponent = smallest_bf16_exponent(reinterpret_cast<const std::uint16_t*>(a), a_count);
  if (a_exponent < -126) return false;
  const int b_exponent = smallest_bf16_exponent(reinterpret_cast<const std::uint16_t*>(b), b_count);
  return b_exponent >= -126 && a_exponent + b_exponent >= -100;
}

}  // namespace mpx::cpu::detail
