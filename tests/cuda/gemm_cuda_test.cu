// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The device layer (context, memory accounting, copies, out-of-memory) and mpx::cuda::gemm against
// mpx::cpu::gemm on identical inputs: every precision, transpose, epilogue and odd shape. main() is in
// numeric_cuda_test.cu and skips (exit 77) without a device.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <mpx/cuda.hpp>

#include "../support/tolerances.hpp"
#include "support.hpp"

namespace {

using mpx_test::random_host;
using mpx_test::to_double;

// Element (i, j) of op(X) for a row-major host matrix.
template <class T>
double op_at(const mpx::Tensor<T>& x, bool transposed, std::int64_t i, std::int64_t j) {
  const std::int64_t cols = x.shape()[1];
  return to_double(transposed ? x[j * cols + i] : x[i * cols + j]);
}

struct Case {
  std::int64_t m, n, k;
  bool ta, tb;
  mpx::Epilogue epilogue;
  float alpha, beta;
  bool with_c;
};

std::string describe(const Case& c) {
  std::string s = "M=";
  s.append(std::to_string(c.m))
      .append(" N=")
      .append(std::to_string(c.n))
      .append(" K=")
      .append(std::to_string(c.k));
  s.append(c.ta ? " A^T" : " A").append(c.tb ? " B^T" : " B").append(" epilogue=");
  s.append(mpx::to_string(c.epilogue)).append(" beta=").append(std::to_string(c.beta));
  s.append(c.with_c ? " with C" : "");
  return s;
}

// Runs one case on both backends and checks D, aux and bias_grad element by element.
template <mpx::NumericTag Compute, mpx::Element TD>
void check_case(const Case& c, std::mt19937& rng) {
  using S = mpx::storage_t<Compute>;
  using Acc = mpx::math_t<Compute>;
  using OutTag = mpx::tag_of_t<TD>;
  const mpx::Epilogue e = c.epilogue;
  INFO(std::string(mpx::numeric_traits<Compute>::name) + " -> " +
       std::string(mpx::numeric_traits<OutTag>::name) + " " + describe(c));

  const auto a = random_host<S>(c.ta ? mpx::Shape{c.k, c.m} : mpx::Shape{c.m, c.k}, rng);
  const auto b = random_host<S>(c.tb ? mpx::Shape{c.n, c.k} : mpx::Shape{c.k, c.n}, rng);
  const auto d0 = random_host<TD>(mpx::Shape{c.m, c.n}, rng);
  const auto cm = random_host<TD>(mpx::Shape{c.m, c.n}, rng);
  const auto bias = random_host<TD>(mpx::Shape{c.n}, rng);
  const auto aux0 = random_host<TD>(mpx::Shape{c.m, c.n}, rng, -2.0, 2.0);
  const std::int64_t bias_grad_length = e == mpx::Epilogue::BGradA ? c.m : c.n;

  // CPU reference.
  auto d_cpu = d0.clone();
  auto aux_cpu = aux0.clone();
  mpx::Tensor<Acc> bias_grad_cpu(mpx::Shape{bias_grad_length});
  const mpx::GemmConfig config{c.ta ? mpx::Transpose::Yes : mpx::Transpose::No,
                               c.tb ? mpx::Transpose::Yes : mpx::Transpose::No, c.alpha, c.beta, e};
  mpx::cpu::gemm<Compute>(a, b, d_cpu, config,
                          {c.with_c ? &cm : nullptr, mpx::reads_bias(e) ? &bias : nullptr,
                           mpx::writes_aux(e) || mpx::reads_aux(e) ? &aux_cpu : nullptr,
                           mpx::writes_bias_grad(e) ? &bias_grad_cpu : nullptr});

  // GPU.
  const auto a_gpu = mpx::to_device(a);
  const auto b_gpu = mpx::to_device(b);
  auto d_gpu = mpx::to_device(d0);
  const auto c_gpu = mpx::to_device(cm);
  const auto bias_gpu = mpx::to_device(bias);
  auto aux_gpu = mpx::to_device(aux0);
  mpx::Tensor<Acc, mpx::Cuda> bias_grad_gpu(mpx::Shape{bias_grad_length});
  mpx::cuda::gemm<Compute>(a_gpu, b_gpu, d_gpu, config,
                           {c.with_c ? &c_gpu : nullptr, mpx::reads_bias(e) ? &bias_gpu : nullptr,
                            mpx::writes_aux(e) || mpx::reads_aux(e) ? &aux_gpu : nullptr,
                            mpx::writes_bias_grad(e) ? &bias_grad_gpu : nullptr});
  const auto d_back = mpx::to_host(d_gpu);
  const auto aux_back = mpx::to_host(aux_gpu);
  const auto bias_grad_back = mpx::to_host(bias_grad_gpu);

  // Both results are within the spec's bound of the exact value, so they are within twice it of each
  // other. The magnitude covers the product, C, the bias and the activation's slope (< 1.2).
  // The GPU may round TF32 operands either way (see tolerances.hpp).
  constexpr auto rounding = mpx::test::OperandRounding::nearest_or_truncated;
  const auto tol = mpx::test::gemm_tolerance<Compute, OutTag>(c.k, rounding);
  const auto& c_source = c.with_c ? cm : d0;
  std::vector<double> column_magnitude(static_cast<std::size_t>(c.n), 0.0);
  int failures = 0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double magnitude = 0;
      for (std::int64_t p = 0; p < c.k; ++p)
        magnitude += std::abs(op_at(a, c.ta, i, p) * op_at(b, c.tb, p, j));
      magnitude =
          std::abs(c.alpha) * magnitude + std::abs(c.beta) * std::abs(to_double(c_source[i * c.n + j]));
      if (mpx::reads_bias(e)) magnitude += std::abs(to_double(bias[j]));
      magnitude *= 1.2;
      column_magnitude[static_cast<std::size_t>(j)] += magnitude;
      const double expected = to_double(d_cpu[i * c.n + j]);
      const double actual = to_double(d_back[i * c.n + j]);
      const bool close = std::abs(actual - expected) <= 2 * tol.bound(magnitude, expected) ||
                         (std::isnan(actual) && std::isnan(expected));
      if (!close && failures++ < 5) {
        FAIL_CHECK("D[" << i << "," << j << "] gpu " << actual << " cpu " << expected << " bound "
                        << 2 * tol.bound(magnitude, expected));
      }
      if (mpx::writes_aux(e)) {
        const double aux_expected = to_double(aux_cpu[i * c.n + j]);
        const double aux_actual = to_double(aux_back[i * c.n + j]);
        if (std::abs(aux_actual - aux_expected) > 2 * tol.bound(magnitude, aux_expected) && failures++ < 5) {
          FAIL_CHECK("aux[" << i << "," << j << "] gpu " << aux_actual << " cpu " << aux_expected);
        }
      }
    }
  }
  if (mpx::writes_bias_grad(e)) {
    // BGradA/B sum operands (k = 0 per term, K terms); the *BGrad epilogues sum M products of length
    // K, possibly after rounding them into D's type (see tolerances.hpp).
    const bool of_operand = e == mpx::Epilogue::BGradA || e == mpx::Epilogue::BGradB;
    const auto tol_grad = of_operand
                              ? mpx::test::gemm_bias_grad_tolerance<Compute>(0, c.k, rounding)
                              : mpx::test::gemm_bias_grad_tolerance<Compute, OutTag>(c.k, c.m, rounding);
    for (std::int64_t i = 0; i < bias_grad_length; ++i) {
      double magnitude = 0;
      if (e == mpx::Epilogue::BGradA) {
        for (std::int64_t p = 0; p < c.k; ++p) magnitude += std::abs(op_at(a, c.ta, i, p));
      } else if (e == mpx::Epilogue::BGradB) {
        for (std::int64_t p = 0; p < c.k; ++p) magnitude += std::abs(op_at(b, c.tb, p, i));
      } else {
        magnitude = column_magnitude[static_cast<std::size_t>(i)];
      }
      const double expected = to_double(bias_grad_cpu[i]);
      const double actual = to_double(bias_grad_back[i]);
      if (std::abs(actual - expected) > 2 * tol_grad.bound(magnitude, expected) + 1e-30 && failures++ < 5) {
        FAIL_CHECK("bias_grad[" << i << "] gpu " << actual << " cpu " << expected);
      }
    }
  }
  CHECK(failures == 0);
}

