// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The MX element and scale formats (E2M1, E2M3, E3M2, E8M0) and the block-scaling recipes' scales and
// quantizers: the values and rules that catch a wrong implementation, by name. The code spaces and
// the quantizers are compared bit for bit with ml_dtypes, torchao and Transformer Engine's formulas by
// tests/interop/formats_vs_references.py and tests/interop/block_scaling_vs_references.py.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>

#include <catch2/catch.hpp>

#include <mpx/backend/cpu/block_quantize.hpp>
#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

constexpr float nan = std::numeric_limits<float>::quiet_NaN();
constexpr float inf = std::numeric_limits<float>::infinity();

template <class Tag>
float value(unsigned bits) {
  return static_cast<float>(
      mpx::Encoded<Tag>::from_bits(static_cast<typename mpx::Encoded<Tag>::bits_type>(bits)));
}

template <class Tag>
unsigned code(float x) {
  return mpx::round_to<Tag>(x).bits;
}

mpx::Tensor<float, mpx::Host> random_blocks(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  mpx::Tensor<float, mpx::Host> x(mpx::Shape{rows, cols});
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> exponent(-20.0f, 20.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float magnitude = std::exp2(exponent(generator));
    for (std::int64_t c = 0; c < cols; ++c) x.data()[r * cols + c] = normal(generator) * magnitude;
  }
  return x;
}

}  // namespace

TEST_CASE("MX element formats: values and saturation from their traits", "[numeric][block_scaling]") {
  using mpx::Float4E2M1, mpx::Float6E2M3, mpx::Float6E3M2;
  STATIC_REQUIRE(sizeof(mpx::storage_t<Float4E2M1>) == 1);
  STATIC_REQUIRE(mpx::min_positive_v<Float4E2M1> == 0.5f);
  STATIC_REQUIRE(mpx::min_positive_v<Float6E2M3> == 0.125f);
  STATIC_REQUIRE(mpx::min_positive_v<Float6E3M2> == 0.0625f);
  CHECK(value<Float4E2M1>(0x7) == 6.0f);
  CHECK(value<Float4E2M1>(0x5) == 3.0f);
  CHECK(value<Float4E2M1>(0x1) == 0.5f);
  CHECK(std::signbit(value<Float4E2M1>(0x8)));
  CHECK(value<Float6E2M3>(0x1f) == 7.5f);
  CHECK(value<Float6E3M2>(0x1f) == 28.0f);
  CHECK(value<Float6E3M2>(0x3f) == -28.0f);
  CHECK(code<Float4E2M1>(7.0f) == 0x7);  // beyond 6 saturates: no infinity
  CHECK(code<Float4E2M1>(-inf) == 0xf);
  CHECK(code<Float4E2M1>(0.25f) == 0x0);  // a tie, to the even code (0)
  CHECK(code<Float4E2M1>(0.75f) == 0x2);  // a tie between 0.5 and 1: to 1 (even)
  CHECK(code<Float4E2M1>(2.5f) == 0x4);   // between 2 and 3: to 2 (even)
  CHECK(code<Float4E2M1>(nan) == 0x7);    // no NaN code: +6, mpx's documented choice
  CHECK(code<Float6E3M2>(30.0f) == 0x1f);
}

TEST_CASE("E8M0: an unsigned power of two without zero, NaN 0xFF", "[numeric][block_scaling]") {
  using E8M0 = mpx::Float8E8M0;
  STATIC_REQUIRE(std::is_same_v<mpx::Encoded<E8M0>::bits_type, std::uint8_t>);
  STATIC_REQUIRE(!mpx::has_sign_v<E8M0> && !mpx::has_zero_v<E8M0>);
  STATIC_REQUIRE(mpx::has_sign_v<mpx::Float8E4M3> && mpx::has_zero_v<mpx::Float8E4M3>);
  STATIC_REQUIRE(mpx::min_positive_v<E8M0> == 0x1p-127f);
  STATIC_REQUIRE(mpx::numeric_traits<E8M0>::max_finite == 0x1p127f);
  CHECK(value<E8M0>(0) == 0x1p-127f);
  CHECK(value<E8M0>(127) == 1.0f);
  CHECK(value<E8M0>(254) == 0x1p127f);
  CHECK(std::isnan(value<E8M0>(255)));
  CHECK(code<E8M0>(1.0f) == 127);
  CHECK(code<E8M0>(3.0f) == 129);  // the tie 1.5 * 2^1 rounds up, to 4
  CHECK(code<E8M0>(2.9f) == 128);
  CHECK(code<E8M0>(0.0f) == 255);                           // no zero: NaN
  CHECK(code<E8M0>(-1.0f) == 255);                          // no sign: NaN
  CHECK(code<E8M0>(0x1p-149f) == 0);                        // below the smallest: the smallest
  CHECK(code<E8M0>(std::nextafter(0x1p-127f, 1.0f)) == 1);  // an fp32 subnormal rounds up
  CHECK(code<E8M0>(0x1.8p127f) == 255);                     // overflows to NaN ...
  CHECK((mpx::round_to<E8M0, mpx::Overflow::Saturate>(0x1.8p127f).bits == 254));  // ... or saturates
}

