// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// How the GPU's fp16 and bf16 GEMMs sum their products: cuBLASLt's (mpx::cuda::gemm, fp32 compute)
// against two CPU sums of the same products: mpx::Hopper16BitAccumulation's (Hopper's `wgmma` as
// MMA-Sim models it: 16 products a group, 25 bits kept in alignment, the sum truncated to fp32) and
// mpx::cpu::gemm's (round-to-nearest fp32 sums, in its blocked order), output by output. Each case prints
// one "16-bit accumulation:" line, the shares of outputs equal to each model bit for bit: the check
// docs/cuda.md lists for the first GPU run. On compute capability 9.0 the outputs must lie within
// the Hopper model's own error bound (twice: the GPU's truncations, in its order, are bounded alike);
// elsewhere, within fp32 accumulation's. main() is in numeric_cuda_test.cu and skips (exit 77)
// without a device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/cuda.hpp>

#include "../support/mismatch_log.hpp"
#include "accumulation_bounds.hpp"
#include "comparisons.hpp"

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Tensor;

struct Case {
  std::int64_t m, n, k;
  bool positive;     // |N(0, 1)| operands show the accumulator's loss; N(0, 1) ones its cancellation
  bool transpose_b;  // B stored [n, k] (TN, as the FP8 GEMMs need) or [k, n]
};

// Operands of Tag drawn from N(0, 1) (or its magnitude), rounded into Tag.
template <class Tag>
Tensor<mpx::storage_t<Tag>> random_operand(const Shape& shape, bool positive, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor<mpx::storage_t<Tag>> x(shape);
  for (auto& v : x.values()) {
    const float value = normal(rng);
    v = static_cast<mpx::storage_t<Tag>>(positive ? std::abs(value) : value);
  }
  return x;
}

// D = A op(B) in fp32 on the GPU, compared with cpu::gemm_scaled under each model (scale 1).
template <class Tag>
void check_case(const Case& c, bool hopper, std::mt19937& rng) {
  using S = mpx::storage_t<Tag>;
  const auto a = random_operand<Tag>(Shape{c.m, c.k}, c.positive, rng);
  const auto b = random_operand<Tag>(c.transpose_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, c.positive, rng);
  const mpx::GemmConfig config{.transpose_b = c.transpose_b ? mpx::Transpose::Yes : mpx::Transpose::No};
  const float one = 1.0f;
  Tensor<float> hopper_model(Shape{c.m, c.n}), cpu_gemm(Shape{c.m, c.n});
  mpx::cpu::gemm_scaled<Tag, Tag, mpx::Hopper16BitAccumulation>(a, b, hopper_model, config, {}, &one, &one);
  mpx::cpu::gemm<Tag>(a, b, cpu_gemm, config, {});

  const auto a_gpu = mpx::to<mpx::Cuda>(a);
  const auto b_gpu = mpx::to<mpx::Cuda>(b);
  Tensor<float, mpx::Cuda> d_gpu(Shape{c.m, c.n});
  mpx::cuda::gemm<Tag>(a_gpu, b_gpu, d_gpu, config, {});
  const Tensor<float> d = mpx::to<mpx::Host>(d_gpu);

  // The bounds along B's columns: B as [n, k].
  Tensor<S> b_rows(Shape{c.n, c.k});
  for (std::int64_t j = 0; j < c.n; ++j) {
    for (std::int64_t p = 0; p < c.k; ++p)
      b_rows[j * c.k + p] = c.transpose_b ? b[j * c.k + p] : b[p * c.n + j];
  }
  std::vector<double> bounds, magnitudes;
  mpx_test::model_bounds<mpx::Hopper16BitAccumulation, Tag, Tag>(a, b_rows, c.m, c.n, c.k, bounds,
                                                                 magnitudes);

  const std::string what = std::string(mpx::numeric_traits<Tag>::name) + (c.transpose_b ? " TN " : " NN ") +
                           std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                           (c.positive ? " positive" : " signed");
  mpx_test::MismatchLog log(what);
  std::int64_t equal_hopper = 0, equal_cpu = 0;
  double largest = 0.0, largest_share = 0.0;
  constexpr double eps32 = 0x1p-23;
  for (std::int64_t i = 0; i < c.m * c.n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    equal_hopper += mpx_test::same_bits_or_both_nan(d[i], hopper_model[i]) ? 1 : 0;
    equal_cpu += mpx_test::same_bits_or_both_nan(d[i], cpu_gemm[i]) ? 1 : 0;
    // Twice the model's bound on sm_90; elsewhere fp32 sums in any order (k roundings of the
    // magnitude), which is also what a split-K reduction adds.
    const double bound = hopper ? 2.0 * bounds[at] + 4.0 * eps32 * magnitudes[at]
                                : static_cast<double>(c.k) * eps32 * magnitudes[at];
    const double difference = std::abs(double(d[i]) - double(hopper_model[i]));
    largest = std::max(largest, difference);
    largest_share = std::max(largest_share, bound > 0.0 ? difference / bound : 0.0);
    log.check(difference <= bound, [&] {
      return "[" + std::to_string(i / c.n) + ", " + std::to_string(i % c.n) + "] gpu " +
             std::to_string(d[i]) + " Hopper16BitAccumulation " + std::to_string(hopper_model[i]) +
             " bound " + std::to_string(bound);
    });
  }
  const double outputs = static_cast<double>(c.m * c.n);
  std::printf(
      "16-bit accumulation: %s: %.2f%% of %lld outputs equal Hopper16BitAccumulation's bit for bit, %.2f%% "
      "the CPU GEMM's (fp32 sums); largest difference from the Hopper model %.3g (%.3f of its bound)\n",
      what.c_str(), 100.0 * double(equal_hopper) / outputs, static_cast<long long>(c.m * c.n),
      100.0 * double(equal_cpu) / outputs, largest, largest_share);
  INFO(log.summary());
  CHECK(log.failures() == 0);
}

template <class Tag>
void check_cases(bool hopper) {
  std::mt19937 rng(16);
  // K = 4096 as in the FP8 check; 256 for a short sum; both layouts (the kernel, and with it the
  // order along k, may differ between them).
  for (const Case& c : {Case{32, 48, 4096, true, true}, Case{32, 48, 4096, false, true},
                        Case{64, 64, 4096, true, false}, Case{128, 96, 256, false, true}}) {
    check_case<Tag>(c, hopper, rng);
  }
}

}  // namespace

TEST_CASE("cuBLASLt's fp16 and bf16 GEMMs sum as Hopper16BitAccumulation says on sm_90",
          "[cuda][gemm][accumulation]") {
  const cudaDeviceProp& properties = mpx::cuda_context().properties();
  const bool hopper = properties.major == 9 && properties.minor == 0;
  if (!hopper) {
    WARN("compute capability "
         << properties.major << "." << properties.minor
         << ": the outputs are held to fp32 accumulation's bound, not the Hopper model's");
  }
  SECTION("bf16") {
    check_cases<mpx::BFloat16>(hopper);
  }
  SECTION("fp16") {
    check_cases<mpx::Half>(hopper);
  }
}

}  // namespace MPX_UNITY_ID
}  // namespace
