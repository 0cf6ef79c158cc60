// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Round-to-nearest into fp16, bf16 and TF32 (mpx::round_to, mpx::round_tf32), checked three ways:
//  - hand-derived IEEE results at the edge cases (ties both ways, subnormals, overflow, NaN), which
//    also validate the test's own reference;
//  - an independent reference written from the IEEE definitions in exact double arithmetic
//    (tests/support/reference_rounding.hpp; it never calls Eigen), on every rounding boundary of the
//    format and on >= 10^7 random floats per format;
//  - the CPU's own conversion instructions where the CPU has them: F16C vcvtps2ph (fp16) and
//    AVX512-BF16 vcvtneps2bf16 (bf16), called through target-attributed functions after a runtime
//    CPUID check. Where an instruction is missing the reference alone is the check, and a warning
//    says so.
// NaNs are compared by class and sign only (payloads are not part of the contract; see the roundtrip
// test); a NaN whose payload lies only in the dropped low bits must not become an infinity.

#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MPX_TEST_X86 1
#else
#define MPX_TEST_X86 0
#endif

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
using mpx_test::bits_of_float;
using mpx_test::float_from_bits;
using mpx_test::hex;
using mpx_test::MismatchLog;

// ---- The CPU's conversion instructions ----------------------------------------------------------

#if MPX_TEST_X86
// vcvtps2ph with an explicit round-to-nearest-even immediate (so MXCSR's mode does not matter).
__attribute__((target("f16c"))) void f16c_round(const float* in, std::uint16_t* out, std::size_t count) {
  std::size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m128i halves = _mm_cvtps_ph(_mm_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), halves);
  }
  for (; i < count; ++i) {
    const __m128i half = _mm_cvtps_ph(_mm_set_ss(in[i]), _MM_FROUND_TO_NEAREST_INT);
    out[i] = static_cast<std::uint16_t>(_mm_extract_epi16(half, 0));
  }
}

// vcvtneps2bf16: always round to nearest even, MXCSR ignored, float-subnormal inputs read as zero.
__attribute__((target("avx512bf16,avx512f,avx512vl"))) void avx512bf16_round(const float* in,
                                                                             std::uint16_t* out,
                                                                             std::size_t count) {
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const auto packed = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + i));
    static_assert(sizeof packed == 16 * sizeof(std::uint16_t));
    std::memcpy(out + i, &packed, sizeof packed);
  }
  for (; i < count; ++i) {
    const auto scalar = _mm_cvtness_sbh(in[i]);
    static_assert(sizeof scalar == sizeof(std::uint16_t));
    std::memcpy(out + i, &scalar, sizeof scalar);
  }
}

bool cpu_has_f16c() {
  return __builtin_cpu_supports("f16c");
}
bool cpu_has_avx512bf16() {
  return __builtin_cpu_supports("avx512bf16");
}
#else
void f16c_round(const float*, std::uint16_t*, std::size_t) {}
void avx512bf16_round(const float*, std::uint16_t*, std::size_t) {}
bool cpu_has_f16c() {
  return false;
}
bool cpu_has_avx512bf16() {
  return false;
}
#endif

// ---- Inputs -------------------------------------------------------------------------------------

/// Uniformly random 32-bit patterns: every class of float, NaNs and float subnormals included.
std::vector<float> random_bit_patterns(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::vector<float> values(count);
  for (float& value : values) value = float_from_bits(static_cast<std::uint32_t>(engine() >> 32));
  return values;
}

/// Random sign and fraction with the biased fp32 exponent field drawn from `exponent_fields`, to
/// concentrate inputs where a format's rounding is delicate (its subnormals, its overflow).
std::vector<float> random_values_with_exponents(std::size_t count, std::uint64_t seed,
                                                const std::vector<std::uint32_t>& exponent_fields) {
  std::mt19937_64 engine(seed);
  std::vector<float> values(count);
  for (float& value : values) {
    const std::uint64_t draw = engine();
    const std::uint32_t sign = static_cast<std::uint32_t>(draw >> 63) << 31;
    const std::uint32_t exponent = exponent_fields[(draw >> 32) % exponent_fields.size()];
    const auto fraction = static_cast<std::uint32_t>(draw) & 0x007fffffu;
    value = float_from_bits(sign | (exponent << 23) | fraction);
  }
  return values;
}

