// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The device layer (context, memory accounting, copies, out-of-memory) and mpx::cuda::gemm against
// mpx::cpu::gemm on identical inputs: every precision, transpose, epilogue and odd shape, and the bit
// layout of the ReLU mask that cuBLASLt's RELU_AUX_BIAS writes and DRELU_BGRAD reads. main() is in
// numeric_cuda_test.cu and skips (exit 77) without a device.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
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

// Runs one case on both backends and checks D, aux, the ReLU mask and bias_grad element by element.
template <mpx::NumericTag Compute, mpx::Element TD>
void check_case(const Case& c, std::mt19937& rng) {
  using S = mpx::storage_t<Compute>;
  using Acc = mpx::accumulate_t<Compute>;
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
  // The mask DRelu reads: the signs of aux0 as a forward pre-activation (ReluAuxBias overwrites it).
  const auto mask0 = mpx::test::relu_mask_of(aux0);
  const std::int64_t bias_grad_length = e == mpx::Epilogue::BGradA ? c.m : c.n;

  // CPU reference.
  auto d_cpu = d0.clone();
  auto aux_cpu = aux0.clone();
  auto mask_cpu = mask0.clone();
  mpx::Tensor<Acc> bias_grad_cpu(mpx::Shape{bias_grad_length});
  const mpx::GemmConfig config{c.ta ? mpx::Transpose::Yes : mpx::Transpose::No,
                               c.tb ? mpx::Transpose::Yes : mpx::Transpose::No, c.alpha, c.beta, e};
  const bool uses_aux = mpx::writes_aux(e) || mpx::reads_aux(e);
  const bool uses_mask = mpx::writes_relu_mask(e) || mpx::reads_relu_mask(e);
  mpx::cpu::gemm<Compute>(a, b, d_cpu, config,
                          {.c = c.with_c ? &cm : nullptr,
                           .bias = mpx::reads_bias(e) ? &bias : nullptr,
                           .aux = uses_aux ? &aux_cpu : nullptr,
                           .relu_mask = uses_mask ? &mask_cpu : nullptr,
                           .bias_grad = mpx::writes_bias_grad(e) ? &bias_grad_cpu : nullptr});

  // GPU.
  const auto a_gpu = mpx::to_device(a);
  const auto b_gpu = mpx::to_device(b);
  auto d_gpu = mpx::to_device(d0);
  const auto c_gpu = mpx::to_device(cm);
  const auto bias_gpu = mpx::to_device(bias);
  auto aux_gpu = mpx::to_device(aux0);
  auto mask_gpu = mpx::to_device(mask0);
  mpx::Tensor<Acc, mpx::Cuda> bias_grad_gpu(mpx::Shape{bias_grad_length});
  mpx::cuda::gemm<Compute>(a_gpu, b_gpu, d_gpu, config,
                           {.c = c.with_c ? &c_gpu : nullptr,
                            .bias = mpx::reads_bias(e) ? &bias_gpu : nullptr,
                            .aux = uses_aux ? &aux_gpu : nullptr,
                            .relu_mask = uses_mask ? &mask_gpu : nullptr,
                            .bias_grad = mpx::writes_bias_grad(e) ? &bias_grad_gpu : nullptr});
  const auto d_back = mpx::to_host(d_gpu);
  const auto aux_back = mpx::to_host(aux_gpu);
  const auto mask_back = mpx::to_host(mask_gpu);
  const auto bias_grad_back = mpx::to_host(bias_grad_gpu);

  // Both results are within the spec's bound of the exact value, so they are within twice it of each
  // other. The magnitude covers the product, C, the bias and the activation's slope (< 1.2).
  // The GPU may round TF32 operands either way (see tolerances.hpp).
  constexpr auto rounding = mpx::test::OperandRounding::nearest_or_truncated;
  const auto tol = mpx::test::gemm_tolerance<Compute, OutTag>(c.k, rounding);
  const auto& c_source = c.with_c ? cm : d0;
  std::vector<double> column_magnitude(static_cast<std::size_t>(c.n), 0.0);
  int failures = 0;
  std::int64_t mask_bits_checked = 0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double magnitude = 0;
      double product = 0;
      for (std::int64_t p = 0; p < c.k; ++p) {
        const double term = op_at(a, c.ta, i, p) * op_at(b, c.tb, p, j);
        magnitude += std::abs(term);
        product += term;
      }
      magnitude =
          std::abs(c.alpha) * magnitude + std::abs(c.beta) * std::abs(to_double(c_source[i * c.n + j]));
      if (mpx::reads_bias(e)) magnitude += std::abs(to_double(bias[j]));
      magnitude *= 1.2;
      column_magnitude[static_cast<std::size_t>(j)] += magnitude;
      // Some of cuBLASLt's kernels round the product into a 16-bit D before they add the bias (H200,
      // CUDA 13.0, 2026-11-28: every element of Bias with a C operand, ReluAuxBias and GeluBias at
      // 37 x 19 x 23 was round(round(t) + bias), t the exact alpha A B + beta C), where the CPU
      // rounds once: the bound allows that one rounding of t more (docs/cuda.md).
      const double pre_bias = c.alpha * product + c.beta * to_double(c_source[i * c.n + j]);
      const double bias_rounding =
          sizeof(TD) == 2 && mpx::reads_bias(e) ? 1.2 * mpx::epsilon_v<OutTag> * std::abs(pre_bias) : 0.0;
      const double expected = to_double(d_cpu[i * c.n + j]);
      const double actual = to_double(d_back[i * c.n + j]);
      const double bound = 2 * tol.bound(magnitude, expected) + bias_rounding;
      const bool close = std::abs(actual - expected) <= bound || (std::isnan(actual) && std::isnan(expected));
      if (!close && failures++ < 5) {
        FAIL_CHECK("D[" << i << "," << j << "] gpu " << actual << " cpu " << expected << " bound " << bound
                        << " (exact pre-bias " << pre_bias << ", bias "
                        << (mpx::reads_bias(e) ? to_double(bias[j]) : 0.0) << ")");
      }
      if (mpx::writes_aux(e)) {
        const double aux_expected = to_double(aux_cpu[i * c.n + j]);
        const double aux_actual = to_double(aux_back[i * c.n + j]);
        if (std::abs(aux_actual - aux_expected) > 2 * tol.bound(magnitude, aux_expected) + bias_rounding &&
            failures++ < 5) {
          FAIL_CHECK("aux[" << i << "," << j << "] gpu " << aux_actual << " cpu " << aux_expected);
        }
      }
      if (mpx::writes_relu_mask(e)) {
        // The sign of the exact t + bias, wherever it is further from zero than the GPU's error
        // bound (the bit is taken before D's rounding); the padding bits are unspecified.
        const double pre = c.alpha * product + c.beta * to_double(c_source[i * c.n + j]) + to_double(bias[j]);
        if (std::abs(pre) > 2 * tol.accumulate * magnitude) {
          ++mask_bits_checked;
          const bool bit = mpx::relu_mask_bit(mask_back.data() + i * mpx::relu_mask_words(c.n), j);
          if (bit != (pre > 0) && failures++ < 5) {
            FAIL_CHECK("relu_mask bit [" << i << "," << j << "] gpu " << bit << ", pre-activation " << pre);
          }
        }
      }
    }
  }
  if (mpx::writes_relu_mask(e)) CHECK(mask_bits_checked > 0);
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
    mpx::Epilogue::Default,  mpx::Epilogue::Bias,        mpx::Epilogue::ReluBias, mpx::Epilogue::ReluAuxBias,
    mpx::Epilogue::GeluBias, mpx::Epilogue::GeluAuxBias, mpx::Epilogue::DRelu,    mpx::Epilogue::DReluBGrad,
    mpx::Epilogue::DGelu,    mpx::Epilogue::DGeluBGrad,  mpx::Epilogue::BGradA,   mpx::Epilogue::BGradB};

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

