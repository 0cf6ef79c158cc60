// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Every fp16 and bf16 bit pattern survives fp16/bf16 -> float -> round_to<Tag>: widening is exact
// and rounding a representable value must give it back. The float values are checked against an
// IEEE decode written in the test (tests/support/reference_rounding.hpp), not against Eigen.
//
// NaNs: a NaN must come back as a NaN of the same sign, after widening and after rounding. Payloads
// are not checked: Eigen's portable fp16 path and its bf16 path both replace them by the canonical
// quiet NaN, while F16C keeps them, and neither is part of mpx's contract. What the check does
// rule out is the classic failure of truncating a NaN whose payload lies only in the dropped bits
// into an infinity.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>

#include <mpx/numeric/rounding.hpp>
#include <mpx/numeric/traits.hpp>

#include "../support/mismatch_log.hpp"
#include "../support/reference_rounding.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx_test::BinaryFormat;
using mpx_test::hex;
using mpx_test::MismatchLog;

struct RoundTripLogs {
  MismatchLog bit_cast{"bits_of(from_bits(b)) == b"};
  MismatchLog widening{"float(from_bits(b)) equals the IEEE value of b"};
  MismatchLog narrowing{"round_to<Tag>(float(from_bits(b))) == b"};
  MismatchLog narrowing_double{"round_to<Tag>(double(float(from_bits(b)))) == b"};
  MismatchLog nan{"NaN stays NaN with its sign through float and back"};
  std::uint64_t nan_patterns = 0;
};

template <class Tag>
RoundTripLogs round_trip_every_pattern(BinaryFormat format) {
  using Storage = mpx::storage_t<Tag>;
  RoundTripLogs logs;
  for (std::uint32_t pattern = 0; pattern <= 0xffffu; ++pattern) {
    const auto b = static_cast<std::uint16_t>(pattern);
    const Storage value = mpx::from_bits<Storage>(b);
    logs.bit_cast.check(mpx::bits_of(value) == b, [&] { return hex(b, 4); });

    const float widened = static_cast<float>(value);
    const std::uint16_t back = mpx::bits_of(mpx::round_to<Tag>(widened));
    const std::uint16_t back_from_double = mpx::bits_of(mpx::round_to<Tag>(static_cast<double>(widened)));
    const bool negative = (b & 0x8000u) != 0;

    if (mpx_test::is_nan_bits(format, b)) {
      ++logs.nan_patterns;
      const bool ok = std::isnan(widened) && std::signbit(widened) == negative &&
                      mpx_test::is_nan_bits(format, back) && ((back & 0x8000u) != 0) == negative &&
                      mpx_test::is_nan_bits(format, back_from_double) &&
                      ((back_from_double & 0x8000u) != 0) == negative;
      logs.nan.check(ok, [&] {
        return hex(b, 4) + " -> float " + hex(mpx_test::bits_of_float(widened), 8) + " -> " + hex(back, 4) +
               " (via double " + hex(back_from_double, 4) + ")";
      });
      continue;
    }

    // The IEEE value, sign of zero included: compare bits of the float, not just ==.
    const auto expected = static_cast<float>(mpx_test::decode(format, b));
    logs.widening.check(mpx_test::bits_of_float(widened) == mpx_test::bits_of_float(expected), [&] {
      return hex(b, 4) + " widened to " + hex(mpx_test::bits_of_float(widened), 8) + ", expected " +
             hex(mpx_test::bits_of_float(expected), 8);
    });
    logs.narrowing.check(back == b, [&] { return hex(b, 4) + " came back as " + hex(back, 4); });
    logs.narrowing_double.check(back_from_double == b,
                                [&] { return hex(b, 4) + " came back as " + hex(back_from_double, 4); });
  }
  return logs;
}

void check_logs(const RoundTripLogs& logs, std::uint64_t expected_nan_patterns) {
  // 2 signs x (2^mantissa_bits - 1) non-zero fractions with the exponent all ones.
  CHECK(logs.nan_patterns == expected_nan_patterns);
  CHECK(logs.bit_cast.checked() == 65536);
  CHECK(logs.narrowing.checked() == 65536 - expected_nan_patterns);
  for (const MismatchLog* log :
       {&logs.bit_cast, &logs.widening, &logs.narrowing, &logs.narrowing_double, &logs.nan}) {
    INFO(log->summary());
    CHECK(log->failures() == 0);
  }
}

}  // namespace

TEST_CASE("every fp16 bit pattern widens to its exact float value and rounds back to the same bits",
          "[numeric][rounding][fp16][roundtrip]") {
  check_logs(round_trip_every_pattern<mpx::Half>(mpx_test::fp16_format), 2 * 1023);
}

TEST_CASE("every bf16 bit pattern widens to its exact float value and rounds back to the same bits",
          "[numeric][rounding][bf16][roundtrip]") {
  check_logs(round_trip_every_pattern<mpx::BFloat16>(mpx_test::bf16_format), 2 * 127);
}

TEST_CASE("every fp32 value with 13 zero low bits is a TF32 value and round_tf32 leaves it unchanged",
          "[numeric][rounding][tf32][roundtrip]") {
  // All 2^19 patterns of sign, exponent and the 10 kept fraction bits (NaN patterns: NaN, same sign).
  MismatchLog fixed_point("round_tf32(x) == x for TF32-representable x");
  for (std::uint32_t top = 0; top < (1u << 19); ++top) {
    const std::uint32_t bits = top << 13;
    const float x = mpx_test::float_from_bits(bits);
    const float rounded = mpx::round_tf32(x);
    const bool ok = std::isnan(x) ? std::isnan(rounded) && std::signbit(rounded) == std::signbit(x)
                                  : mpx_test::bits_of_float(rounded) == bits;
    fixed_point.check(ok, [&] { return hex(bits, 8) + " -> " + hex(mpx_test::bits_of_float(rounded), 8); });
  }
  INFO(fixed_point.summary());
  CHECK(fixed_point.failures() == 0);
}

}  // namespace MPX_UNITY_ID
}  // namespace