std::vector<std::uint32_t> exponent_field_range(std::uint32_t first, std::uint32_t last) {
  std::vector<std::uint32_t> fields;
  for (std::uint32_t field = first; field <= last; ++field) fields.push_back(field);
  return fields;
}

/// Every rounding boundary of `format`: for each pair of adjacent non-negative finite values lo < hi
/// (hi = the overflow threshold after the largest finite), the floats lo, just above and below lo,
/// the midpoint (a tie) and the floats just above and below it; with both signs. The midpoint needs
/// one bit more than the format, so it is exact in float.
std::vector<float> rounding_boundaries(BinaryFormat format) {
  const std::uint32_t largest_finite = format.exponent_mask() - 1u;
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values;
  values.reserve(12 * (largest_finite + 1));
  for (std::uint32_t bits = 0; bits <= largest_finite; ++bits) {
    const double lo = mpx_test::decode(format, bits);
    const double hi =
        bits == largest_finite ? mpx_test::overflow_threshold(format) : mpx_test::decode(format, bits + 1);
    const auto lo_float = static_cast<float>(lo);
    const auto mid = static_cast<float>((lo + hi) / 2);
    for (const float value : {lo_float, std::nextafter(lo_float, -inf), std::nextafter(lo_float, inf), mid,
                              std::nextafter(mid, 0.0f), std::nextafter(mid, inf)}) {
      values.push_back(value);
      values.push_back(-value);
    }
  }
  return values;
}

// ---- Comparisons --------------------------------------------------------------------------------

/// Same rounding result: equal bits, or both NaN with the same sign.
bool same_result(BinaryFormat format, std::uint32_t a, std::uint32_t b) {
  const bool a_nan = mpx_test::is_nan_bits(format, a);
  const bool b_nan = mpx_test::is_nan_bits(format, b);
  if (a_nan || b_nan) return a_nan && b_nan && (a & format.sign_mask()) == (b & format.sign_mask());
  return a == b;
}

struct FormatUnderTest {
  const char* name;
  BinaryFormat format;
  std::uint16_t (*mpx_round)(float);
  std::uint16_t (*reference_round)(float);
  void (*cpu_round)(const float*, std::uint16_t*, std::size_t);
  bool cpu_available;
  const char* instruction;
  bool cpu_reads_subnormals_as_zero;
};

FormatUnderTest fp16_under_test() {
  return {"fp16",
          mpx_test::fp16_format,
          [](float x) { return mpx::bits_of(mpx::round_to<mpx::Half>(x)); },
          mpx_test::reference_half_bits,
          f16c_round,
          cpu_has_f16c(),
          "F16C vcvtps2ph",
          false};
}

FormatUnderTest bf16_under_test() {
  return {"bf16",
          mpx_test::bf16_format,
          [](float x) { return mpx::bits_of(mpx::round_to<mpx::BFloat16>(x)); },
          mpx_test::reference_bf16_bits,
          avx512bf16_round,
          cpu_has_avx512bf16(),
          "AVX512-BF16 vcvtneps2bf16",
          true};
}

