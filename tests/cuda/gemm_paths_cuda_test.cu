// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Which path mpx::cuda::gemm takes (gemm_path_counts: fused, unfused, refused), for the shapes the
// benchmarks time and for shapes cuBLASLt may not fuse; gradient accumulation through BGRAD with
// beta = 1 into fp32; the unfused path under CUDA graph capture; and which rounding the GPU's TF32
// Tensor Cores apply to fp32 operands. main() is in numeric_cuda_test.cu and skips without a device.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <mpx/cuda.hpp>

#include "../support/relu_mask.hpp"
#include "../support/tolerances.hpp"
#include "support.hpp"

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Cuda;
using mpx_test::random_host;
using mpx_test::to_double;

// The counts of one call sequence, run from zero.
template <class Run>
mpx::cuda::GemmPathCounts counts_of(Run&& run) {
  mpx::cuda::reset_gemm_path_counts();
  run();
  return mpx::cuda::gemm_path_counts();
}

// A Linear layer's three GEMMs in bf16 (forward with `epilogue`, dW with BGradA into fp32, dX with
// `dx_epilogue`), as nn::Linear issues them and bench/linear_cuda.cu times them. A dX GEMM with DRelu
// is that of a Linear after a Linear<ReLU> in a Sequential: it applies the layer below's ReLU
// gradient, reading that layer's bit mask (here all zeros: the path, not the values, is tested).
void linear_gemms(std::int64_t batch, std::int64_t in, std::int64_t out, mpx::Epilogue epilogue,
                  mpx::Epilogue dx_epilogue, std::mt19937& rng) {
  using B = Eigen::bfloat16;
  const auto x = mpx::to_device(random_host<B>(mpx::Shape{batch, in}, rng));
  const auto w = mpx::to_device(random_host<B>(mpx::Shape{out, in}, rng));
  const auto bias = mpx::to_device(random_host<B>(mpx::Shape{out}, rng));
  const auto dz = mpx::to_device(random_host<B>(mpx::Shape{batch, out}, rng));
  mpx::Tensor<B, Cuda> y(mpx::Shape{batch, out});
  mpx::Tensor<B, Cuda> aux(mpx::Shape{batch, out});
  mpx::Tensor<std::int32_t, Cuda> mask(mpx::relu_mask_shape(y.shape()));
  mpx::Tensor<float, Cuda> dw(mpx::Shape{out, in});
  mpx::Tensor<float, Cuda> db(mpx::Shape{out});
  mpx::Tensor<B, Cuda> dx(mpx::Shape{batch, in});
  mpx::Tensor<std::int32_t, Cuda> mask_below(mpx::relu_mask_shape(dx.shape()));
  mpx::cuda::gemm<mpx::BFloat16>(x, w, y, {.transpose_b = mpx::Transpose::Yes, .epilogue = epilogue},
                                 {.bias = &bias,
                                  .aux = mpx::writes_aux(epilogue) ? &aux : nullptr,
                                  .relu_mask = mpx::writes_relu_mask(epilogue) ? &mask : nullptr});
  mpx::cuda::gemm<mpx::BFloat16>(
      dz, x, dw, {.transpose_a = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::BGradA}, {.bias_grad = &db});
  mpx::cuda::gemm<mpx::BFloat16>(dz, w, dx, {.epilogue = dx_epilogue},
                                 {.relu_mask = mpx::reads_relu_mask(dx_epilogue) ? &mask_below : nullptr});
  mpx::cuda_context().synchronize();
}

}  // namespace

