// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Rounding a value into a precision: nearest (as the hardware converts) and stochastic.
///
/// `round_to<Tag>(x)` is the conversion the GPU applies when a value enters `Tag`: round to nearest,
/// ties to even, for fp16/bf16/fp32 (Eigen's conversions, which match `__float2half_rn`,
/// `__float2bfloat16_rn`, F16C and AVX512-BF16 on normal inputs) and for every format kept as bit
/// patterns (`Encoded`, whose traits say how it saturates; encoded.hpp); the Tensor Core rule for a
/// format kept in a wider float's storage (TF32). `round_stochastic<Tag>(x, bits)` rounds up with
/// probability equal to the distance from the value below, so the expected result equals x.

#include <cmath>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include "mpx/config.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

/// @brief Rounding mode for conversions: round to nearest (ties to even; TF32: the Tensor Core rule).
struct RoundNearest {};

/// @brief Rounding mode for conversions: stochastic rounding with Philox bits drawn at
/// (seed, stream, element index); see random.hpp. Equal arguments give equal results on CPU and GPU.
struct RoundStochastic {
  /// @brief Seed of the Philox random bits.
  std::uint64_t seed = 0;
  /// @brief Stream (counter offset) of the random bits, so that separate calls draw separate bits.
  std::uint64_t stream = 0;
};

/// @brief The 16 bits of an fp16 or bf16 value.
template <SixteenBitElement T>
MPX_HOST_DEVICE inline std::uint16_t bits_of(T value) {
  return Eigen::numext::bit_cast<std::uint16_t>(value);
}

/// @brief The fp16 or bf16 value with the given bits.
template <SixteenBitElement T>
MPX_HOST_DEVICE inline T from_bits(std::uint16_t bits) {
  return Eigen::numext::bit_cast<T>(bits);
}

/// @brief fp32 -> a float keeping `MantissaBits` mantissa bits, as Tensor Cores receive operands of a
/// format stored in fp32 (TF32): round to nearest, ties away from zero; the low 23 - MantissaBits
/// bits of the result are zero. Values that round past the largest such number become infinity; NaN
/// stays NaN (made quiet, so clearing the low bits cannot turn it into infinity).
template <int MantissaBits>
MPX_HOST_DEVICE inline float round_mantissa_ties_away(float x) {
  static_assert(MantissaBits >= 1 && MantissaBits < 23, "mpx::round_mantissa_ties_away: 1 to 22 bits");
  constexpr std::uint32_t dropped = 23 - MantissaBits;
  constexpr std::uint32_t keep = ~((std::uint32_t{1} << dropped) - 1);
  std::uint32_t bits = Eigen::numext::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7f800000u) == 0x7f800000u) {  // inf or NaN
    if ((bits & 0x007fffffu) != 0) bits |= 0x00400000u;
    return Eigen::numext::bit_cast<float>(bits & keep);
  }
  bits += std::uint32_t{1} << (dropped - 1);
  return Eigen::numext::bit_cast<float>(bits & keep);
}

/// @brief fp32 -> TF32 as Tensor Cores receive it: round to nearest, ties away from zero, keeping 10
/// mantissa bits; the result is a float whose 13 low mantissa bits are zero.
///
/// This is PTX's `cvt.rna.tf32.f32` (the PTX ISA allows only the `.rna` rounding modifier for a .tf32
/// destination), which compiles to "add 0x1000, clear the low 13 bits"; CUTLASS calls the same rule
/// `round_half_ulp_truncate`. Values that round past the largest TF32 become infinity; NaN stays NaN
/// (made quiet, so clearing the low bits cannot turn it into infinity).
MPX_HOST_DEVICE inline float round_tf32(float x) {
  return round_mantissa_ties_away<numeric_traits<TF32>::mantissa_bits>(x);
}

/// @brief Rounds `x` into `Tag`'s storage the way the hardware converts (see file comment): a format
/// that owns its storage converts as its storage type does (`Encoded` through its traits); a format
/// kept in a wider float's storage (TF32) keeps its mantissa bits by the Tensor Core rule.
///
/// A double headed for a format whose accumulate type is fp32 is rounded to fp32 first, which can
/// round twice; that is fine for reference values, not where the last bit of a narrow result of a
/// double matters.
template <NumericTag Tag, std::floating_point From>
MPX_HOST_DEVICE inline storage_t<Tag> round_to(From x) {
  const auto value = static_cast<accumulate_t<Tag>>(x);
  if constexpr (owns_storage_v<Tag>) {
    return static_cast<storage_t<Tag>>(value);
  } else {
    static_assert(std::is_same_v<storage_t<Tag>, float>,
                  "mpx::round_to<Tag>: a format that does not own its storage type is kept in fp32's");
    using traits = numeric_traits<Tag>;
    static_assert(
        traits::exponent_bits == 8 && traits::exponent_bias == 127 && traits::has_subnormals &&
            traits::non_finite == NonFinite::InfAndNan && !traits::saturates,
        "mpx::round_to<Tag>: a format kept in fp32's storage (as TF32) has fp32's exponent (8 bits, "
        "bias 127), subnormals and infinities: only its mantissa is rounded");
    return round_mantissa_ties_away<numeric_traits<Tag>::mantissa_bits>(value);
  }
}