constexpr mpx::Epilogue all_epilogues[] = {
    mpx::Epilogue::Default,     mpx::Epilogue::Bias,   mpx::Epilogue::ReluBias,   mpx::Epilogue::GeluBias,
    mpx::Epilogue::GeluAuxBias, mpx::Epilogue::DRelu,  mpx::Epilogue::DReluBGrad, mpx::Epilogue::DGelu,
    mpx::Epilogue::DGeluBGrad,  mpx::Epilogue::BGradA, mpx::Epilogue::BGradB};

struct Size {
  std::int64_t m, n, k;
};
// Odd sizes give leading dimensions that are not multiples of 16 bytes (misaligned rows for 16-bit types).
constexpr Size sizes[] = {{1, 1, 1}, {37, 19, 23}, {64, 48, 32}, {130, 67, 255}, {5, 7, 0}};

template <mpx::NumericTag Compute, mpx::Element TD>
void check_all() {
  std::mt19937 rng(1234);
  for (const Size& size : sizes) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        for (const mpx::Epilogue e : all_epilogues) {
          check_case<Compute, TD>({size.m, size.n, size.k, ta, tb, e, 1.0f, 0.0f, false}, rng);
        }
        check_case<Compute, TD>({size.m, size.n, size.k, ta, tb, mpx::Epilogue::Default, 0.5f, 1.0f, false},
                                rng);
        check_case<Compute, TD>({size.m, size.n, size.k, ta, tb, mpx::Epilogue::Default, 1.0f, 0.5f, true},
                                rng);
        check_case<Compute, TD>({size.m, size.n, size.k, ta, tb, mpx::Epilogue::Bias, 2.0f, 0.25f, true},
                                rng);
      }
    }
  }
}

}  // namespace

