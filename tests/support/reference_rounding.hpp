// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief An independent reference for rounding into fp16, bf16 and TF32, written from the IEEE 754
/// definitions with exact arithmetic in double. It deliberately shares nothing with mpx or Eigen
/// (no bit tricks, no library conversions), so the tests that compare against it cannot inherit a
/// mistake from the code under test. Plain code, no test framework.
///
/// Exactness: every input is a float (24 significant bits), every quantum is a power of two inside
/// double's range, and the formats have at most 11 significant bits, so each scaling, floor,
/// subtraction and product below is exact in double.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mpx_test {

/// @brief A binary floating-point format: explicit fraction bits and exponent bits (IEEE layout:
/// sign, biased exponent, fraction; exponent all ones = inf/NaN, all zeros = subnormal).
struct BinaryFormat {
  int mantissa_bits;
  int exponent_bits;

  [[nodiscard]] constexpr int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  [[nodiscard]] constexpr int min_exponent() const { return 1 - bias(); }  // of the smallest normal
  [[nodiscard]] constexpr int max_exponent() const { return bias(); }      // of the largest finite
  [[nodiscard]] constexpr int total_bits() const { return 1 + exponent_bits + mantissa_bits; }
  [[nodiscard]] constexpr std::uint32_t exponent_mask() const {
    return ((1u << exponent_bits) - 1u) << mantissa_bits;
  }
  [[nodiscard]] constexpr std::uint32_t mantissa_mask() const { return (1u << mantissa_bits) - 1u; }
  [[nodiscard]] constexpr std::uint32_t sign_mask() const { return 1u << (exponent_bits + mantissa_bits); }
};

inline constexpr BinaryFormat fp16_format{10, 5};
inline constexpr BinaryFormat bf16_format{7, 8};
inline constexpr BinaryFormat tf32_format{10, 8};  // values only; TF32 is stored in a float
inline constexpr BinaryFormat fp32_format{23, 8};

enum class Rounding { NearestEven, NearestAway, TowardZero };

/// @brief True when `bits` encode a NaN in `format`.
[[nodiscard]] inline bool is_nan_bits(BinaryFormat format, std::uint32_t bits) {
  return (bits & format.exponent_mask()) == format.exponent_mask() && (bits & format.mantissa_mask()) != 0;
}

/// @brief The value `bits` encode in `format`, straight from the definition (NaN -> a double NaN
/// with the same sign).
[[nodiscard]] inline double decode(BinaryFormat format, std::uint32_t bits) {
  const bool negative = (bits & format.sign_mask()) != 0;
  const std::uint32_t exponent_field = (bits & format.exponent_mask()) >> format.mantissa_bits;
  const std::uint32_t fraction = bits & format.mantissa_mask();
  double magnitude = 0.0;
  if (exponent_field == (1u << format.exponent_bits) - 1u) {
    magnitude =
        fraction == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent_field == 0) {
    magnitude = std::ldexp(static_cast<double>(fraction), format.min_exponent() - format.mantissa_bits);
  } else {
    const double significand = static_cast<double>((1u << format.mantissa_bits) + fraction);
    magnitude =
        std::ldexp(significand, static_cast<int>(exponent_field) - format.bias() - format.mantissa_bits);
  }
  return std::copysign(magnitude, negative ? -1.0 : 1.0);
}

/// @brief Distance between representable values of `format` at magnitude `magnitude` (>= 0): the
/// quantum of the binade that holds it, or the subnormal step below the smallest normal.
[[nodiscard]] inline double quantum_at(BinaryFormat format, double magnitude) {
  int exponent = format.min_exponent();
  if (magnitude > 0) {
    int frexp_exponent = 0;
    std::frexp(magnitude, &frexp_exponent);  // magnitude = m 2^e, m in [0.5, 1)
    exponent = std::max(frexp_exponent - 1, format.min_exponent());
  }
  return std::ldexp(1.0, exponent - format.mantissa_bits);
}

/// @brief The first power of two past the largest finite value: where rounding overflows.
[[nodiscard]] inline double overflow_threshold(BinaryFormat format) {
  return std::ldexp(1.0, format.max_exponent() + 1);
}