/// Rounds every input with mpx, the reference and (where present) the CPU instruction, and checks
/// that all three agree. `expected` (optional, same length) adds hand-derived results.
void check_agreement(const FormatUnderTest& under_test, const std::vector<float>& inputs,
                     const std::vector<std::uint16_t>* expected = nullptr) {
  const std::size_t count = inputs.size();
  std::vector<std::uint16_t> cpu(count);
  if (under_test.cpu_available) {
    under_test.cpu_round(inputs.data(), cpu.data(), count);
  } else {
    WARN(under_test.instruction << " is not available on this CPU: " << under_test.name
                                << " rounding is checked against the reference only");
  }

  const std::string name = under_test.name;
  MismatchLog vs_reference("mpx " + name + " == reference");
  MismatchLog vs_cpu("mpx " + name + " == " + under_test.instruction);
  MismatchLog cpu_vs_reference(std::string(under_test.instruction) +
                               " == reference (validates the reference)");
  MismatchLog vs_expected("mpx " + name + " == hand-derived result");
  MismatchLog reference_vs_expected("reference " + name +
                                    " == hand-derived result (validates the reference)");
  std::uint64_t compared_with_cpu = 0;

  for (std::size_t i = 0; i < count; ++i) {
    const float x = inputs[i];
    const std::uint16_t got = under_test.mpx_round(x);
    const std::uint16_t reference = under_test.reference_round(x);
    const auto describe = [&](std::uint16_t other) {
      return [&, other] {
        return "x = " + mpx_test::describe_float(x) + ": mpx " + hex(got, 4) + ", other " + hex(other, 4);
      };
    };
    vs_reference.check(same_result(under_test.format, got, reference), describe(reference));
    if (expected != nullptr) {
      vs_expected.check(same_result(under_test.format, got, (*expected)[i]), describe((*expected)[i]));
      reference_vs_expected.check(same_result(under_test.format, reference, (*expected)[i]),
                                  describe((*expected)[i]));
    }
    // vcvtneps2bf16 treats float-subnormal inputs as zero (DAZ); mpx rounds them (to bf16
    // subnormals), so for those inputs the reference above is the only check.
    const bool cpu_applies = under_test.cpu_available &&
                             !(under_test.cpu_reads_subnormals_as_zero && std::fpclassify(x) == FP_SUBNORMAL);
    if (cpu_applies) {
      ++compared_with_cpu;
      vs_cpu.check(same_result(under_test.format, got, cpu[i]), describe(cpu[i]));
      cpu_vs_reference.check(same_result(under_test.format, cpu[i], reference), describe(reference));
    }
  }

  for (const MismatchLog* log :
       {&vs_reference, &vs_cpu, &cpu_vs_reference, &vs_expected, &reference_vs_expected}) {
    if (log->checked() == 0) continue;  // no CPU instruction, or no hand-derived results
    INFO(log->summary());
    CHECK(log->failures() == 0);
  }
  CHECK(vs_reference.checked() == count);
  if (under_test.cpu_available) CHECK(compared_with_cpu > 0);
}

struct EdgeCase {
  std::uint32_t input_bits;
  std::uint16_t expected_bits;  // worked out by hand from the IEEE rules (comment says why)
};

void check_edge_cases(const FormatUnderTest& under_test, const std::vector<EdgeCase>& cases) {
  std::vector<float> inputs;
  std::vector<std::uint16_t> expected;
  for (const EdgeCase& edge : cases) {
    inputs.push_back(float_from_bits(edge.input_bits));
    expected.push_back(edge.expected_bits);
  }
  check_agreement(under_test, inputs, &expected);
}

}  // namespace

// ---- fp16 ---------------------------------------------------------------------------------------

TEST_CASE("round_to<Half> gives the IEEE round-to-nearest-even result at hand-derived edge cases",
          "[numeric][rounding][fp16]") {
  check_edge_cases(
      fp16_under_test(),
      {
          {0x3f800000, 0x3c00},  // 1
          {0x3f801000, 0x3c00},  // 1 + 2^-11: tie between 1 and 1+2^-10, down to even
          {0x3f803000, 0x3c02},  // 1 + 3*2^-11: tie between 0x3c01 and 0x3c02, up to even
          {0x3f800fff, 0x3c00},  // just below the tie
          {0x3f801001, 0x3c01},  // just above the tie
          {0x3f802fff, 0x3c01},  // just below the upward tie
          {0xbf801000, 0xbc00},  // negative ties mirror the positive ones
          {0xbf803000, 0xbc02}, {0x45001000, 0x6800},  // 2049: tie between 2048 and 2050, down to even
          {0x45003000, 0x6802},                        // 2051: tie between 2050 and 2052, up to even
          {0x477fe000, 0x7bff},                        // 65504, the largest finite
          {0x477fefff, 0x7bff},                        // 65519.99: below the midpoint to 65536
          {0x477ff000, 0x7c00},                        // 65520: tie with the (odd) largest finite, up to inf
          {0xc77ff000, 0xfc00},                        // -65520 -> -inf
          {0x47800000, 0x7c00},                        // 65536
          {0x7f7fffff, 0x7c00},                        // FLT_MAX
          {0x33800000, 0x0001},                        // 2^-24: the smallest subnormal
          {0x33000000, 0x0000},                        // 2^-25: half of it, a tie, down to even zero
          {0x33000001, 0x0001},                        // just above half of it
          {0xb3000000, 0x8000},                        // -2^-25 -> -0
          {0x33c00000, 0x0002},                        // 3*2^-25: tie between subnormals 1 and 2, up to even
          {0x34000000, 0x0002},                        // 2^-23
          {0x387fc000, 0x03ff},                        // 1023 * 2^-24: the largest subnormal
          {0x387fe000, 0x0400},  // 1023.5 * 2^-24: tie, up to the (even) smallest normal
          {0x387fdfff, 0x03ff},  // just below that tie
          {0x38800000, 0x0400},  // 2^-14: the smallest normal
          {0x387fffff, 0x0400},  // just below 2^-14 rounds up to it
          {0x38801000, 0x0400},  // 2^-14 + 2^-25: tie, down to even
          {0x38803000, 0x0402},  // 2^-14 + 3*2^-25: tie, up to even
          {0x00000001, 0x0000},  // float subnormal -> +0
          {0x80000001, 0x8000},  // -> -0
          {0x00000000, 0x0000},  // +0
          {0x80000000, 0x8000},  // -0
          {0x7f800000, 0x7c00},  // +inf
          {0xff800000, 0xfc00},  // -inf
          {0x7fc00000, 0x7e00},  // quiet NaN (compared by class and sign)
          {0xffc00000, 0xfe00},  // negative quiet NaN
          {0x7fc01234, 0x7e00},  // quiet NaN with payload
          {0x7f800001, 0x7e00},  // signalling NaN, payload only in the dropped 13 bits
          {0xff800001, 0xfe00},  // the same, negative
          {0x7fa00000, 0x7e00},  // signalling NaN, payload in the kept bits
          {0x7fbfffff, 0x7e00},  // signalling NaN, full payload
          {0xffffffff, 0xfe00},  // negative quiet NaN, full payload
      });
}

