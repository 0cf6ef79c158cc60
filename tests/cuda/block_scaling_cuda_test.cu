// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Block-scaled GEMMs on the GPU against the CPU emulation (mpx::cpu::gemm_block_scaled, fp32 sums of
// the exact scaled products): MXFP8, NVFP4 (2D weight blocks, global scales) and FP8 128-blocks, on
// cuBLASLt's block-scaled kernels where the GPU has them (compute capability 10.0 or newer, K a
// multiple of 128) and on the decoded path elsewhere. Both sum exact products in fp32 (or wider), in
// different orders, so each output must lie within 2 K ulps of fp32 of the sum of its terms'
// magnitudes. Each case prints one "block-scaled gemm:" line naming the path and the largest
// difference. main() is in numeric_cuda_test.cu and skips (exit 77) without a device.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>

#include <catch2/catch.hpp>

#include <mpx/backend/cpu/block_quantize.hpp>
#include <mpx/backend/cpu/block_scaled_gemm.hpp>
#include <mpx/backend/cuda/gemm_block_scaled.cuh>
#include <mpx/cuda.hpp>

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

mpx::Tensor<float> normal_matrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  mpx::Tensor<float> x(mpx::Shape{rows, cols});
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> exponent(-6.0f, 6.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float magnitude = std::exp2(exponent(generator));
    for (std::int64_t c = 0; c < cols; ++c) x.data()[r * cols + c] = normal(generator) * magnitude;
  }
  return x;
}

template <class Recipe>
mpx::BlockQuantized<Recipe, mpx::Cuda> to_device(const mpx::BlockQuantized<Recipe>& q) {
  return {mpx::to<mpx::Cuda>(q.codes), mpx::to<mpx::Cuda>(q.scales), q.global_decode_scale, q.block};
}

// D = A B^T on both devices (a bias epilogue), compared within 2 K ulps of the terms' magnitudes.
template <class Recipe>
void check_against_cpu(const char* name, std::int64_t m, std::int64_t n, std::int64_t k,
                       mpx::BlockShape a_block, mpx::BlockShape b_block) {
  mpx::BlockQuantized<Recipe> a, b;
  mpx::cpu::quantize_blocks(normal_matrix(m, k, 1), a_block, a);
  mpx::cpu::quantize_blocks(normal_matrix(n, k, 2), b_block, b);
  mpx::Tensor<float> bias(mpx::Shape{n});
  for (std::int64_t j = 0; j < n; ++j) bias.data()[j] = 0.5f * float(j % 7);
  mpx::Tensor<float> expected(mpx::Shape{m, n});
  const mpx::GemmConfig config{.alpha = 0.75f, .epilogue = mpx::Epilogue::Bias};
  mpx::cpu::gemm_block_scaled(a, b, expected, config, {.bias = &bias});

  const auto bias_device = mpx::to<mpx::Cuda>(bias);
  mpx::Tensor<float, mpx::Cuda> d(mpx::Shape{m, n});
  mpx::cuda::reset_gemm_path_counts();
  mpx::cuda::gemm_block_scaled(to_device(a), to_device(b), d, config, {.bias = &bias_device});
  const auto counts = mpx::cuda::gemm_path_counts();
  const auto got = mpx::to<mpx::Host>(d);

  const auto av = mpx::cpu::dequantize_blocks(a), bv = mpx::cpu::dequantize_blocks(b);
  double worst = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double magnitude = std::fabs(bias.data()[j]);
      for (std::int64_t l = 0; l < k; ++l)
        magnitude += 0.75 * std::fabs(double(av.data()[i * k + l]) * bv.data()[j * k + l]);
      const double difference = std::fabs(double(got.data()[i * n + j]) - expected.data()[i * n + j]);
      worst = std::max(worst, difference / magnitude);
      REQUIRE(difference <= 2.0 * double(k + 2) * 0x1p-23 * magnitude);
    }
  }
  std::printf(
      "block-scaled gemm: %s %lld x %lld x %lld on the %s path, largest difference %.3g of the terms' "
      "magnitudes\n",
      name, static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
      counts.decoded > 0 ? "decoded" : "cuBLASLt block-scaled", worst);
}

}  // namespace

TEST_CASE("Block-scaled GEMMs on the GPU sum what the CPU emulation sums", "[cuda][block_scaling][gemm]") {
  check_against_cpu<mpx::MxScaling<>>("mxfp8", 128, 96, 256, {1, 32}, {1, 32});
  check_against_cpu<mpx::MxScaling<>>("mxfp8", 40, 24, 100, {1, 32}, {1, 32});  // partial blocks: decoded
  check_against_cpu<mpx::Nvfp4Scaling<>>("nvfp4", 128, 64, 256, {1, 16}, {16, 16});
  check_against_cpu<mpx::MxScaling<mpx::Float4E2M1>>("mxfp4", 64, 64, 128, {1, 32}, {1, 32});
  check_against_cpu<mpx::Fp8BlockScaling<>>("fp8block", 64, 128, 384, {1, 128}, {128, 128});
}

TEST_CASE("The GPU's block-scaled GEMM names the operands it refuses", "[cuda][block_scaling][gemm]") {
  mpx::BlockQuantized<mpx::MxScaling<>> a, b;
  mpx::cpu::quantize_blocks(normal_matrix(4, 64, 3), {1, 32}, a);
  mpx::cpu::quantize_blocks(normal_matrix(4, 96, 4), {1, 32}, b);
  mpx::Tensor<float, mpx::Cuda> d(mpx::Shape{4, 4});
  CHECK_THROWS_WITH(mpx::cuda::gemm_block_scaled(to_device(a), to_device(b), d, {}),
                    Catch::Contains("[4, 64]") && Catch::Contains("[4, 96]"));
  CHECK_THROWS_AS(
      mpx::cuda::gemm_block_scaled(to_device(a), to_device(a), d, {.transpose_a = mpx::Transpose::Yes}),
      mpx::invalid_argument);
}

}  // namespace MPX_UNITY_ID
}  // namespace