TEST_CASE(
    "the benchmarks' bf16 Linear shapes run fused: bias and activation epilogues, the ReLU mask, BGRAD into "
    "fp32",
    "[cuda][gemm][paths][large]") {
  std::mt19937 rng(21);
  // bench/linear_cuda.cu and bench/mlp_step_cuda.cu (4096 features, batch 512 and 4096 in the MLP),
  // and the Fashion-MNIST MLP's hidden layers (784 -> 256 -> 128, batch 128). A training Linear<ReLU>
  // runs RELU_AUX_BIAS (ReluBias is its evaluation forward); a Linear above one runs its dX with DRELU.
  struct Shape {
    std::int64_t batch, in, out;
  };
  struct Epilogues {
    mpx::Epilogue forward, dx;
  };
  for (const Shape s : {Shape{512, 4096, 4096}, Shape{128, 784, 256}, Shape{128, 256, 128}}) {
    for (const Epilogues e : {Epilogues{mpx::Epilogue::Bias, mpx::Epilogue::Default},
                              Epilogues{mpx::Epilogue::ReluBias, mpx::Epilogue::Default},
                              Epilogues{mpx::Epilogue::ReluAuxBias, mpx::Epilogue::DRelu},
                              Epilogues{mpx::Epilogue::GeluAuxBias, mpx::Epilogue::Default}}) {
      INFO("batch " << s.batch << ", " << s.in << " -> " << s.out << ", epilogue "
                    << mpx::to_string(e.forward) << ", dX epilogue " << mpx::to_string(e.dx));
      const auto counts = counts_of([&] { linear_gemms(s.batch, s.in, s.out, e.forward, e.dx, rng); });
      CHECK(counts.fused == 3);
      CHECK(counts.unfused == 0);
      CHECK(counts.refused == 0);
    }
  }
}

TEST_CASE(
    "gemm reports every call's path, and a refused or missing fused kernel still gives the right result",
    "[cuda][gemm][paths]") {
  std::mt19937 rng(22);
  using B = Eigen::bfloat16;
  // DGelu with N = 50: cuBLASLt needs the GELU aux's leading dimension (N) to be a multiple of 8, so
  // mpx never asks it: unfused, neither a refusal nor a missing algorithm.
  const auto a = mpx::to_device(random_host<B>(mpx::Shape{64, 32}, rng));
  const auto b = mpx::to_device(random_host<B>(mpx::Shape{32, 50}, rng));
  auto aux = mpx::to_device(random_host<B>(mpx::Shape{64, 50}, rng));
  mpx::Tensor<B, Cuda> d_odd(mpx::Shape{64, 50});
  auto counts = counts_of([&] {
    mpx::cuda::gemm<mpx::BFloat16>(a, b, d_odd, {.epilogue = mpx::Epilogue::DGelu}, {.aux = &aux});
  });
  CHECK(counts.unfused == 1);
  CHECK(counts.fused == 0);
  CHECK(counts.refused + counts.no_algorithm == 0);

  // DGELU_BGRAD and DRELU_BGRAD with a 16-bit D and an fp32 bias gradient: cuBLASLt documents bias
  // gradients in D's type only, so it may fuse them, offer nothing, or refuse at cublasLtMatmul; every
  // outcome is counted, a refusal is remembered (the second call asks cuBLASLt nothing), and the
  // result is right. DRELU_BGRAD reads the bit mask of the same pre-activation's signs.
  const auto host_a = random_host<B>(mpx::Shape{64, 32}, rng);
  const auto host_b = random_host<B>(mpx::Shape{32, 48}, rng);
  const auto host_aux = random_host<B>(mpx::Shape{64, 48}, rng, -2.0, 2.0);
  const auto host_mask = mpx::test::relu_mask_of(host_aux);
  const auto a2 = mpx::to_device(host_a);
  const auto b2 = mpx::to_device(host_b);
  auto aux2 = mpx::to_device(host_aux);
  auto mask2 = mpx::to_device(host_mask);
  mpx::Tensor<B, Cuda> d(mpx::Shape{64, 48});
  mpx::Tensor<float, Cuda> bias_grad(mpx::Shape{48});
  for (const mpx::Epilogue epilogue : {mpx::Epilogue::DGeluBGrad, mpx::Epilogue::DReluBGrad}) {
    INFO("epilogue " << mpx::to_string(epilogue));
    const bool relu = mpx::reads_relu_mask(epilogue);
    const mpx::GemmConfig config{.epilogue = epilogue};
    const mpx::cuda::GemmOperands<B> operands{
        .aux = relu ? nullptr : &aux2, .relu_mask = relu ? &mask2 : nullptr, .bias_grad = &bias_grad};
    counts = counts_of([&] {
      mpx::cuda::gemm<mpx::BFloat16>(a2, b2, d, config, operands);
      mpx::cuda::gemm<mpx::BFloat16>(a2, b2, d, config, operands);
    });
    std::printf(
        "gemm paths: bf16 %s with an fp32 bias gradient: fused %lld, no algorithm %lld, refused %lld\n",
        relu ? "DRELU_BGRAD" : "DGELU_BGRAD", static_cast<long long>(counts.fused),
        static_cast<long long>(counts.no_algorithm), static_cast<long long>(counts.refused));
    CHECK(counts.fused + counts.unfused == 2);
    CHECK(counts.refused + counts.no_algorithm == counts.unfused);
    CHECK((counts.fused == 2 || counts.unfused == 2));  // the plan decides once for both calls
    auto d_cpu = mpx::Tensor<B>(mpx::Shape{64, 48});
    auto aux_cpu = host_aux.clone();
    auto mask_cpu = host_mask.clone();
    mpx::Tensor<float> bias_grad_cpu(mpx::Shape{48});
    mpx::cpu::gemm<mpx::BFloat16>(host_a, host_b, d_cpu, config,
                                  {.aux = relu ? nullptr : &aux_cpu,
                                   .relu_mask = relu ? &mask_cpu : nullptr,
                                   .bias_grad = &bias_grad_cpu});
    const auto d_back = mpx::to_host(d);
    const auto bias_grad_back = mpx::to_host(bias_grad);
    const auto tol = mpx::test::gemm_tolerance<mpx::BFloat16, mpx::BFloat16>(32);
    const auto tol_grad = mpx::test::gemm_bias_grad_tolerance<mpx::BFloat16, mpx::BFloat16>(
        32, 64, mpx::test::OperandRounding::nearest_or_truncated);
    int failures = 0;
    for (std::int64_t j = 0; j < 48; ++j) {
      double column = 0.0;
      for (std::int64_t i = 0; i < 64; ++i) {
        double magnitude = 0.0;
        for (std::int64_t p = 0; p < 32; ++p)
          magnitude += std::abs(to_double(host_a[i * 32 + p]) * to_double(host_b[p * 48 + j]));
        magnitude *= 1.2;  // gelu' <= 1.13, relu' <= 1
        column += magnitude;
        const double expected = to_double(d_cpu[i * 48 + j]);
        if (std::abs(to_double(d_back[i * 48 + j]) - expected) > 2 * tol.bound(magnitude, expected))
          ++failures;
      }
      const double expected = bias_grad_cpu[j];
      if (std::abs(static_cast<double>(bias_grad_back[j]) - expected) > 2 * tol_grad.bound(column, expected))
        ++failures;
    }
    CHECK(failures == 0);
  }
}