TEST_CASE("round_to<Half> agrees with the reference and F16C at every fp16 rounding boundary",
          "[numeric][rounding][fp16]") {
  check_agreement(fp16_under_test(), rounding_boundaries(mpx_test::fp16_format));
}

TEST_CASE("round_to<Half> agrees with the reference and F16C on 1.2e7 random floats",
          "[numeric][rounding][fp16]") {
  const FormatUnderTest under_test = fp16_under_test();
  SECTION("random bit patterns") {
    check_agreement(under_test, random_bit_patterns(6'000'000, 0x16a));
  }
  SECTION("random values from 2^-27 (below half the smallest subnormal) to 2^17 (past overflow)") {
    check_agreement(under_test,
                    random_values_with_exponents(6'000'000, 0x16b, exponent_field_range(100, 144)));
  }
}

// ---- bf16 ---------------------------------------------------------------------------------------

TEST_CASE("round_to<BFloat16> gives the IEEE round-to-nearest-even result at hand-derived edge cases",
          "[numeric][rounding][bf16]") {
  // Inputs 0x0000xxxx..0x007fxxxx are float subnormals: vcvtneps2bf16 reads them as zero, so only
  // the hand-derived result and the reference check mpx there.
  check_edge_cases(bf16_under_test(),
                   {
                       {0x3f800000, 0x3f80},  // 1
                       {0x3f808000, 0x3f80},  // 1 + 2^-8: tie, down to even
                       {0x3f818000, 0x3f82},  // 1 + 3*2^-8: tie, up to even
                       {0x3f807fff, 0x3f80},  // just below the tie
                       {0x3f808001, 0x3f81},  // just above the tie
                       {0x3f817fff, 0x3f81},  // just below the upward tie
                       {0xbf808000, 0xbf80},  // negative ties mirror the positive ones
                       {0xbf818000, 0xbf82},
                       {0x3fff8000, 0x4000},  // 1.99609375: tie with odd 0x3fff, carries into the exponent
                       {0x7f7f0000, 0x7f7f},  // the largest finite bf16, 0x1.fep127
                       {0x7f7f7fff, 0x7f7f},  // just below the midpoint to 2^128
                       {0x7f7f8000, 0x7f80},  // 0x1.ffp127: tie with the (odd) largest finite, up to inf
                       {0xff7f8000, 0xff80},  // negative -> -inf
                       {0x7f7fffff, 0x7f80},  // FLT_MAX
                       {0x00800000, 0x0080},  // 2^-126: the smallest normal
                       {0x00808000, 0x0080},  // 2^-126 + 2^-134: tie, down to even
                       {0x00818000, 0x0082},  // tie, up to even
                       {0x00010000, 0x0001},  // 2^-133: the smallest bf16 subnormal (a float subnormal)
                       {0x00008000, 0x0000},  // 2^-134: half of it, tie, down to even zero
                       {0x00008001, 0x0001},  // just above half of it
                       {0x80008001, 0x8001},  // negative
                       {0x00018000, 0x0002},  // 3*2^-134: tie between subnormals 1 and 2, up to even
                       {0x007f0000, 0x007f},  // the largest bf16 subnormal
                       {0x007f8000, 0x0080},  // tie between it (odd) and the smallest normal: up
                       {0x007f7fff, 0x007f},  // just below that tie
                       {0x007fffff, 0x0080},  // the largest float subnormal
                       {0x00000001, 0x0000},  // the smallest float subnormal -> +0
                       {0x80000001, 0x8000},  // -> -0
                       {0x00000000, 0x0000},  // +0
                       {0x80000000, 0x8000},  // -0
                       {0x7f800000, 0x7f80},  // +inf
                       {0xff800000, 0xff80},  // -inf
                       {0x7fc00000, 0x7fc0},  // quiet NaN (compared by class and sign)
                       {0xffc00000, 0xffc0},  // negative quiet NaN
                       {0x7fc01234, 0x7fc0},  // quiet NaN with payload
                       {0x7f800001, 0x7fc0},  // signalling NaN, payload only in the dropped 16 bits
                       {0xff808000, 0xffc0},  // the same, negative, payload at the rounding bit
                       {0x7fa00000, 0x7fc0},  // signalling NaN, payload in the kept bits
                       {0x7fbfffff, 0x7fc0},  // signalling NaN, full payload (rounding would carry)
                       {0xffffffff, 0xffc0},  // negative quiet NaN, full payload
                   });
}

