// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The block-scaled GEMM (its two accumulator models, against independent scalar references),
// stochastic rounding into E2M1, NVFP4's random Hadamard transform, and nn::Linear under the
// block-scaled precisions: forward and backward against bf16's, stochastic rounding keyed by the step.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/backend/cpu/block_quantize.hpp>
#include <mpx/backend/cpu/block_scaled_gemm.hpp>
#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

mpx::Tensor<float, mpx::Host> normal_matrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed,
                                            float spread = 4.0f) {
  mpx::Tensor<float, mpx::Host> x(mpx::Shape{rows, cols});
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> exponent(-spread, spread);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float magnitude = std::exp2(exponent(generator));
    for (std::int64_t c = 0; c < cols; ++c) x.data()[r * cols + c] = normal(generator) * magnitude;
  }
  return x;
}

// sum_k a[i][k] b[j][k] of the dequantized operands, in double, and the sum of the terms' magnitudes.
template <class RA, class RB>
void reference_product(const mpx::BlockQuantized<RA>& a, const mpx::BlockQuantized<RB>& b, std::int64_t i,
                       std::int64_t j, double& sum, double& magnitude) {
  const auto av = mpx::cpu::dequantize_blocks(a);
  const auto bv = mpx::cpu::dequantize_blocks(b);
  const std::int64_t k = av.shape().cols();
  sum = magnitude = 0;
  for (std::int64_t l = 0; l < k; ++l) {
    const double term = double(av.data()[i * k + l]) * double(bv.data()[j * k + l]);
    sum += term;
    magnitude += std::fabs(term);
  }
}

float to_float(float x) {
  return x;
}
template <class T>
float to_float(T x) {
  return static_cast<float>(x);
}

}  // namespace

TEST_CASE("Block-scaled GEMM, fp32 sums: the dequantized operands' product, epilogue included",
          "[cpu][block_scaling][gemm]") {
  const auto x = normal_matrix(24, 100, 1), w = normal_matrix(20, 100, 2);  // K = 100: a partial block
  mpx::BlockQuantized<mpx::Nvfp4Scaling<>> xq, wq;
  mpx::cpu::quantize_blocks(x, {1, 16}, xq);
  mpx::cpu::quantize_blocks(w, {16, 16}, wq);
  mpx::Tensor<float, mpx::Host> bias(mpx::Shape{20});
  for (std::int64_t j = 0; j < 20; ++j) bias.data()[j] = 0.25f * float(j);
  mpx::Tensor<float, mpx::Host> y(mpx::Shape{24, 20});
  mpx::cpu::gemm_block_scaled(xq, wq, y, {.alpha = 0.5f, .epilogue = mpx::Epilogue::Bias}, {.bias = &bias});
  for (std::int64_t i = 0; i < 24; ++i) {
    for (std::int64_t j = 0; j < 20; ++j) {
      double sum = 0, magnitude = 0;
      reference_product(xq, wq, i, j, sum, magnitude);
      CHECK(std::fabs(double(y.data()[i * 20 + j]) - (0.5 * sum + 0.25 * j)) <= 1e-5 * (magnitude + j));
    }
  }
}

TEST_CASE("Block-scaled GEMM, modelled sums: each block's partial by the model, promoted with both scales",
          "[cpu][block_scaling][gemm][accumulation]") {
  using Recipe = mpx::Fp8BlockScaling<>;
  using Model = mpx::HopperFp8FastAccumulation;
  const std::int64_t m = 9, n = 18, k = 300;  // three 128-blocks, the last of 44
  const auto a = normal_matrix(m, k, 3, 10.0f), b = normal_matrix(n, k, 4, 10.0f);
  mpx::BlockQuantized<Recipe> aq, bq;
  mpx::cpu::quantize_blocks(a, {1, 128}, aq);
  mpx::cpu::quantize_blocks(b, {128, 128}, bq);
  mpx::Tensor<Eigen::bfloat16, mpx::Host> y(mpx::Shape{m, n});
  mpx::cpu::gemm_block_scaled<Model>(aq, bq, y, {.alpha = 2.0f});
  std::vector<float> row(128), column(128);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::int64_t first = 0, block = 0; first < k; first += 128, ++block) {
        const std::int64_t w = std::min<std::int64_t>(128, k - first);
        for (std::int64_t l = 0; l < w; ++l) {
          row[l] = static_cast<float>(aq.codes.data()[i * k + first + l]);
          column[l] = static_cast<float>(bq.codes.data()[j * k + first + l]);
        }
        const float partial = Model::accumulate<mpx::Float8E4M3, mpx::Float8E4M3>(
            0.0f, std::span<const float>(row.data(), w), std::span<const float>(column.data(), w));
        const double scale =
            double(aq.scales.data()[i * 3 + block]) * double(bq.scales.data()[(j / 128) * 3 + block]);
        acc = acc + static_cast<float>(double(partial) * scale);
      }
      REQUIRE(to_float(y.data()[i * n + j]) == to_float(Eigen::bfloat16(2.0f * acc)));
    }
  }
}