TEST_CASE("cuda context owns a stream, a cuBLASLt handle and the default workspace", "[cuda][context]") {
  mpx::CudaContext& context = mpx::cuda_context();
  CHECK(context.stream() != nullptr);
  CHECK(context.cublaslt() != nullptr);
  CHECK(context.workspace() != nullptr);
  CHECK(context.workspace_bytes() == mpx::default_cublaslt_workspace_bytes(context.properties().major));
  mpx::CudaContext small({.device = 0, .workspace_bytes = std::size_t{1} << 20});
  CHECK(small.workspace_bytes() == (std::size_t{1} << 20));
}

TEST_CASE("cuda tensors count live and peak bytes and copy exactly", "[cuda][memory]") {
  auto& stats = mpx::memory_stats<mpx::Cuda>();
  const std::int64_t live_before = stats.live_bytes();
  std::mt19937 rng(7);
  {
    const auto host = random_host<Eigen::bfloat16>(mpx::Shape{33, 17}, rng);
    auto device = mpx::to_device(host);
    CHECK(stats.live_bytes() == live_before + static_cast<std::int64_t>(host.size_bytes()));
    CHECK(stats.peak_bytes() >= stats.live_bytes());
    const auto back = mpx::to_host(device);
    CHECK(back.shape() == host.shape());
    CHECK(std::memcmp(back.data(), host.data(), host.size_bytes()) == 0);

    auto copy = device.clone();
    mpx::Tensor<Eigen::bfloat16> host_copy(host.shape());
    mpx::copy(host_copy, copy);
    CHECK(std::memcmp(host_copy.data(), host.data(), host.size_bytes()) == 0);

    copy.set_zero();
    mpx::copy(host_copy, copy);
    for (const auto x : host_copy.values()) CHECK(to_double(x) == 0.0);

    mpx::Tensor<Eigen::bfloat16> wrong(mpx::Shape{17, 33});
    CHECK_THROWS_AS(mpx::copy(wrong, device), mpx::shape_error);
  }
  CHECK(stats.live_bytes() == live_before);
  const auto d = mpx::to_device(random_host<double>(mpx::Shape{3}, rng));
  CHECK(mpx::to_host(d).shape() == mpx::Shape{3});
}