TEST_CASE("round_to<BFloat16> agrees with the reference and AVX512-BF16 at every bf16 rounding boundary",
          "[numeric][rounding][bf16]") {
  check_agreement(bf16_under_test(), rounding_boundaries(mpx_test::bf16_format));
}

TEST_CASE("round_to<BFloat16> agrees with the reference and AVX512-BF16 on 1.2e7 random floats",
          "[numeric][rounding][bf16]") {
  const FormatUnderTest under_test = bf16_under_test();
  SECTION("random bit patterns") {
    check_agreement(under_test, random_bit_patterns(6'000'000, 0xbf1a));
  }
  SECTION("random values at the bottom (float subnormals, bf16 subnormals, first normals) and the top") {
    std::vector<std::uint32_t> fields = exponent_field_range(0, 3);
    for (std::uint32_t field = 250; field <= 254; ++field) fields.push_back(field);
    check_agreement(under_test, random_values_with_exponents(6'000'000, 0xbf1b, fields));
  }
}

// ---- TF32 ---------------------------------------------------------------------------------------

namespace {

/// Checks round_tf32 and round_to<TF32> against the reference: same bits, or both NaN with the
/// input's sign; and the 13 low bits of every result (NaN included) are zero.
void check_tf32(const std::vector<float>& inputs, const std::vector<std::uint32_t>* expected = nullptr) {
  MismatchLog vs_reference("round_tf32 == reference (ties away from zero)");
  MismatchLog low_bits("round_tf32 result has 13 zero low bits");
  MismatchLog same_as_round_to("round_to<TF32> == round_tf32");
  MismatchLog vs_expected("round_tf32 == hand-derived result");
  MismatchLog reference_vs_expected("reference == hand-derived result (validates the reference)");
  const auto same = [](std::uint32_t a, std::uint32_t b) { return same_result(mpx_test::fp32_format, a, b); };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const float x = inputs[i];
    const std::uint32_t got = bits_of_float(mpx::round_tf32(x));
    const std::uint32_t reference = bits_of_float(mpx_test::reference_tf32(x));
    const auto describe = [&](std::uint32_t other) {
      return [&, other] {
        return "x = " + mpx_test::describe_float(x) + ": got " + hex(got, 8) + ", other " + hex(other, 8);
      };
    };
    vs_reference.check(same(got, reference), describe(reference));
    low_bits.check((got & 0x1fffu) == 0, describe(got));
    const std::uint32_t via_round_to = bits_of_float(mpx::round_to<mpx::TF32>(x));
    same_as_round_to.check(via_round_to == got, describe(via_round_to));
    if (expected != nullptr) {
      vs_expected.check(same(got, (*expected)[i]), describe((*expected)[i]));
      reference_vs_expected.check(same(reference, (*expected)[i]), describe((*expected)[i]));
    }
  }
  for (const MismatchLog* log :
       {&vs_reference, &low_bits, &same_as_round_to, &vs_expected, &reference_vs_expected}) {
    if (log->checked() == 0) continue;  // no hand-derived results
    INFO(log->summary());
    CHECK(log->failures() == 0);
  }
  CHECK(vs_reference.checked() == inputs.size());
}

}  // namespace