TEST_CASE("Block-scaled GEMM: operands that do not fit are refused, naming them",
          "[cpu][block_scaling][gemm]") {
  const auto x = normal_matrix(4, 64, 5);
  mpx::BlockQuantized<mpx::MxScaling<>> a, b;
  mpx::cpu::quantize_blocks(x, {1, 32}, a);
  mpx::cpu::quantize_blocks(normal_matrix(4, 48, 6), {1, 32}, b);
  mpx::Tensor<float, mpx::Host> y(mpx::Shape{4, 4});
  CHECK_THROWS_WITH(mpx::cpu::gemm_block_scaled(a, b, y, {}),
                    Catch::Contains("[4, 64]") && Catch::Contains("[4, 48]"));
  CHECK_THROWS_AS(mpx::cpu::gemm_block_scaled(a, a, y, {.transpose_b = mpx::Transpose::Yes}),
                  mpx::invalid_argument);
}

TEST_CASE("Stochastic rounding into E2M1: neighbours only, unbiased, saturating",
          "[numeric][block_scaling]") {
  using mpx::Float4E2M1;
  const auto value = [](mpx::Encoded<Float4E2M1> code) { return static_cast<float>(code); };
  CHECK(value(mpx::round_stochastic<Float4E2M1>(2.5f, 0u)) == 3.0f);           // bits below the threshold
  CHECK(value(mpx::round_stochastic<Float4E2M1>(2.5f, 0xffffffffu)) == 2.0f);  // above it
  CHECK(value(mpx::round_stochastic<Float4E2M1>(-0.25f, 0u)) == -0.5f);
  CHECK(value(mpx::round_stochastic<Float4E2M1>(3.0f, 0u)) == 3.0f);  // representable: unchanged
  CHECK(value(mpx::round_stochastic<Float4E2M1>(7.0f, 0u)) == 6.0f);  // saturates
  CHECK(value(mpx::round_stochastic<Float4E2M1>(-1e30f, 0u)) == -6.0f);
  for (const float x : {0.1f, 0.7f, 1.2f, 2.3f, 4.9f, -3.3f}) {
    double sum = 0;
    constexpr int draws = 20000;
    for (int i = 0; i < draws; ++i) {
      const float r = value(mpx::round_stochastic<Float4E2M1>(x, mpx::random_bits(7, 1, std::uint64_t(i))));
      sum += r;
    }
    CHECK(std::fabs(sum / draws - x) < 0.02);
  }
}