/// @brief Rounds `x` into a format kept as bit patterns (FP8 and smaller), overflowing as `Rule` says
/// rather than as the format's traits do: `round_to<mpx::Float8E5M2, mpx::Overflow::NonFinite>(x)`
/// gives infinity where `round_to<mpx::Float8E5M2>(x)` saturates.
template <NumericTag Tag, Overflow Rule, std::floating_point From>
MPX_HOST_DEVICE inline storage_t<Tag> round_to(From x) {
  static_assert(detail::is_encoded_v<storage_t<Tag>>,
                "mpx::round_to<Tag, Overflow>: the overflow rule is for formats kept as bit patterns "
                "(mpx::Encoded: FP8 and smaller); fp64, fp32, fp16 and bf16 overflow to infinity");
  return storage_t<Tag>::template rounded<Rule>(x);
}

/// @brief Stochastic rounding of fp32 into fp16 or bf16 with 32 random bits.
///
/// Let lo and hi be the neighbours of x in the target format (lo toward zero). The result is hi
/// (away from zero) when `random_bits < floor((|x| - |lo|) / (|hi| - |lo|) * 2^32)`, otherwise lo, so
/// E[result] = x up to 2^-32 of one ulp. Both differences are exact in fp32 and the spacing is a power
/// of two, so the threshold is exact. Infinity counts as the neighbour above the largest finite value
/// (at the format's top spacing), as it does for round-to-nearest. Zero and infinities pass through
/// unchanged, NaN stays NaN (its payload is the conversion's: the GPU's is 0x7fff). Sign is preserved.
template <SixteenBitTag Tag>
MPX_HOST_DEVICE inline storage_t<Tag> round_stochastic(float x, std::uint32_t random_bits) {
  using S = storage_t<Tag>;
  const S nearest = static_cast<S>(x);
  const float magnitude = std::fabs(x);
  if (!(magnitude <= numeric_traits<Float>::max_finite)) return nearest;  // inf or NaN

  const std::uint16_t sign = bits_of(nearest) & 0x8000u;
  const std::uint16_t nearest_mag = bits_of(nearest) & 0x7fffu;
  const auto value = [](std::uint16_t magnitude_bits) {
    return static_cast<float>(from_bits<S>(magnitude_bits));
  };
  // Nearest is one of the two neighbours: step back one if it lies above |x|.
  const std::uint16_t lo = value(nearest_mag) > magnitude ? nearest_mag - 1u : nearest_mag;
  const std::uint16_t infinity_bits = bits_of(static_cast<S>(HUGE_VALF)) & 0x7fffu;
  const float lo_value = value(lo);
  const float spacing = (lo + 1u == infinity_bits) ? lo_value - value(lo - 1u) : value(lo + 1u) - lo_value;
  const float fraction = (magnitude - lo_value) / spacing;

  bool round_up = true;
  if (fraction < 1.0f) {
    const auto threshold = static_cast<std::uint32_t>(fraction * 0x1p32f);
    round_up = random_bits < threshold;
  }
  return from_bits<S>(static_cast<std::uint16_t>(sign | (round_up ? lo + 1u : lo)));
}

/// @brief Stochastic rounding of fp32 into a format kept as bit patterns (FP8, FP6, FP4), saturating:
/// what `cvt.rs.satfinite` does for NVFP4's gradients, with the rule of the 16-bit overload.
///
/// Let lo and hi be the neighbours of |x| in the format (lo toward zero). The result is hi when
/// `random_bits < floor((|x| - lo) / (hi - lo) * 2^32)`, otherwise lo, with x's sign, so E[result] = x
/// up to 2^-32 of one spacing. At or beyond the largest finite value the result is that value (the
/// format's saturation, whatever its traits say for round-to-nearest); NaN gives what nearest rounding
/// gives (NaN, or the largest value in a format without NaN); zero stays zero.
template <NumericTag Tag>
requires detail::is_encoded_v<storage_t<Tag>> MPX_HOST_DEVICE inline storage_t<Tag> round_stochastic(
    float x, std::uint32_t random_bits) {
  using S = storage_t<Tag>;
  using Bits = typename S::bits_type;
  const S nearest = S::template rounded<Overflow::Saturate>(x);
  const float magnitude = std::fabs(x);
  constexpr float largest = static_cast<float>(numeric_traits<Tag>::max_finite);
  if (!(magnitude < largest)) return nearest;  // saturated, or NaN
  constexpr auto sign_bit = static_cast<Bits>(detail::format_layout<Tag>::sign);
  const Bits sign = static_cast<Bits>(nearest.bits & sign_bit);
  const Bits nearest_magnitude = static_cast<Bits>(nearest.bits & ~sign_bit);
  const auto value = [](Bits magnitude_bits) { return static_cast<float>(S::from_bits(magnitude_bits)); };
  // The codes of a sign's magnitudes are in increasing order: lo is nearest or the code below it.
  const Bits lo =
      value(nearest_magnitude) > magnitude ? static_cast<Bits>(nearest_magnitude - 1u) : nearest_magnitude;
  const float lo_value = value(lo);
  // Exact: both differences are exact in fp32 (Sterbenz, or lo = 0) and the spacing is a power of two.
  const float fraction = (magnitude - lo_value) / (value(static_cast<Bits>(lo + 1u)) - lo_value);
  const auto threshold = static_cast<std::uint32_t>(fraction * 0x1p32f);  // fraction < 1
  const bool round_up = random_bits < threshold;
  return S::from_bits(static_cast<Bits>(sign | (round_up ? lo + 1u : lo)));
}

}  // namespace mpx