// The words of mask rows 0 and 1 in hex, for a message about a layout that differs.
std::string first_mask_rows(const mpx::Tensor<std::int32_t>& mask) {
  std::string text;
  const std::int64_t words = mask.shape().cols();
  for (std::int64_t row = 0; row < 2 && row < mask.shape().rows(); ++row) {
    text += "\n  row " + std::to_string(row) + ":";
    for (std::int64_t w = 0; w < words; ++w) {
      char word[12];
      std::snprintf(word, sizeof(word), " %08x", static_cast<unsigned>(mask[row * words + w]));
      text += word;
    }
  }
  return text;
}

// A ReLU layer's training forward as nn::Linear issues it (ReluAuxBias: y = relu(x W^T + b) and the
// bit mask), then the next layer's dx GEMM reading that mask (DRelu, as nn::Linear runs it, and
// DReluBGrad, which also sums the columns of its D). N = 150 is not a multiple of 32: a row's bits end inside
// its fifth word, and a mask row is relu_mask_words(150) = 8 words. The GPU's mask must hold, for every
// column below N, the CPU's bit wherever the exact pre-activation is further from zero than the GEMM's error
// bound; the CPU's DReluBGrad given the GPU's mask must then agree with the GPU's DRelu and DReluBGrad, so
// cuBLASLt's DRELU and DRELU_BGRAD read bits where mpx puts them.
template <mpx::NumericTag Compute>
void check_relu_mask_layout() {
  using S = mpx::storage_t<Compute>;
  using Acc = mpx::accumulate_t<Compute>;
  using OutTag = mpx::tag_of_t<S>;
  constexpr std::int64_t m = 33, n = 150, k = 64, k_back = 48;
  const std::int64_t words = mpx::relu_mask_words(n);
  REQUIRE(words == 8);
  std::mt19937 rng(150);
  const auto x = random_host<S>(mpx::Shape{m, k}, rng);
  const auto w = random_host<S>(mpx::Shape{n, k}, rng);
  const auto bias = random_host<S>(mpx::Shape{n}, rng);
  constexpr auto rounding = mpx::test::OperandRounding::nearest_or_truncated;

  // Forward.
  const mpx::GemmConfig forward{.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::ReluAuxBias};
  mpx::Tensor<S> y_cpu(mpx::Shape{m, n});
  mpx::Tensor<std::int32_t> mask_cpu(mpx::relu_mask_shape(y_cpu.shape()));
  mpx::cpu::gemm<Compute>(x, w, y_cpu, forward, {.bias = &bias, .relu_mask = &mask_cpu});
  const auto x_gpu = mpx::to_device(x);
  const auto w_gpu = mpx::to_device(w);
  const auto bias_gpu = mpx::to_device(bias);
  mpx::Tensor<S, mpx::Cuda> y_gpu(mpx::Shape{m, n});
  // The GPU's mask starts as the complement of the CPU's: a word it does not write fails every bit.
  mpx::Tensor<std::int32_t> complement(mask_cpu.shape());
  for (std::int64_t i = 0; i < complement.numel(); ++i) complement[i] = ~mask_cpu[i];
  auto mask_gpu = mpx::to_device(complement);
  mpx::cuda::reset_gemm_path_counts();
  mpx::cuda::gemm<Compute>(x_gpu, w_gpu, y_gpu, forward, {.bias = &bias_gpu, .relu_mask = &mask_gpu});
  const auto forward_paths = mpx::cuda::gemm_path_counts();
  auto mask_back = mpx::to_host(mask_gpu);
  const auto y_back = mpx::to_host(y_gpu);

  const auto tol = mpx::test::gemm_tolerance<Compute, OutTag>(k, rounding);
  std::int64_t checked = 0, positive = 0, differing = 0;
  int failures = 0;
  for (std::int64_t row = 0; row < m; ++row) {
    for (std::int64_t col = 0; col < n; ++col) {
      double pre = to_double(bias[col]);
      double magnitude = std::abs(pre);
      for (std::int64_t p = 0; p < k; ++p) {
        const double term = to_double(x[row * k + p]) * to_double(w[col * k + p]);
        pre += term;
        magnitude += std::abs(term);
      }
      const double expected = to_double(y_cpu[row * n + col]);
      const double actual = to_double(y_back[row * n + col]);
      if (std::abs(actual - expected) > 2 * tol.bound(magnitude, expected) && failures++ < 5) {
        FAIL_CHECK("y[" << row << "," << col << "] gpu " << actual << " cpu " << expected);
      }
      if (std::abs(pre) <= 2 * tol.accumulate * magnitude) continue;  // either bit is right
      ++checked;
      positive += pre > 0 ? 1 : 0;
      const bool cpu_bit = mpx::relu_mask_bit(mask_cpu.data() + row * words, col);
      const bool gpu_bit = mpx::relu_mask_bit(mask_back.data() + row * words, col);
      if (cpu_bit != (pre > 0) && failures++ < 5) {
        FAIL_CHECK("cpu mask bit (" << row << ", " << col << ") is " << cpu_bit << ", pre-activation "
                                    << pre);
      }
      if (gpu_bit != cpu_bit) ++differing;
    }
  }
  INFO("mask words of rows 0 and 1 (bit c of row r: word r * "
       << words << " + c / 32, bit c % 32), gpu:" << first_mask_rows(mask_back)
       << "\ncpu:" << first_mask_rows(mask_cpu));
  CHECK(differing == 0);
  CHECK(checked > m * n / 2);     // few elements sit within the bound of zero
  CHECK(positive > checked / 4);  // both signs: neither an all-ones nor an all-zeros mask passes
  CHECK(positive < 3 * checked / 4);

  // Backward: dZ = (dY W2) * bit (and its column sums), reading the GPU's mask on both sides.
  const auto dy = random_host<S>(mpx::Shape{m, k_back}, rng);
  const auto w2 = random_host<S>(mpx::Shape{k_back, n}, rng);
  const mpx::GemmConfig backward{.epilogue = mpx::Epilogue::DReluBGrad};
  mpx::Tensor<S> dz_cpu(mpx::Shape{m, n});
  mpx::Tensor<Acc> bias_grad_cpu(mpx::Shape{n});
  mpx::cpu::gemm<Compute>(dy, w2, dz_cpu, backward, {.relu_mask = &mask_back, .bias_grad = &bias_grad_cpu});
  const auto dy_gpu = mpx::to_device(dy);
  const auto w2_gpu = mpx::to_device(w2);
  mpx::Tensor<S, mpx::Cuda> dz_gpu(mpx::Shape{m, n});
  mpx::Tensor<Acc, mpx::Cuda> bias_grad_gpu(mpx::Shape{n});
  mpx::cuda::reset_gemm_path_counts();
  mpx::cuda::gemm<Compute>(dy_gpu, w2_gpu, dz_gpu, backward,
                           {.relu_mask = &mask_gpu, .bias_grad = &bias_grad_gpu});
  const auto backward_paths = mpx::cuda::gemm_path_counts();
  mpx::Tensor<S, mpx::Cuda> dz_only_gpu(mpx::Shape{m, n});
  mpx::cuda::reset_gemm_path_counts();
  mpx::cuda::gemm<Compute>(dy_gpu, w2_gpu, dz_only_gpu, {.epilogue = mpx::Epilogue::DRelu},
                           {.relu_mask = &mask_gpu});
  const auto drelu_paths = mpx::cuda::gemm_path_counts();
  const auto dz_back = mpx::to_host(dz_gpu);
  const auto dz_only_back = mpx::to_host(dz_only_gpu);
  const auto bias_grad_back = mpx::to_host(bias_grad_gpu);

  const auto tol_back = mpx::test::gemm_tolerance<Compute, OutTag>(k_back, rounding);
  const auto tol_grad = mpx::test::gemm_bias_grad_tolerance<Compute, OutTag>(k_back, m, rounding);
  for (std::int64_t col = 0; col < n; ++col) {
    double column_magnitude = 0;
    for (std::int64_t row = 0; row < m; ++row) {
      double magnitude = 0;
      for (std::int64_t p = 0; p < k_back; ++p)
        magnitude += std::abs(to_double(dy[row * k_back + p]) * to_double(w2[p * n + col]));
      if (mpx::relu_mask_bit(mask_back.data() + row * words, col)) column_magnitude += magnitude;
      const double expected = to_double(dz_cpu[row * n + col]);
      const double actual = to_double(dz_back[row * n + col]);
      if (std::abs(actual - expected) > 2 * tol_back.bound(magnitude, expected) && failures++ < 5) {
        FAIL_CHECK("DReluBGrad's dz[" << row << "," << col << "] gpu " << actual << " cpu " << expected);
      }
      const double only = to_double(dz_only_back[row * n + col]);
      if (std::abs(only - expected) > 2 * tol_back.bound(magnitude, expected) && failures++ < 5) {
        FAIL_CHECK("DRelu's dz[" << row << "," << col << "] gpu " << only << " cpu " << expected);
      }
    }
    const double expected = to_double(bias_grad_cpu[col]);
    const double actual = to_double(bias_grad_back[col]);
    if (std::abs(actual - expected) > 2 * tol_grad.bound(column_magnitude, expected) + 1e-30 &&
        failures++ < 5) {
      FAIL_CHECK("bias_grad[" << col << "] gpu " << actual << " cpu " << expected);
    }
  }
  CHECK(failures == 0);

  const auto path = [](const mpx::cuda::GemmPathCounts& counts) {
    return counts.fused == 1     ? std::string("fused (cuBLASLt)")
           : counts.refused == 1 ? std::string("unfused (cuBLASLt refused the fused algorithm)")
           : counts.unfused == 1 ? std::string("unfused (no fused algorithm offered)")
                                 : std::string("unknown");
  };
  WARN(mpx::numeric_traits<Compute>::name
       << " ReLU mask: RELU_AUX_BIAS ran " << path(forward_paths) << ", DRELU " << path(drelu_paths)
       << ", DRELU_BGRAD " << path(backward_paths) << "; " << checked << " bits compared, " << differing
       << " differ from the CPU's");
  CHECK(forward_paths.fused + forward_paths.unfused == 1);
  CHECK(drelu_paths.fused + drelu_paths.unfused == 1);
  CHECK(backward_paths.fused + backward_paths.unfused == 1);
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

TEST_CASE("ReluAuxBias's mask on the GPU has the CPU's bit layout, and DRelu and DReluBGrad read it there",
          "[cuda][gemm][relu]") {
  SECTION("bf16") {
    check_relu_mask_layout<mpx::BFloat16>();
  }
  SECTION("fp32") {
    check_relu_mask_layout<mpx::Float>();
  }
}

}  // namespace MPX_UNITY_ID
}  // namespace