TEST_CASE("Stochastic rounding of a block: the vectorised encoder gives round_stochastic's codes",
          "[cpu][block_scaling]") {
  // Philox blocks a lane at a time are the generator's own blocks.
  std::vector<std::uint32_t> words(4 * 37);
  mpx::philox_blocks(99, 5, (std::uint64_t{1} << 32) - 3, 37, words.data());
  for (std::uint64_t j = 0; j < 37; ++j) {
    const auto block = mpx::philox_block(99, 5, (std::uint64_t{1} << 32) - 3 + j);
    for (int w = 0; w < 4; ++w) REQUIRE(words[4 * j + w] == block.v[w]);
  }
  // Every E2M1 and E4M3 spacing, subnormals, ties, values past the largest, NaN, zeros.
  std::vector<float> values;
  std::mt19937 generator(13);
  std::uniform_real_distribution<float> uniform(-8.0f, 8.0f);
  for (int i = 0; i < 20000; ++i) values.push_back(uniform(generator));
  for (const float special :
       {0.0f, -0.0f, 0.25f, 0.75f, 5.0f, 6.0f, 6.5f, 1e30f, -1e-30f, 1e-45f, 448.0f, 500.0f,
        std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
    values.push_back(special);
  std::vector<std::uint32_t> bits(values.size());
  for (std::size_t i = 0; i < bits.size(); ++i)
    bits[i] = i % 7 == 0 ? std::uint32_t(i) : std::uint32_t(generator());
  const auto check = [&]<class Format>(Format, float factor) {
    std::vector<std::uint8_t> codes(values.size());
    mpx::cpu::detail::encode_block_stochastic<Format>(values.data(), std::int64_t(values.size()), factor,
                                                      bits.data(), codes.data());
    for (std::size_t i = 0; i < values.size(); ++i) {
      INFO(values[i] << " x " << factor << " bits " << bits[i]);
      REQUIRE(codes[i] == mpx::round_stochastic<Format>(values[i] * factor, bits[i]).bits);
    }
  };
  check(mpx::Float4E2M1{}, 1.0f);
  check(mpx::Float4E2M1{}, 0.01f);
  check(mpx::Float8E4M3{}, 1.0f);
  check(mpx::Float8E4M3{}, 0x1p-12f);
  check(mpx::Float6E2M3{}, 1.0f);
}

TEST_CASE("Random Hadamard transform: orthogonal, so a GEMM of two transformed operands keeps its product",
          "[numeric][block_scaling]") {
  const auto a = normal_matrix(8, 64, 7), b = normal_matrix(6, 64, 8);
  auto ta = a.clone(), tb = b.clone();
  for (std::int64_t r = 0; r < 8; ++r)
    for (std::int64_t c = 0; c < 64; c += 16) mpx::random_hadamard_16(ta.data() + r * 64 + c);
  for (std::int64_t r = 0; r < 6; ++r)
    for (std::int64_t c = 0; c < 64; c += 16) mpx::random_hadamard_16(tb.data() + r * 64 + c);
  for (std::int64_t i = 0; i < 8; ++i) {
    for (std::int64_t j = 0; j < 6; ++j) {
      double plain = 0, transformed = 0, magnitude = 0;
      for (std::int64_t l = 0; l < 64; ++l) {
        plain += double(a.data()[i * 64 + l]) * b.data()[j * 64 + l];
        transformed += double(ta.data()[i * 64 + l]) * tb.data()[j * 64 + l];
        magnitude += std::fabs(double(a.data()[i * 64 + l]) * b.data()[j * 64 + l]);
      }
      CHECK(std::fabs(plain - transformed) <= 1e-5 * magnitude);
    }
  }
  // It mixes: a single outlier spreads over all 16 values, each 1/4 of it.
  float v[16] = {};
  v[3] = 8.0f;
  mpx::random_hadamard_16(v);
  for (const float x : v) CHECK(std::fabs(x) == 2.0f);
}

TEST_CASE("Block-scaled precisions: names and members", "[policy][block_scaling]") {
  STATIC_REQUIRE(mpx::BlockScaledPrecisionPolicy<mpx::mxfp8<>>);
  STATIC_REQUIRE(!mpx::BlockScaledPrecisionPolicy<mpx::bf16_mixed>);
  STATIC_REQUIRE(!mpx::Fp8PrecisionPolicy<mpx::nvfp4<>>);
  STATIC_REQUIRE(std::is_same_v<mpx::compute_t<mpx::nvfp4<>>, Eigen::bfloat16>);
  STATIC_REQUIRE(std::is_same_v<mpx::nvfp4<>::forward_format, mpx::Float4E2M1>);
  CHECK(mpx::mxfp8<>::name == "mxfp8");
  CHECK(mpx::mxfp8<mpx::E8M0Rounding::RCeil>::name == "mxfp8_rceil");
  CHECK(mpx::nvfp4<>::name == "nvfp4");
  CHECK(mpx::nvfp4<false, true, false>::name == "nvfp4_1d_norht");
  CHECK(mpx::fp8_block<>::name == "fp8block");
  CHECK(mpx::fp8_block<mpx::HopperBlockScaledAccumulation>::name == "fp8block_truncated_truncated_truncated");
  CHECK(mpx::BlockScaledPrecision<mpx::MxScaling<>, mpx::MxScaling<mpx::Float8E5M2>, mpx::Half>::name ==
        "mxfp8_grad_mxfp8_e5m2_fp16");
  CHECK(mpx::MxScaling<mpx::Float4E2M1, mpx::E8M0Rounding::RoundUp>::name == "mxfp4_roundup");
}

TEST_CASE("Linear under block-scaled precisions: forward and backward close to bf16's",
          "[nn][block_scaling]") {
  const auto x32 = normal_matrix(64, 96, 9, 1.0f), dy32 = normal_matrix(64, 48, 10, 1.0f);
  const auto x = mpx::convert<mpx::BFloat16>(x32);
  const auto dy = mpx::convert<mpx::BFloat16>(dy32);
  mpx::nn::Linear<mpx::bf16_mixed> reference(96, 48);
  reference.initialize(3, 1);
  reference.forward(x);
  const auto* reference_dx = reference.backward(dy);
  // Relative Frobenius distance from the bf16 layer's tensor.
  const auto distance = [](const auto& t, const auto& ref) {
    double diff = 0, norm = 0;
    for (std::int64_t i = 0; i < ref.numel(); ++i) {
      const double r = to_float(ref.data()[i]);
      diff += (to_float(t.data()[i]) - r) * (to_float(t.data()[i]) - r);
      norm += r * r;
    }
    return std::sqrt(diff / norm);
  };
  const auto check = [&](auto layer, double bound) {
    layer.initialize(3, 1);
    const auto& y = layer.forward(x);
    const auto* dx = layer.backward(dy);
    INFO(decltype(layer)::kind << " " << bound);
    CHECK(distance(y, reference.forward(x)) < bound);
    CHECK(distance(*dx, *reference_dx) < bound);
    CHECK(distance(layer.weight().grad(), reference.weight().grad()) < bound);
    CHECK(distance(layer.bias()->grad(), reference.bias()->grad()) < 1e-2);  // from the bf16 dZ
    return distance(y, reference.forward(x));
  };
  // E4M3's 3 mantissa bits: a few percent; E2M1's 1 bit: about a fifth.
  const double mx = check(mpx::nn::Linear<mpx::mxfp8<>>(96, 48), 0.06);
  check(mpx::nn::Linear<mpx::fp8_block<>>(96, 48), 0.08);
  check(mpx::nn::Linear<mpx::fp8_block<mpx::HopperBlockScaledAccumulation>>(96, 48), 0.08);
  const double fp4 = check(mpx::nn::Linear<mpx::nvfp4<>>(96, 48), 0.3);
  check(mpx::nn::Linear<mpx::nvfp4<false, false, false>>(96, 48), 0.3);
  CHECK(mx < fp4);
}

TEST_CASE("Linear under NVFP4: stochastic rounding keyed by the bound step", "[nn][block_scaling]") {
  const auto x = mpx::convert<mpx::BFloat16>(normal_matrix(32, 64, 11, 1.0f));
  const auto dy = mpx::convert<mpx::BFloat16>(normal_matrix(32, 32, 12, 1.0f));
  const auto weight_grad_at = [&](std::int64_t step) {
    mpx::nn::Linear<mpx::nvfp4<>> layer(64, 32);
    layer.initialize(5, 2);
    layer.bind_step({.step = &step, .micro_batch = 0});
    layer.forward(x);
    layer.backward(dy);
    return layer.weight().grad().clone();
  };
  const auto first = weight_grad_at(1), again = weight_grad_at(1), second = weight_grad_at(2);
  bool differs = false;
  for (std::int64_t i = 0; i < first.numel(); ++i) {
    REQUIRE(first.data()[i] == again.data()[i]);
    differs |= first.data()[i] != second.data()[i];
  }
  CHECK(differs);
}

TEST_CASE("cuBLASLt's swizzled scale layout: torchao's to_blocked, step by step", "[block_scaling]") {
  // to_blocked: pad to [128 R, 4 C]; view [R, 128, C, 4]; permute to [R, C, 128, 4]; view the 128 rows
  // as [4, 32]; swap those two; flatten. Element (r, c) lands at the flat index of
  // [r / 128][c / 4][r % 32][(r % 128) / 32][c % 4] in a [R, C, 32, 4, 4] array.
  for (const auto& [rows, cols] :
       {std::pair<std::int64_t, std::int64_t>{128, 4}, {300, 7}, {5, 49}, {513, 12}}) {
    const std::int64_t tile_rows = (rows + 127) / 128, tile_cols = (cols + 3) / 4;
    CHECK(mpx::swizzled_scale_bytes(rows, cols) == tile_rows * tile_cols * 512);
    std::vector<int> seen(static_cast<std::size_t>(mpx::swizzled_scale_bytes(rows, cols)), 0);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t index[5] = {r / 128, c / 4, r % 32, (r % 128) / 32, c % 4};
        const std::int64_t extent[5] = {tile_rows, tile_cols, 32, 4, 4};
        std::int64_t flat = 0;
        for (int d = 0; d < 5; ++d) flat = flat * extent[d] + index[d];
        REQUIRE(mpx::swizzled_scale_offset(r, c, cols) == flat);
        ++seen[static_cast<std::size_t>(flat)];
      }
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == rows * cols);  // no two scales share a byte
  }
}

}  // namespace MPX_UNITY_ID
}  // namespace
