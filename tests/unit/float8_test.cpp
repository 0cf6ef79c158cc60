// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// FP8 E4M3 and E5M2: the values and boundaries that catch wrong encoders, by name (the whole code
// space and a large sample are compared with ml_dtypes and PyTorch by
// tests/interop/formats_vs_references.py), and what the formats derive from their traits.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/io/dtype.hpp>
#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using E4M3 = mpx::Float8E4M3;
using E5M2 = mpx::Float8E5M2;
constexpr float inf = std::numeric_limits<float>::infinity();

template <class Tag, mpx::Overflow Rule>
unsigned code(float x) {
  return mpx::round_to<Tag, Rule>(x).bits;
}

template <class Tag>
float value(unsigned bits) {
  return static_cast<float>(mpx::Encoded<Tag>::from_bits(static_cast<std::uint8_t>(bits)));
}

}  // namespace

TEST_CASE("FP8 formats: layouts and limits derived from their traits", "[numeric][fp8]") {
  STATIC_REQUIRE(sizeof(mpx::storage_t<E4M3>) == 1);
  STATIC_REQUIRE(sizeof(mpx::storage_t<E5M2>) == 1);
  STATIC_REQUIRE(mpx::min_positive_v<E4M3> == 0x1p-9f);
  STATIC_REQUIRE(mpx::min_normal_v<E4M3> == 0x1p-6f);
  STATIC_REQUIRE(mpx::min_positive_v<E5M2> == 0x1p-16f);
  STATIC_REQUIRE(mpx::min_normal_v<E5M2> == 0x1p-14f);
  STATIC_REQUIRE(mpx::narrower_range_than_fp32_v<E4M3> && mpx::narrower_range_than_fp32_v<E5M2>);
  CHECK(value<E4M3>(0x7e) == 448.0f);
  CHECK(std::isnan(value<E4M3>(0x7f)));
  CHECK(std::isnan(value<E4M3>(0xff)));
  CHECK(value<E4M3>(0x78) == 256.0f);  // the top binade holds numbers: no infinity
  CHECK(value<E4M3>(0x01) == 0x1p-9f);
  CHECK(value<E5M2>(0x7b) == 57344.0f);
  CHECK(value<E5M2>(0x7c) == inf);
  CHECK(value<E5M2>(0xfc) == -inf);
  CHECK(std::isnan(value<E5M2>(0x7d)));
  CHECK(value<E5M2>(0x01) == 0x1p-16f);
  CHECK(std::signbit(value<E5M2>(0x80)));
}

TEST_CASE("FP8 E4M3: 448 < |x| <= 464 rounds to 448, beyond overflows", "[numeric][fp8]") {
  using enum mpx::Overflow;
  const float above_464 = std::nextafter(464.0f, inf);
  CHECK(code<E4M3, NonFinite>(464.0f) == 0x7e);  // the tie goes to the even code, 448
  CHECK(code<E4M3, NonFinite>(-464.0f) == 0xfe);
  CHECK(code<E4M3, NonFinite>(above_464) == 0x7f);  // NaN: E4M3 has no infinity
  CHECK(code<E4M3, NonFinite>(inf) == 0x7f);
  CHECK(code<E4M3, NonFinite>(-inf) == 0xff);
  CHECK(code<E4M3, Saturate>(above_464) == 0x7e);
  CHECK(code<E4M3, Saturate>(-inf) == 0xfe);
  CHECK(code<E4M3, Saturate>(std::numeric_limits<float>::quiet_NaN()) == 0x7f);  // NaN stays NaN
  CHECK(code<E4M3, Saturate>(-std::numeric_limits<float>::quiet_NaN()) == 0xff);
  // The default follows the traits: saturating, as CUDA's __nv_fp8_e4m3(float).
  CHECK(mpx::round_to<E4M3>(1000.0f).bits == 0x7e);
  // Subnormals, ties to even: 2^-10 is half of the smallest subnormal (to 0); 3 * 2^-10 to 2 * 2^-9.
  CHECK(code<E4M3, Saturate>(0x1p-10f) == 0x00);
  CHECK(code<E4M3, Saturate>(0x3p-10f) == 0x02);
  CHECK(code<E4M3, Saturate>(-0.0f) == 0x80);
}

TEST_CASE("FP8 E5M2: 61440 rounds to 2^16 and overflows; just below gives 57344", "[numeric][fp8]") {
  using enum mpx::Overflow;
  CHECK(code<E5M2, NonFinite>(61440.0f) == 0x7c);
  CHECK(code<E5M2, NonFinite>(std::nextafter(61440.0f, 0.0f)) == 0x7b);
  CHECK(code<E5M2, NonFinite>(-inf) == 0xfc);
  CHECK(code<E5M2, Saturate>(61440.0f) == 0x7b);
  CHECK(code<E5M2, Saturate>(inf) == 0x7b);  // satfinite: infinity too
  CHECK(code<E5M2, NonFinite>(std::numeric_limits<float>::quiet_NaN()) == 0x7e);
  CHECK(mpx::round_to<E5M2>(-1e9f).bits == 0xfb);
  CHECK(code<E5M2, Saturate>(0x1p-17f) == 0x00);  // a tie with zero, which is even
  CHECK(code<E5M2, Saturate>(std::nextafter(0x1p-17f, 1.0f)) == 0x01);
}