TEST_CASE("round_tf32 rounds to nearest with ties away from zero at hand-derived edge cases",
          "[numeric][rounding][tf32]") {
  struct Tf32Case {
    std::uint32_t input;
    std::uint32_t expected;
  };
  const std::vector<Tf32Case> cases = {
      {0x3f801000, 0x3f802000},  // 1 + 2^-11: tie with an even lower neighbour, still away (RNE would stay)
      {0x3f803000, 0x3f804000},  // 1 + 3*2^-11: tie, away
      {0xbf801000, 0xbf802000},  // negative tie: away from zero, i.e. more negative
      {0xbf803000, 0xbf804000}, {0x3f800fff, 0x3f800000},  // just below the tie: down
      {0x3f801001, 0x3f802000},                            // just above the tie: up
      {0xbf800fff, 0xbf800000},  // negative, just below the tie in magnitude: toward zero
      {0x3fbfefff, 0x3fbfe000},  // just below a tie: down
      {0x3ffff000, 0x40000000},  // tie below 2: carries into the exponent
      {0x3fffffff, 0x40000000},  // the float just below 2
      {0x7f7fe000, 0x7f7fe000},  // the largest TF32, 0x1.ffcp127
      {0x7f7fefff, 0x7f7fe000},  // just below the midpoint to 2^128
      {0x7f7ff000, 0x7f800000},  // the midpoint: away, to inf
      {0x7f7fffff, 0x7f800000},  // FLT_MAX -> inf
      {0xff7fffff, 0xff800000},  // -FLT_MAX -> -inf
      {0x00800000, 0x00800000},  // the smallest normal
      {0x00001000, 0x00002000},  // float subnormal: tie at the TF32 subnormal step 2^-136, away
      {0x00000fff, 0x00000000},  // below that tie -> +0
      {0x80000fff, 0x80000000},  // -> -0
      {0x80001000, 0x80002000},  // negative subnormal tie: away
      {0x007ff000, 0x00800000},  // tie below the smallest normal: carries into the normal range
      {0x00000000, 0x00000000},  // +0
      {0x80000000, 0x80000000},  // -0
      {0x7f800000, 0x7f800000},  // +inf stays
      {0xff800000, 0xff800000},  // -inf stays
      {0x7fc00000, 0x7fc00000},  // quiet NaN (compared by class and sign)
      {0x7f800001, 0x7fc00000},  // signalling NaN with its payload only in the 13 cleared bits
      {0xff801fff, 0xffc00000},  // the same, negative, all 13 low bits set
      {0x7fffffff, 0x7fc00000},  // NaN, full payload (adding 0x1000 must not carry out of it)
      {0xffffffff, 0xffc00000},
  };
  std::vector<float> inputs;
  std::vector<std::uint32_t> expected;
  for (const Tf32Case& c : cases) {
    inputs.push_back(float_from_bits(c.input));
    expected.push_back(c.expected);
  }
  check_tf32(inputs, &expected);
}

TEST_CASE("round_tf32 agrees with the reference at every TF32 rounding boundary of every binade",
          "[numeric][rounding][tf32]") {
  // Both signs, every exponent field (255 = inf/NaN included), every 10-bit kept fraction, and
  // dropped bits at zero, the ulp just above, just below the tie, the tie, just above it, all ones.
  std::vector<float> inputs;
  inputs.reserve(2u * 256u * 1024u * 6u);
  for (std::uint32_t top = 0; top < (1u << 19); ++top) {
    for (const std::uint32_t low : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) {
      inputs.push_back(float_from_bits((top << 13) | low));
    }
  }
  check_tf32(inputs);
}

TEST_CASE("round_tf32 agrees with the reference on 2e6 random floats", "[numeric][rounding][tf32]") {
  check_tf32(random_bit_patterns(2'000'000, 0x7f32));
}

}  // namespace MPX_UNITY_ID
}  // namespace