TEST_CASE("cuda out of memory names the request and the free bytes, and later allocations work",
          "[cuda][memory]") {
  const std::int64_t huge = std::int64_t{1} << 48;  // 256 TiB
  try {
    auto t = mpx::Tensor<float, mpx::Cuda>::uninitialized(mpx::Shape{huge / 4});
    FAIL("allocating 256 TiB succeeded");
  } catch (const mpx::out_of_memory& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains(std::to_string(huge)));
    CHECK_THAT(message, Catch::Contains("bytes free"));
  }
  auto t = mpx::Tensor<float, mpx::Cuda>(mpx::Shape{1024});
  CHECK(mpx::to_host(t)[1023] == 0.0f);
}

TEST_CASE("cuda gemm repeats a call without building new descriptors", "[cuda][gemm]") {
  std::mt19937 rng(3);
  const auto a = mpx::to_device(random_host<Eigen::bfloat16>(mpx::Shape{64, 32}, rng));
  const auto b = mpx::to_device(random_host<Eigen::bfloat16>(mpx::Shape{48, 32}, rng));
  mpx::Tensor<Eigen::bfloat16, mpx::Cuda> d(mpx::Shape{64, 48});
  const mpx::GemmConfig config{.transpose_b = mpx::Transpose::Yes};
  mpx::cuda::gemm<mpx::BFloat16>(a, b, d, config);
  const std::size_t plans = mpx::cuda::gemm_cache_size();
  mpx::cuda::gemm<mpx::BFloat16>(a, b, d, config);
  CHECK(mpx::cuda::gemm_cache_size() == plans);
  mpx::Tensor<Eigen::bfloat16, mpx::Cuda> wrong(mpx::Shape{64, 47});
  CHECK_THROWS_AS(mpx::cuda::gemm<mpx::BFloat16>(a, b, wrong, config), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::gemm<mpx::BFloat16>(
                      a, b, d, {.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::Bias}),
                  mpx::invalid_argument);
}

TEST_CASE("cuda gemm matches the cpu gemm: fp64", "[cuda][gemm]") {
  check_all<mpx::Double, double>();
}
TEST_CASE("cuda gemm matches the cpu gemm: fp32", "[cuda][gemm]") {
  check_all<mpx::Float, float>();
}
TEST_CASE("cuda gemm matches the cpu gemm: tf32", "[cuda][gemm]") {
  check_all<mpx::TF32, float>();
}
TEST_CASE("cuda gemm matches the cpu gemm: fp16", "[cuda][gemm]") {
  check_all<mpx::Half, Eigen::half>();
}
TEST_CASE("cuda gemm matches the cpu gemm: fp16 into fp32", "[cuda][gemm]") {
  check_all<mpx::Half, float>();
}
TEST_CASE("cuda gemm matches the cpu gemm: bf16", "[cuda][gemm]") {
  check_all<mpx::BFloat16, Eigen::bfloat16>();
}
TEST_CASE("cuda gemm matches the cpu gemm: bf16 into fp32", "[cuda][gemm]") {
  check_all<mpx::BFloat16, float>();
}