TEST_CASE("gemm fuses or falls back correctly on leading dimensions that are not multiples of 16 bytes",
          "[cuda][gemm][paths]") {
  // N = 10 (the classifier of the Fashion-MNIST MLP) and odd K: 20- and 26-byte rows in bf16. Whatever
  // path cuBLASLt allows, the result matches the CPU. (Pointers off the 256-byte pool alignment: the
  // next test.)
  std::mt19937 rng(23);
  using B = Eigen::bfloat16;
  for (const std::int64_t k : {13, 128}) {
    const auto host_x = random_host<B>(mpx::Shape{128, k}, rng);
    const auto host_w = random_host<B>(mpx::Shape{10, k}, rng);
    const auto host_bias = random_host<B>(mpx::Shape{10}, rng);
    const auto x = mpx::to_device(host_x);
    const auto w = mpx::to_device(host_w);
    const auto bias = mpx::to_device(host_bias);
    mpx::Tensor<B, Cuda> y(mpx::Shape{128, 10});
    const mpx::GemmConfig config{.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::Bias};
    const auto counts = counts_of([&] { mpx::cuda::gemm<mpx::BFloat16>(x, w, y, config, {.bias = &bias}); });
    std::printf("gemm paths: bf16 128 x 10 x %lld with bias: fused %lld, unfused %lld\n",
                static_cast<long long>(k), static_cast<long long>(counts.fused),
                static_cast<long long>(counts.unfused));
    CHECK(counts.fused + counts.unfused == 1);
    mpx::Tensor<B> y_cpu(mpx::Shape{128, 10});
    mpx::cpu::gemm<mpx::BFloat16>(host_x, host_w, y_cpu, config, {.bias = &host_bias});
    const auto y_back = mpx::to_host(y);
    const auto tol = mpx::test::gemm_tolerance<mpx::BFloat16, mpx::BFloat16>(k);
    int failures = 0;
    for (std::int64_t i = 0; i < 128; ++i) {
      for (std::int64_t j = 0; j < 10; ++j) {
        double magnitude = std::abs(to_double(host_bias[j]));
        for (std::int64_t p = 0; p < k; ++p)
          magnitude += std::abs(to_double(host_x[i * k + p]) * to_double(host_w[j * k + p]));
        const double expected = to_double(y_cpu[i * 10 + j]);
        if (std::abs(to_double(y_back[i * 10 + j]) - expected) > 2 * tol.bound(magnitude, expected))
          ++failures;
      }
    }
    CHECK(failures == 0);
  }
}

