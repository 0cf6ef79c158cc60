// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Encoded<Tag>`: a value of a format that has no C++ scalar type (FP8, FP6, FP4), kept as its
/// bit pattern in a byte (two for formats up to 16 bits), with the conversions to and from fp32 that
/// its `numeric_traits` define: generic bit-level code driven by the widths, bias, subnormals,
/// infinity/NaN encoding and saturation. Arithmetic happens in fp32 (the format's `accumulate_type`).
///
/// Encoding rounds to nearest, ties to even, as if the exponent were unbounded; then a result beyond
/// `max_finite` overflows: to +-`max_finite` when the format saturates, else to infinity, or to NaN
/// where it has none (so E4M3's 448 < |x| <= 464 gives 448, and E5M2's 61440 rounds to 2^16 and
/// overflows). Infinities encode as an overflow does. NaN encodes as the format's NaN with x's sign
/// (the quiet one: the top mantissa bit set, under IEEE's encoding); a format with no NaN code
/// (`NonFinite::None`) gives +`max_finite`, mpx's choice where the OCP MX specification leaves it to the
/// implementation (ml_dtypes 0.6 gives -0). Without subnormals, magnitudes below the smallest normal
/// value flush to zero. An unsigned format (E8M0) encodes negative values and -0 as NaN; a format
/// without zero (E8M0) encodes zero as NaN, values below its smallest as the smallest, and an fp32
/// subnormal by rounding it up to the format's next value, as ml_dtypes and PyTorch do. Decoding is exact:
/// every value of a format that `Encoded` accepts is a float.

#include <bit>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include "mpx/config.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

/// @brief What encoding into a format does with a value beyond its largest finite one (infinity
/// included). `round_to<Tag>` follows the format's `numeric_traits<Tag>::saturates`;
/// `round_to<Tag, Rule>` chooses.
enum class Overflow {
  /// +-`max_finite`: CUDA's `__NV_SATFINITE` (what `__nv_fp8_e4m3(float)` does), PyTorch's
  /// `.to(torch.float8_e4m3fn)`.
  Saturate,
  /// Infinity, or NaN where the format has none: CUDA's `__NV_NOSAT`, ml_dtypes' `astype`, PyTorch's
  /// `.to(torch.float8_e5m2)`. Not for a format whose every code is a number (`NonFinite::None`).
  NonFinite,
};