/// @brief Rounds a non-negative finite magnitude into `format` (unbounded exponent, then overflow to
/// inf, as IEEE 754 does). Returns the rounded magnitude as a double, or +inf.
[[nodiscard]] inline double round_magnitude(BinaryFormat format, double magnitude, Rounding rounding) {
  const double quantum = quantum_at(format, magnitude);
  const double scaled = magnitude / quantum;  // exact: division by a power of two
  double whole = std::floor(scaled);
  const double rest = scaled - whole;  // in [0, 1), exact
  bool up = false;
  switch (rounding) {
    case Rounding::NearestEven: up = rest > 0.5 || (rest == 0.5 && std::fmod(whole, 2.0) == 1.0); break;
    case Rounding::NearestAway: up = rest >= 0.5; break;
    case Rounding::TowardZero: up = false; break;
  }
  if (up) whole += 1.0;
  const double result = whole * quantum;
  return result >= overflow_threshold(format) ? std::numeric_limits<double>::infinity() : result;
}

/// @brief The bits of a representable non-negative magnitude (or +inf) in `format`.
[[nodiscard]] inline std::uint32_t encode_magnitude(BinaryFormat format, double magnitude) {
  if (std::isinf(magnitude)) return format.exponent_mask();
  if (magnitude == 0) return 0;
  int frexp_exponent = 0;
  std::frexp(magnitude, &frexp_exponent);
  const int exponent = frexp_exponent - 1;
  if (exponent < format.min_exponent()) {  // subnormal: fraction counts subnormal steps
    return static_cast<std::uint32_t>(std::ldexp(magnitude, format.mantissa_bits - format.min_exponent()));
  }
  const auto fraction = static_cast<std::uint32_t>(std::ldexp(magnitude, format.mantissa_bits - exponent)) -
                        (1u << format.mantissa_bits);
  const auto biased = static_cast<std::uint32_t>(exponent + format.bias());
  return (biased << format.mantissa_bits) | fraction;
}

/// @brief Reference rounding of a float into `format`, as bits of `format`. NaN gives the quiet NaN
/// with the input's sign and no payload (tests compare NaNs by class and sign, not payload).
[[nodiscard]] inline std::uint32_t reference_round_bits(BinaryFormat format, float x, Rounding rounding) {
  const std::uint32_t sign = std::signbit(x) ? format.sign_mask() : 0u;
  if (std::isnan(x)) return sign | format.exponent_mask() | (1u << (format.mantissa_bits - 1));
  const double magnitude = std::fabs(static_cast<double>(x));
  if (std::isinf(x)) return sign | format.exponent_mask();
  return sign | encode_magnitude(format, round_magnitude(format, magnitude, rounding));
}

/// @brief Reference fp32 -> fp16, round to nearest, ties to even.
[[nodiscard]] inline std::uint16_t reference_half_bits(float x) {
  return static_cast<std::uint16_t>(reference_round_bits(fp16_format, x, Rounding::NearestEven));
}

/// @brief Reference fp32 -> bf16, round to nearest, ties to even.
[[nodiscard]] inline std::uint16_t reference_bf16_bits(float x) {
  return static_cast<std::uint16_t>(reference_round_bits(bf16_format, x, Rounding::NearestEven));
}

/// @brief Reference fp32 -> TF32 (cvt.rna.tf32.f32): round to nearest, ties away from zero, at 10
/// fraction bits with fp32's exponent range. Returned as a float; NaN gives a quiet NaN, same sign.
[[nodiscard]] inline float reference_tf32(float x) {
  if (std::isnan(x)) return std::copysign(std::numeric_limits<float>::quiet_NaN(), x);
  if (std::isinf(x)) return x;
  const double rounded =
      round_magnitude(tf32_format, std::fabs(static_cast<double>(x)), Rounding::NearestAway);
  return static_cast<float>(std::copysign(rounded, static_cast<double>(x)));  // representable: exact
}

/// @brief Float from its bits, and back (for readable test inputs).
[[nodiscard]] inline float float_from_bits(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}
[[nodiscard]] inline std::uint32_t bits_of_float(float x) {
  return std::bit_cast<std::uint32_t>(x);
}

}  // namespace mpx_test