namespace {

// `host`'s elements on the device, `offset_bytes` past the start of a pool allocation (256-byte
// aligned), as a view (mpx::Tensor::view) into `storage`, which owns the allocation.
template <class T>
mpx::Tensor<T, Cuda> offset_copy(const mpx::Tensor<T>& host, std::size_t offset_bytes,
                                 mpx::Tensor<T, Cuda>& storage) {
  REQUIRE(offset_bytes % sizeof(T) == 0);
  const auto offset = static_cast<std::int64_t>(offset_bytes / sizeof(T));
  mpx::Tensor<T> padded(mpx::Shape{host.numel() + offset});
  for (std::int64_t i = 0; i < host.numel(); ++i) padded[offset + i] = host[i];
  storage = mpx::to_device(padded);
  REQUIRE(reinterpret_cast<std::uintptr_t>(storage.data()) % 256 == 0);
  return mpx::Tensor<T, Cuda>::view(storage.data() + offset, host.shape());
}

}  // namespace

TEST_CASE(
    "gemm on operands 16 and 2 bytes off the 256-byte alignment, with unaligned leading dimensions, "
    "matches the CPU with a plan per alignment class",
    "[cuda][gemm][paths]") {
  // cuBLASLt's heuristic picks algorithms by the operands' alignment (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*,
  // 256 bytes by default, which mpx asks for on pool memory); a plan chosen for aligned operands may
  // need an alignment that others lack, so the plan key holds each operand's alignment class. A, B, D
  // and the bias 0, 16 and 2 bytes past a 256-byte boundary; K = 27 (54-byte rows of A and B) and
  // N = 10 (20-byte rows of D): every leading dimension is off 16 bytes too.
  std::mt19937 rng(29);
  using B = Eigen::bfloat16;
  constexpr std::int64_t m = 64, n = 10, k = 27;
  const auto host_a = random_host<B>(mpx::Shape{m, k}, rng);
  const auto host_b = random_host<B>(mpx::Shape{n, k}, rng);
  const auto host_bias = random_host<B>(mpx::Shape{n}, rng);
  const mpx::GemmConfig config{.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::Bias};
  mpx::Tensor<B> d_cpu(mpx::Shape{m, n});
  mpx::cpu::gemm<mpx::BFloat16>(host_a, host_b, d_cpu, config, {.bias = &host_bias});
  const auto tol = mpx::test::gemm_tolerance<mpx::BFloat16, mpx::BFloat16>(k);

  mpx::cuda::clear_gemm_cache();
  std::size_t plans_before = mpx::cuda::gemm_cache_size();
  for (const std::size_t offset : {std::size_t{0}, std::size_t{16}, std::size_t{2}}) {
    CAPTURE(offset);
    mpx::Tensor<B, Cuda> a_storage, b_storage, bias_storage, d_storage;
    const auto a = offset_copy(host_a, offset, a_storage);
    const auto b = offset_copy(host_b, offset, b_storage);
    const auto bias = offset_copy(host_bias, offset, bias_storage);
    auto d = offset_copy(mpx::Tensor<B>(mpx::Shape{m, n}), offset, d_storage);
    CHECK(mpx::cuda::detail::alignment_class(a.data()) == (offset == 0 ? 256 : static_cast<int>(offset)));
    const auto counts = counts_of([&] { mpx::cuda::gemm<mpx::BFloat16>(a, b, d, config, {.bias = &bias}); });
    std::printf(
        "gemm paths: bf16 %lld x %lld x %lld with bias, operands %zu bytes off 256: fused %lld, "
        "unfused %lld (no algorithm %lld, refused %lld)\n",
        static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), offset,
        static_cast<long long>(counts.fused), static_cast<long long>(counts.unfused),
        static_cast<long long>(counts.no_algorithm), static_cast<long long>(counts.refused));
    CHECK(counts.fused + counts.unfused == 1);
    // A new alignment class makes its own plan(s); the same class again makes none.
    const std::size_t plans_after = mpx::cuda::gemm_cache_size();
    CHECK(plans_after > plans_before);
    mpx::cuda::gemm<mpx::BFloat16>(a, b, d, config, {.bias = &bias});
    CHECK(mpx::cuda::gemm_cache_size() == plans_after);
    plans_before = plans_after;

    const auto d_back = mpx::to_host(d);
    int failures = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double magnitude = std::abs(to_double(host_bias[j]));
        for (std::int64_t p = 0; p < k; ++p)
          magnitude += std::abs(to_double(host_a[i * k + p]) * to_double(host_b[j * k + p]));
        const double expected = to_double(d_cpu[i * n + j]);
        if (std::abs(to_double(d_back[i * n + j]) - expected) > 2 * tol.bound(magnitude, expected))
          ++failures;
      }
    }
    CHECK(failures == 0);
    // The view wrote only its own elements: the padding before it is still zero.
    const auto stored = mpx::to_host(d_storage);
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(offset / sizeof(B)); ++i)
      CHECK(to_double(stored[i]) == 0.0);
  }
}