TEST_CASE("MX block scales from amaxes: OCP floor, TE's round-up and cuBLAS's RCEIL",
          "[policy][block_scaling]") {
  using enum mpx::E8M0Rounding;
  using mpx::Float8E4M3, mpx::Float4E2M1;
  // 448 = 1.75 * 2^8 is E4M3's largest: floor gives scale 1 (the block's 448 fits), both round-ups 1.
  CHECK(mpx::mx_scale_code<Float8E4M3>(448.0f, Floor) == 127);
  CHECK(mpx::mx_scale_code<Float8E4M3>(448.0f, RCeil) == 127);
  CHECK(mpx::mx_scale_code<Float8E4M3>(448.0f, RoundUp) == 127);
  // Just past it: floor keeps 1 (the element saturates), the round-ups double the scale.
  CHECK(mpx::mx_scale_code<Float8E4M3>(449.0f, Floor) == 127);
  CHECK(mpx::mx_scale_code<Float8E4M3>(449.0f, RCeil) == 128);
  CHECK(mpx::mx_scale_code<Float8E4M3>(449.0f, RoundUp) == 128);
  // floor(log2 amax) - emax: 511 = 1.99.. * 2^8 still gives 1; 512 gives 2. E2M1's emax is 2.
  CHECK(mpx::mx_scale_code<Float8E4M3>(511.0f, Floor) == 127);
  CHECK(mpx::mx_scale_code<Float8E4M3>(512.0f, Floor) == 128);
  CHECK(mpx::mx_scale_code<Float4E2M1>(6.0f, Floor) == 127);
  CHECK(mpx::mx_scale_code<Float4E2M1>(8.0f, Floor) == 128);
  for (const auto rounding : {Floor, RoundUp, RCeil}) {
    CHECK(mpx::mx_scale_code<Float8E4M3>(nan, rounding) == 255);
    CHECK(mpx::mx_scale_code<Float8E4M3>(0.0f, rounding) == 0);
  }
  CHECK(mpx::mx_scale_code<Float8E4M3>(inf, Floor) == 255 - 8);  // torchao's: a finite scale
  CHECK(mpx::mx_scale_code<Float8E4M3>(inf, RCeil) == 254);
  // TE's float_to_e8m0: fp32 subnormals at or below 2^-127 stay at code 0; FLT_MAX saturates.
  CHECK(mpx::e8m0_code_rounded_up(0x1p-127f) == 0);
  CHECK(mpx::e8m0_code_rounded_up(std::nextafter(0x1p-127f, 1.0f)) == 1);
  CHECK(mpx::e8m0_code_rounded_up(std::numeric_limits<float>::max()) == 254);
  CHECK(mpx::e8m0_element_multiplier(0) == 0x1p127f);
  CHECK(mpx::e8m0_element_multiplier(254) == 0x1p-127f);
  CHECK(std::isnan(mpx::e8m0_element_multiplier(255)));
}

TEST_CASE("NVFP4 scales: TE's global encode scale and E4M3 block scales", "[policy][block_scaling]") {
  CHECK(mpx::nvfp4_global_encode_scale(2688.0f) == 1.0f);
  CHECK(mpx::nvfp4_global_encode_scale(0.0f) == 1.0f);  // an all-zero tensor
  CHECK(mpx::nvfp4_global_encode_scale(inf) == 1.0f);   // 2688 / inf = 0
  CHECK(mpx::nvfp4_global_encode_scale(1e-40f) == std::numeric_limits<float>::max());
  // A block whose amax is the tensor's gets the block scale 448: its largest element encodes as 6.
  const float s_enc = mpx::nvfp4_global_encode_scale(10.0f);
  const auto scale = mpx::nvfp4_block_scale(10.0f, s_enc);
  CHECK(static_cast<float>(scale) == 448.0f);
  CHECK(mpx::round_to<mpx::Float4E2M1>(10.0f * mpx::nvfp4_element_multiplier(scale, s_enc)).bits == 0x7);
  CHECK(std::isnan(static_cast<float>(mpx::nvfp4_block_scale(nan, s_enc))));
}