namespace detail {

// The narrowest unsigned integer with `Bits` bits.
template <int Bits>
using bits_for = std::conditional_t<(Bits <= 8), std::uint8_t,
                                    std::conditional_t<(Bits <= 16), std::uint16_t, std::uint32_t>>;

// Codes of a format, as unsigned integers: sign | exponent field | mantissa field.
template <NumericTag Tag>
struct format_layout {
  using traits = numeric_traits<Tag>;
  static constexpr int exponent_bits = traits::exponent_bits;
  static constexpr int mantissa_bits = traits::mantissa_bits;
  static constexpr int bias = traits::exponent_bias;
  static constexpr NonFinite non_finite = traits::non_finite;
  static constexpr bool has_zero = has_zero_v<Tag>;
  // The sign bit, 0 in an unsigned format.
  static constexpr std::uint32_t sign =
      has_sign_v<Tag> ? std::uint32_t{1} << (exponent_bits + mantissa_bits) : 0u;
  static constexpr std::uint32_t magnitude_mask = (std::uint32_t{1} << (exponent_bits + mantissa_bits)) - 1;
  static constexpr std::uint32_t top_exponent = (std::uint32_t{1} << exponent_bits) - 1;
  static constexpr std::uint32_t mantissa_mask = (std::uint32_t{1} << mantissa_bits) - 1;
  // IEEE's infinity; under NanOnly and None the top exponent field holds numbers.
  static constexpr std::uint32_t infinity = top_exponent << mantissa_bits;
  // The NaN an encoder writes: IEEE's quiet NaN, or the all-ones code (unused under None).
  static constexpr std::uint32_t nan = non_finite == NonFinite::InfAndNan && mantissa_bits >= 1
                                           ? infinity | (std::uint32_t{1} << (mantissa_bits - 1))
                                           : magnitude_mask;
  // The code of max_finite (codes are ordered by magnitude).
  static constexpr std::uint32_t max_finite = non_finite == NonFinite::InfAndNan ? infinity - 1
                                              : non_finite == NonFinite::NanOnly ? magnitude_mask - 1
                                                                                 : magnitude_mask;
  // Exponent of the smallest normal value: 2^(1 - bias), or 2^-bias where the zero exponent field
  // holds normal values (a format without zero).
  static constexpr int min_exponent = (has_zero ? 1 : 0) - bias;
};

// n 2^e as a float, exactly: n < 2^24 and the value within float's range (Encoded checks its format).
MPX_HOST_DEVICE constexpr float exact_float(std::uint32_t n, int e) {
  if (n == 0) return 0.0f;
  const int width = std::bit_width(n);
  const int exponent = e + width - 1;  // of the leading bit
  if (exponent >= -126) {
    const std::uint32_t fraction = (n << (24 - width)) & 0x007fffffu;
    return std::bit_cast<float>(static_cast<std::uint32_t>(exponent + 127) << 23 | fraction);
  }
  return std::bit_cast<float>(n << (e + 149));  // a float subnormal: (n 2^(e + 149)) 2^-149
}

// The value of code `code` of `Tag`, as a float (exact).
template <NumericTag Tag>
MPX_HOST_DEVICE constexpr float decode_bits(std::uint32_t code) {
  using L = format_layout<Tag>;
  constexpr int m = L::mantissa_bits;
  const std::uint32_t magnitude = code & L::magnitude_mask;
  const std::uint32_t sign = (code & L::sign) != 0 ? 0x80000000u : 0u;
  const std::uint32_t exponent = magnitude >> m;
  const std::uint32_t mantissa = magnitude & L::mantissa_mask;
  std::uint32_t bits = 0;
  if (L::non_finite == NonFinite::InfAndNan && exponent == L::top_exponent) {
    bits = mantissa == 0 ? 0x7f800000u : 0x7fc00000u;
  } else if (L::non_finite == NonFinite::NanOnly && magnitude == L::magnitude_mask) {
    bits = 0x7fc00000u;
  } else if (exponent == 0 && L::has_zero) {
    bits = numeric_traits<Tag>::has_subnormals
               ? std::bit_cast<std::uint32_t>(exact_float(mantissa, L::min_exponent - m))
               : 0u;
  } else {
    bits = std::bit_cast<std::uint32_t>(
        exact_float(mantissa | (std::uint32_t{1} << m), static_cast<int>(exponent) - L::bias - m));
  }
  return std::bit_cast<float>(bits | sign);
}

// The code of `Tag` that x rounds to (see the file comment for the rules), overflowing to
// +-max_finite when `Saturate`.
template <NumericTag Tag, bool Saturate = numeric_traits<Tag>::saturates>
MPX_HOST_DEVICE constexpr std::uint32_t encode_bits(float x) {
  using L = format_layout<Tag>;
  constexpr int m = L::mantissa_bits;
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (u >> 31) != 0 ? L::sign : 0u;
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return L::non_finite == NonFinite::None ? L::max_finite : sign | L::nan;
  // An unsigned format has no negative values (nor -0), a format without zero no zero: NaN.
  if ((L::sign == 0 && (u >> 31) != 0) || (!L::has_zero && a == 0)) return L::nan;
  const std::uint32_t overflow = sign | (Saturate                                ? L::max_finite
                                         : L::non_finite == NonFinite::InfAndNan ? L::infinity
                                                                                 : L::nan);
  if (a == 0x7f800000u) return overflow;
  if (a == 0) return sign;
  // |x| = significand 2^e2, exactly.
  std::uint32_t significand = a & 0x007fffffu;
  int e2 = -149;
  if ((a >> 23) != 0) {
    significand |= 0x00800000u;
    e2 = static_cast<int>(a >> 23) - 150;
  }
  const int exponent = e2 + std::bit_width(significand) - 1;  // of |x|'s leading bit
  // Below the smallest normal value, with no subnormals: zero, or the smallest value where there is
  // no zero (the nearer of the two).
  if (!numeric_traits<Tag>::has_subnormals && exponent < L::min_exponent) return L::has_zero ? sign : 0u;
  // The spacing of the format's values at |x| is 2^quantum; n = |x| / 2^quantum, rounded to nearest even.
  const int quantum = (exponent > L::min_exponent ? exponent : L::min_exponent) - m;
  const int shift = quantum - e2;
  std::uint32_t n = 0;
  if (shift <= 0) {
    n = significand << -shift;  // exact: |x| is a multiple of the spacing
  } else if (shift < 32) {
    const std::uint32_t kept = significand >> shift;
    const std::uint32_t rest = significand & ((std::uint32_t{1} << shift) - 1);
    const std::uint32_t half = std::uint32_t{1} << (shift - 1);
    // An fp32 subnormal headed for a format without zero (E8M0's 2^-127 is one) rounds up, as
    // ml_dtypes and PyTorch convert it.
    const bool up = !L::has_zero && (a >> 23) == 0;
    n = kept + ((up ? rest != 0 : (rest > half || (rest == half && (kept & 1u) != 0))) ? 1u : 0u);
  }
  std::uint32_t magnitude = n;  // n < 2^m: a subnormal (quantum is the smallest), or zero
  if (n >= (std::uint32_t{1} << m)) {
    int field = quantum + m + L::bias;
    if ((n >> (m + 1)) != 0) {  // rounding carried into the next binade: n = 2^(m + 1)
      n >>= 1;
      ++field;
    }
    if (field > static_cast<int>(L::top_exponent)) return overflow;
    magnitude = static_cast<std::uint32_t>(field) << m | (n & L::mantissa_mask);
  }
  return magnitude > L::max_finite ? overflow : sign | magnitude;
}

}  // namespace detail