TEST_CASE("FP8 E4M3 operands: the CPU GEMM decodes them through the table, beta * C included",
          "[numeric][fp8][gemm]") {
  // D = A B^T + C, A [4, 6], B [3, 6], operands of magnitude 0.5 to 3.75 with random signs: their
  // products and sums are exact in fp32, so D has one right answer. C and D in E4M3 too (beta = 1).
  std::mt19937 random(5);
  std::uniform_int_distribution<unsigned> sign(0, 1);
  std::uniform_int_distribution<unsigned> exponent(6, 8);
  std::uniform_int_distribution<unsigned> mantissa(0, 7);
  const auto draw = [&] {
    return mpx::Encoded<E4M3>::from_bits(
        static_cast<std::uint8_t>(sign(random) << 7 | exponent(random) << 3 | mantissa(random)));
  };
  mpx::Tensor<mpx::Encoded<E4M3>> a(mpx::Shape{4, 6});
  mpx::Tensor<mpx::Encoded<E4M3>> b(mpx::Shape{3, 6});
  mpx::Tensor<mpx::Encoded<E4M3>> c(mpx::Shape{4, 3});
  for (std::int64_t i = 0; i < a.numel(); ++i) a[i] = draw();
  for (std::int64_t i = 0; i < b.numel(); ++i) b[i] = draw();
  for (std::int64_t i = 0; i < c.numel(); ++i) c[i] = draw();
  mpx::Tensor<float> wide(mpx::Shape{4, 3});
  mpx::Tensor<mpx::Encoded<E4M3>> narrow(mpx::Shape{4, 3});
  mpx::cpu::gemm<E4M3>(a, b, wide, {.transpose_b = mpx::Transpose::Yes});
  mpx::cpu::gemm<E4M3>(a, b, narrow, {.transpose_b = mpx::Transpose::Yes, .beta = 1.0f}, {.c = &c});
  for (std::int64_t i = 0; i < 4; ++i) {
    for (std::int64_t j = 0; j < 3; ++j) {
      double sum = 0.0;
      for (std::int64_t k = 0; k < 6; ++k)
        sum += static_cast<double>(static_cast<float>(a[i * 6 + k])) * static_cast<float>(b[j * 6 + k]);
      INFO("D[" << i << ", " << j << "]");
      CHECK(static_cast<double>(wide[i * 3 + j]) == sum);
      const float with_c = static_cast<float>(sum) + static_cast<float>(c[i * 3 + j]);  // exact too
      CHECK(narrow[i * 3 + j].bits == mpx::round_to<E4M3>(with_c).bits);
    }
  }
}

TEST_CASE("FP8 tensors in files: F8_E4M3 and F8_E5M2 decode into any floating tensor", "[numeric][fp8][io]") {
  std::vector<std::uint8_t> codes(256);
  for (unsigned i = 0; i < 256; ++i) codes[i] = static_cast<std::uint8_t>(i);
  const auto bytes = std::as_bytes(std::span(codes));
  std::vector<float> as_float(256);
  std::vector<Eigen::bfloat16> as_bf16(256);
  mpx::io::detail::convert_into(mpx::io::Dtype::F8_E4M3, bytes, as_float.data(), 256);
  mpx::io::detail::convert_into(mpx::io::Dtype::F8_E5M2, bytes, as_bf16.data(), 256);
  for (unsigned i = 0; i < 256; ++i) {
    INFO("code " << i);
    const float e4m3 = value<E4M3>(i);
    const float e5m2 = value<E5M2>(i);
    CHECK((std::bit_cast<std::uint32_t>(as_float[i]) == std::bit_cast<std::uint32_t>(e4m3) ||
           (std::isnan(as_float[i]) && std::isnan(e4m3))));
    // Every E5M2 value is a bf16 value (5 exponent bits <= 8, 2 mantissa bits <= 7).
    const float widened = static_cast<float>(as_bf16[i]);
    CHECK((std::bit_cast<std::uint32_t>(widened) == std::bit_cast<std::uint32_t>(e5m2) ||
           (std::isnan(widened) && std::isnan(e5m2))));
  }
  CHECK(mpx::io::detail::is_floating(mpx::io::Dtype::F8_E4M3));
  CHECK(mpx::io::detail::floating_dtypes() == "F64, F32, F16, BF16, F8_E4M3 or F8_E5M2");
}

}  // namespace MPX_UNITY_ID
}  // namespace