TEST_CASE("Block quantization: values within the element format's rounding of the source",
          "[cpu][block_scaling]") {
  const auto x = random_blocks(64, 256, 5);
  mpx::BlockQuantized<mpx::MxScaling<mpx::Float8E4M3, mpx::E8M0Rounding::RCeil>> q;
  mpx::cpu::quantize_blocks(x, {1, 32}, q);
  REQUIRE(q.codes.shape() == mpx::Shape{64, 256});
  REQUIRE(q.scales.shape() == mpx::Shape{64, 8});
  const auto values = mpx::cpu::dequantize_blocks(q);
  // RCEIL never saturates; E4M3 keeps 3 mantissa bits: a relative error of at most 2^-4 above the
  // element format's smallest normal value (2^-6 of 448 and more, relative to the block's amax).
  int checked = 0;
  for (std::int64_t r = 0; r < 64; ++r) {
    float amax = 0.0f;
    for (std::int64_t c = 0; c < 256; ++c) amax = std::max(amax, std::fabs(x.data()[r * 256 + c]));
    for (std::int64_t c = 0; c < 256; ++c) {
      const float source = x.data()[r * 256 + c], quantized = values.data()[r * 256 + c];
      if (std::fabs(source) < amax / 16) continue;
      CHECK(std::fabs(quantized - source) <= std::fabs(source) * 0x1p-4f);
      ++checked;
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("Block quantization: 2D NVFP4 blocks quantize W and W^T alike", "[cpu][block_scaling]") {
  const auto w = random_blocks(64, 32, 9);
  // [quantize]
  // A weight [64, 32] in NVFP4's 16 x 16 blocks, and its transpose's copy for the other GEMM that
  // reads it, quantized from the same fp32 source.
  mpx::BlockQuantized<mpx::Nvfp4Scaling<>> rowwise, columnwise;
  mpx::cpu::quantize_blocks(w, {16, 16}, rowwise);                          // codes [64, 32], scales [4, 2]
  mpx::cpu::quantize_blocks(w, {16, 16}, columnwise, {.transpose = true});  // codes [32, 64], scales [2, 4]
  const mpx::Tensor<float, mpx::Host> values =
      mpx::cpu::dequantize_blocks(rowwise);  // code * scale * 1/S_enc
  // [quantize]
  CHECK(values.shape() == w.shape());
  REQUIRE(columnwise.codes.shape() == mpx::Shape{32, 64});
  CHECK(rowwise.global_decode_scale == columnwise.global_decode_scale);
  for (std::int64_t r = 0; r < 64; ++r)
    for (std::int64_t c = 0; c < 32; ++c)
      REQUIRE(rowwise.codes.data()[r * 32 + c].bits == columnwise.codes.data()[c * 64 + r].bits);
  for (std::int64_t br = 0; br < 4; ++br)
    for (std::int64_t bc = 0; bc < 2; ++bc)
      CHECK(rowwise.scales.data()[br * 2 + bc].bits == columnwise.scales.data()[bc * 4 + br].bits);
}

TEST_CASE("Block quantization: extents that are not whole blocks end in partial blocks, as if zero-padded",
          "[cpu][block_scaling]") {
  auto x = random_blocks(3, 40, 4);
  for (std::int64_t c = 32; c < 40; ++c) x.data()[1 * 40 + c] = 0.5f;
  x.data()[1 * 40 + 35] = 1000.0f;  // the largest of row 1's second (8-element) block
  mpx::BlockQuantized<mpx::MxScaling<>> q, padded_q;
  mpx::cpu::quantize_blocks(x, {1, 32}, q);
  REQUIRE(q.scales.shape() == mpx::Shape{3, 2});
  mpx::Tensor<float, mpx::Host> padded(mpx::Shape{3, 64});
  for (std::int64_t r = 0; r < 3; ++r)
    for (std::int64_t c = 0; c < 40; ++c) padded.data()[r * 64 + c] = x.data()[r * 40 + c];
  mpx::cpu::quantize_blocks(padded, {1, 32}, padded_q);
  for (std::int64_t i = 0; i < 6; ++i) CHECK(q.scales.data()[i].bits == padded_q.scales.data()[i].bits);
  CHECK(q.scales.data()[3].bits == mpx::mx_scale_code<mpx::Float8E4M3>(1000.0f, mpx::E8M0Rounding::Floor));
  for (std::int64_t r = 0; r < 3; ++r)
    for (std::int64_t c = 0; c < 40; ++c)
      CHECK(q.codes.data()[r * 40 + c].bits == padded_q.codes.data()[r * 64 + c].bits);
  mpx::BlockQuantized<mpx::Nvfp4Scaling<>> empty;  // no values: no blocks, the global scale 1
  mpx::cpu::quantize_blocks(mpx::Tensor<float, mpx::Host>(mpx::Shape{0, 16}), {1, 16}, empty);
  CHECK(empty.scales.numel() == 0);
  CHECK(empty.global_decode_scale == 1.0f);
  CHECK_THROWS_WITH(mpx::cpu::quantize_blocks(x, {0, 32}, q),
                    Catch::Contains("0 x 32") && Catch::Contains("positive"));
}

}  // namespace MPX_UNITY_ID
}  // namespace