/// @brief A value of format `Tag` kept as its bit pattern: what `numeric_traits<Tag>::storage_type` is
/// for a format without a C++ scalar type. Not an arithmetic type: it converts explicitly to and from
/// `float` (through the format's traits; see the file comment), which is what mpx's kernels do at
/// every load and store, and arithmetic happens in fp32.
/// @code
/// const auto x = mpx::round_to<MyE3M2>(0.3f);     // Encoded<MyE3M2>, bits 0b0'001'01 (0.3125)
/// const float y = static_cast<float>(x);          // 0.3125
/// const auto z = mpx::Encoded<MyE3M2>::from_bits(0x1f);  // 28, the largest finite value
/// @endcode
/// Requires a format whose values are all floats: `accumulate_type` float, at most 23 mantissa bits,
/// and an exponent range within fp32's.
template <class Tag>
struct Encoded {
  static_assert(NumericTag<Tag> || detail::has_numeric_traits<Tag>,
                "mpx::Encoded<Tag>: Tag must be a precision tag: specialise mpx::numeric_traits<Tag>");
  static_assert(detail::checked_format<Tag>::value);

  /// @brief The unsigned integer that holds one code (`std::uint8_t` up to 8 bits).
  using bits_type = detail::bits_for<(has_sign_v<Tag> ? 1 : 0) + numeric_traits<Tag>::exponent_bits +
                                     numeric_traits<Tag>::mantissa_bits>;

  static_assert(std::is_same_v<typename numeric_traits<Tag>::accumulate_type, float>,
                "mpx::Encoded<Tag>: a format kept as bit patterns computes in fp32: its accumulate_type must "
                "be float");
  static_assert(numeric_traits<Tag>::mantissa_bits <= 23 && detail::largest_exponent<Tag>() <= 127 &&
                    1 - numeric_traits<Tag>::exponent_bias - numeric_traits<Tag>::mantissa_bits >= -149,
                "mpx::Encoded<Tag>: every value of the format must be a float (at most 23 mantissa bits, an "
                "exponent range within fp32's)");

  /// @brief The code: sign | exponent field | mantissa field, in the low bits.
  bits_type bits;

  /// @brief An unspecified value (as `float`'s default initialisation).
  Encoded() = default;

  /// @brief `value` rounded into the format (a double is rounded to float first).
  template <std::floating_point F>
  MPX_HOST_DEVICE constexpr explicit Encoded(F value)
      : bits(static_cast<bits_type>(detail::encode_bits<Tag>(static_cast<float>(value)))) {}

  /// @brief The value, exactly (as a float, or widened to a double).
  template <std::floating_point F>
  MPX_HOST_DEVICE constexpr explicit operator F() const {
    return static_cast<F>(detail::decode_bits<Tag>(bits));
  }

  /// @brief `value` rounded into the format, overflowing as `Rule` says.
  template <Overflow Rule, std::floating_point F>
  [[nodiscard]] MPX_HOST_DEVICE static constexpr Encoded rounded(F value) {
    static_assert(Rule == Overflow::Saturate || numeric_traits<Tag>::non_finite != NonFinite::None,
                  "mpx::Encoded<Tag>::rounded<Overflow::NonFinite>: this format has no infinity and no "
                  "NaN (non_finite = mpx::NonFinite::None), so it can only saturate");
    return from_bits(static_cast<bits_type>(
        detail::encode_bits<Tag, Rule == Overflow::Saturate>(static_cast<float>(value))));
  }

  /// @brief The value whose code is `code`.
  [[nodiscard]] MPX_HOST_DEVICE static constexpr Encoded from_bits(bits_type code) {
    Encoded value;
    value.bits = code;
    return value;
  }
};

}  // namespace mpx