TEST_CASE(
    "weight gradients accumulate over micro-batches: BGRAD with beta = 1 into fp32, bias grad overwritten",
    "[cuda][gemm][paths]") {
  // Linear's backward on three micro-batches: dW += dZ_i^T X_i (beta 0, then 1), and each call's bias
  // gradient written into a scratch vector (the epilogue overwrites), as nn::Linear does.
  std::mt19937 rng(24);
  using B = Eigen::bfloat16;
  constexpr std::int64_t batch = 64, in = 96, out = 80;
  mpx::Tensor<float> dw_cpu(mpx::Shape{out, in});
  mpx::Tensor<float, Cuda> dw(mpx::Shape{out, in});
  mpx::Tensor<float> db_cpu(mpx::Shape{out});
  mpx::Tensor<float, Cuda> db(mpx::Shape{out});
  std::vector<double> magnitude(static_cast<std::size_t>(out * in), 0.0);
  std::vector<double> bias_magnitude(static_cast<std::size_t>(out), 0.0);
  const auto tol = mpx::test::gemm_tolerance<mpx::BFloat16, mpx::Float>(3 * batch);
  for (int micro = 0; micro < 3; ++micro) {
    const auto host_dz = random_host<B>(mpx::Shape{batch, out}, rng);
    const auto host_x = random_host<B>(mpx::Shape{batch, in}, rng);
    const mpx::GemmConfig config{.transpose_a = mpx::Transpose::Yes,
                                 .beta = micro == 0 ? 0.0f : 1.0f,
                                 .epilogue = mpx::Epilogue::BGradA};
    mpx::cpu::gemm<mpx::BFloat16>(host_dz, host_x, dw_cpu, config, {.bias_grad = &db_cpu});
    const auto dz = mpx::to_device(host_dz);
    const auto x = mpx::to_device(host_x);
    const auto counts =
        counts_of([&] { mpx::cuda::gemm<mpx::BFloat16>(dz, x, dw, config, {.bias_grad = &db}); });
    CHECK(counts.fused + counts.unfused == 1);
    for (std::int64_t o = 0; o < out; ++o) {
      double sum = 0.0;
      for (std::int64_t r = 0; r < batch; ++r) {
        const double g = std::abs(to_double(host_dz[r * out + o]));
        sum += g;
        for (std::int64_t i = 0; i < in; ++i)
          magnitude[static_cast<std::size_t>(o * in + i)] += g * std::abs(to_double(host_x[r * in + i]));
      }
      bias_magnitude[static_cast<std::size_t>(o)] = sum;  // this micro-batch's only
    }
    const auto db_back = mpx::to_host(db);
    const auto tol_grad = mpx::test::gemm_bias_grad_tolerance<mpx::BFloat16>(0, batch);
    int bias_failures = 0;
    for (std::int64_t o = 0; o < out; ++o) {
      if (std::abs(static_cast<double>(db_back[o]) - db_cpu[o]) >
          2 * tol_grad.bound(bias_magnitude[static_cast<std::size_t>(o)], db_cpu[o]))
        ++bias_failures;
    }
    CHECK(bias_failures == 0);
  }
  const auto dw_back = mpx::to_host(dw);
  int failures = 0;
  for (std::int64_t i = 0; i < out * in; ++i) {
    if (std::abs(static_cast<double>(dw_back[i]) - dw_cpu[i]) >
        2 * tol.bound(magnitude[static_cast<std::size_t>(i)], dw_cpu[i]))
      ++failures;
  }
  CHECK(failures == 0);
}

TEST_CASE("the unfused path can be captured in a CUDA graph once an eager call sized its scratch",
          "[cuda][gemm][paths][graph]") {
  std::mt19937 rng(25);
  using B = Eigen::bfloat16;
  // DGelu with N = 70, not a multiple of 8: a GELU aux cuBLASLt cannot take, so always unfused.
  const auto a = mpx::to_device(random_host<B>(mpx::Shape{96, 40}, rng));
  const auto b = mpx::to_device(random_host<B>(mpx::Shape{40, 70}, rng));
  auto aux = mpx::to_device(random_host<B>(mpx::Shape{96, 70}, rng));
  mpx::Tensor<B, Cuda> eager(mpx::Shape{96, 70});
  mpx::Tensor<B, Cuda> replayed(mpx::Shape{96, 70});
  const mpx::GemmConfig config{.epilogue = mpx::Epilogue::DGelu};
  const auto counts = counts_of([&] { mpx::cuda::gemm<mpx::BFloat16>(a, b, eager, config, {.aux = &aux}); });
  REQUIRE(counts.unfused == 1);
  mpx::cuda::Graph graph;
  graph.capture([&] { mpx::cuda::gemm<mpx::BFloat16>(a, b, replayed, config, {.aux = &aux}); });
  graph.launch();
  const auto e = mpx::to_host(eager);
  const auto r = mpx::to_host(replayed);
  int different = 0;
  for (std::int64_t i = 0; i < e.numel(); ++i)
    different += mpx_test::same_bits_or_both_nan(e[i], r[i]) ? 0 : 1;
  CHECK(different == 0);
  // A larger unfused product needs a larger scratch, which cannot be allocated during capture.
  const auto big_a = mpx::to_device(random_host<B>(mpx::Shape{512, 40}, rng));
  auto big_aux = mpx::to_device(random_host<B>(mpx::Shape{512, 70}, rng));
  mpx::Tensor<B, Cuda> big(mpx::Shape{512, 70});
  mpx::cuda::clear_gemm_cache();  // (also frees the scratch: the graph above is not replayed again)
  mpx::cuda::Graph refused;
  CHECK_THROWS_WITH(
      refused.capture([&] { mpx::cuda::gemm<mpx::BFloat16>(big_a, b, big, config, {.aux = &big_aux}); }),
      Catch::Matchers::Contains("being captured"));
}

TEST_CASE("which rounding the GPU's TF32 Tensor Cores apply to fp32 operands (reported; either is allowed)",
          "[cuda][gemm][tf32]") {
  // a = 1 + 3 * 2^-12 lies 3/4 of a TF32 ulp above 1: to nearest it is 1 + 2^-10, truncated it is 1,
  // unrounded (a kernel without Tensor Cores) it stays. A K = 16 dot product of a with 1 tells which.
  constexpr std::int64_t k = 16;
  const float a_value = 1.0f + 3.0f * 0x1p-12f;
  mpx::Tensor<float> host_a(mpx::Shape{1, k});
  mpx::Tensor<float> host_b(mpx::Shape{k, 1});
  for (std::int64_t p = 0; p < k; ++p) {
    host_a[p] = a_value;
    host_b[p] = 1.0f;
  }
  const auto a = mpx::to_device(host_a);
  const auto b = mpx::to_device(host_b);
  mpx::Tensor<float, Cuda> d(mpx::Shape{1, 1});
  mpx::cuda::gemm<mpx::TF32>(a, b, d, {});
  const double result = mpx::to_host(d)[0];
  const double nearest = k * (1.0 + 0x1p-10);
  const double truncated = k * 1.0;
  const double unrounded = k * static_cast<double>(a_value);
  const char* rounding = result == nearest     ? "to nearest (as mpx's CPU backend)"
                         : result == truncated ? "truncated (the low 13 bits ignored)"
                         : result == unrounded ? "none (an fp32 kernel)"
                                               : "unknown";
  std::printf("gemm paths: TF32 operands on this GPU are rounded %s: 16 * (1 + 3 * 2^-12) = %.10f\n",
              rounding, result);
  CHECK((result == nearest || result == truncated || result == unrounded));
}

}  // namespace MPX_UNITY_ID
}  // namespace
