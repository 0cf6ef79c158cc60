// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Self-attention on the GPU against the CPU backend: the strided-batched GEMM, the head permutes
// (sequences and channels-last images), the causal and bidirectional softmax forward and backward
// (fully masked rows included) and the whole layer's forward and backward, CausalSelfAttention over
// a sequence and SelfAttention over an image's pixels. main() is in numeric_cuda_test.cu and skips (exit 77)
// without a device.
//
// Bounds (e = the accumulate type's epsilon, 2^-23 for fp32; each side errs by at most (n + 16) e
// per unit of magnitude, n the longest sum, so twice that between them, plus one ulp of the stored
// type): the batched GEMM per element 2 (k + 16) e sum_k |alpha a b| (+ |beta c|); the softmax
// 2 (T + 16) e p_j, and its backward 2 (T + 16) e (p_j |dp_j| + p_j sum_k p_k |dp_k|); the permutes
// are copies, bit for bit. The whole layer chains roundings into the compute type whose neighbours
// either side may pick (its sums run in another order), so it is held to 16 u of the tensor's
// largest value (u = the compute type's unit roundoff) and 1e-4 of it in fp32: a bound in the
// spirit of tests/unit/nn_attention_test.cpp's derived one, which stays below 30 u there.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <mpx/backend/cpu/attention.hpp>
#include <mpx/backend/cpu/row_gather.hpp>
#include <mpx/backend/cuda/attention.cuh>
#include <mpx/cuda.hpp>
#include <mpx/nn/causal_self_attention.hpp>
#include <mpx/nn/layers.hpp>
#include <mpx/nn/padded_sequences.hpp>
#include <mpx/nn/residual.hpp>
#include <mpx/nn/self_attention.hpp>
#include <mpx/nn/sequential.hpp>

#include "../support/mismatch_log.hpp"
#include "comparisons.hpp"
#include "support.hpp"

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Tensor;
using mpx_test::eps_of;
using mpx_test::largest;
using mpx_test::random_host;
using mpx_test::require_finite_and_close;
using mpx_test::require_same_bits;
using mpx_test::storage_slack;
using mpx_test::to_double;

template <class Compute, class D>
void check_batched_gemm(std::mt19937& rng) {
  using S = mpx::storage_t<Compute>;
  using Acc = mpx::accumulate_t<Compute>;
  struct Case {
    std::int64_t batch, m, n, k;
    bool ta, tb;
    float beta;
  };
  const Case cases[] = {{8, 7, 7, 8, false, true, 0.0f},     {8, 7, 12, 7, false, false, 0.0f},
                        {6, 12, 7, 7, true, false, 0.0f},    {5, 9, 13, 11, true, true, 0.5f},
                        {12, 64, 64, 32, false, true, 0.0f}, {3, 128, 64, 128, false, false, 1.0f}};
  for (const Case& c : cases) {
    const std::string what = std::string(mpx::numeric_traits<Compute>::name) + " batched gemm, batch " +
                             std::to_string(c.batch) + " m " + std::to_string(c.m) + " n " +
                             std::to_string(c.n) + " k " + std::to_string(c.k);
    const Shape a_one = c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k};
    const Shape b_one = c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
    const auto a = random_host<S>(Shape{c.batch * a_one[0], a_one[1]}, rng);
    const auto b = random_host<S>(Shape{c.batch * b_one[0], b_one[1]}, rng);
    const auto c_in = random_host<D>(Shape{c.batch * c.m, c.n}, rng);
    const mpx::GemmConfig config{.transpose_a = c.ta ? mpx::Transpose::Yes : mpx::Transpose::No,
                                 .transpose_b = c.tb ? mpx::Transpose::Yes : mpx::Transpose::No,
                                 .alpha = 0.375f,
                                 .beta = c.beta,
                                 .batch_count = c.batch};
    Tensor<D> cpu = c_in.clone();
    mpx::cpu::gemm<Compute>(a, b, cpu, config);
    auto gpu_d = mpx::to_device(c_in);
    mpx::cuda::gemm<Compute>(mpx::to_device(a), mpx::to_device(b), gpu_d, config);
    const Tensor<D> gpu = mpx::to_host(gpu_d);
    const double e = eps_of<Acc>();
    require_finite_and_close(gpu, cpu, what, [&](std::int64_t index, double expected) {
      const std::int64_t matrix = index / (c.m * c.n);
      const std::int64_t row = (index / c.n) % c.m;
      const std::int64_t col = index % c.n;
      double magnitude = std::abs(c.beta * to_double(c_in[index]));
      for (std::int64_t p = 0; p < c.k; ++p) {
        const std::int64_t ai = matrix * a_one.numel() + (c.ta ? p * c.m + row : row * c.k + p);
        const std::int64_t bi = matrix * b_one.numel() + (c.tb ? col * c.k + p : p * c.n + col);
        magnitude += 0.375 * std::abs(to_double(a[ai]) * to_double(b[bi]));
      }
      return 2.0 * static_cast<double>(c.k + 16) * e * magnitude + storage_slack<D>(expected);
    });
  }
}

}  // namespace

TEST_CASE("cuda strided-batched gemm matches the cpu's batched gemm", "[cuda][attention][gemm]") {
  std::mt19937 rng(5100);
  check_batched_gemm<mpx::BFloat16, float>(rng);
  check_batched_gemm<mpx::BFloat16, Eigen::bfloat16>(rng);
  check_batched_gemm<mpx::Half, Eigen::half>(rng);
  check_batched_gemm<mpx::Half, float>(rng);
  check_batched_gemm<mpx::Float, float>(rng);
  check_batched_gemm<mpx::Double, double>(rng);
}

TEST_CASE("cuda head permutes give the cpu's bits", "[cuda][attention]") {
  std::mt19937 rng(5200);
  constexpr std::int64_t B = 3, S = 7, C = 24, H = 2, d = 12;
  const auto qkv = random_host<Eigen::bfloat16>(Shape{B, S, 3 * C}, rng);
  const auto qkv_gpu = mpx::to_device(qkv);
  Tensor<Eigen::bfloat16> merged_cpu(Shape{B, S, 3 * C});
  auto merged_gpu = mpx::to_device(merged_cpu);
  for (const std::int64_t column : {std::int64_t{0}, C, 2 * C}) {
    Tensor<Eigen::bfloat16> heads_cpu(Shape{B, H, S, d});
    Tensor<Eigen::bfloat16, mpx::Cuda> heads_gpu(Shape{B, H, S, d});
    mpx::cpu::attention_split_heads(qkv, column, heads_cpu);
    mpx::cuda::attention_split_heads(qkv_gpu, column, heads_gpu);
    require_same_bits(mpx::to_host(heads_gpu), heads_cpu, "split at column " + std::to_string(column));
    mpx::cpu::attention_merge_heads(heads_cpu, column, merged_cpu);
    mpx::cuda::attention_merge_heads(heads_gpu, column, merged_gpu);
  }
  require_same_bits(mpx::to_host(merged_gpu), merged_cpu, "merge");
  require_same_bits(merged_cpu, qkv, "merge after split restores the tokens");
  // A channels-last image [B, 3, 4, C] is the sequence of its 12 pixels.
  const auto image = random_host<Eigen::bfloat16>(Shape{B, 3, 4, C}, rng);
  Tensor<Eigen::bfloat16> image_heads_cpu(Shape{B, H, 12, d});
  Tensor<Eigen::bfloat16, mpx::Cuda> image_heads_gpu(Shape{B, H, 12, d});
  mpx::cpu::attention_split_heads(image, 0, image_heads_cpu);
  mpx::cuda::attention_split_heads(mpx::to_device(image), 0, image_heads_gpu);
  require_same_bits(mpx::to_host(image_heads_gpu), image_heads_cpu, "split of an image");
  Tensor<Eigen::bfloat16, mpx::Cuda> image_gpu(Shape{B, 3, 4, C});
  mpx::cuda::attention_merge_heads(image_heads_gpu, 0, image_gpu);
  require_same_bits(mpx::to_host(image_gpu), image, "merge of an image after its split");
}

TEMPLATE_TEST_CASE(
    "cuda causal and bidirectional softmax forward and backward match the cpu, fully masked rows included",
    "[cuda][attention]", float, Eigen::bfloat16, Eigen::half) {
  using T = TestType;
  std::mt19937 rng(5300);
  for (const auto mask : {mpx::AttentionMask::Causal, mpx::AttentionMask::Bidirectional}) {
    for (const std::int64_t S : {std::int64_t{1}, std::int64_t{7}, std::int64_t{300}}) {
      const auto scores = random_host<float>(Shape{4, S, S}, rng, -20.0, 20.0);  // 4 matrices
      const auto dprobs = random_host<float>(Shape{4, S, S}, rng);
      // One count per matrix (matrix 1 fully masked), and one per two matrices (2 sequences of 2 heads).
      Tensor<std::int32_t> per_matrix(Shape{4}), per_pair(Shape{2});
      std::uniform_int_distribution<std::int32_t> pick(1, static_cast<std::int32_t>(S));
      for (std::int64_t m = 0; m < 4; ++m) per_matrix[m] = m == 1 ? 0 : pick(rng);
      per_pair[0] = pick(rng);
      per_pair[1] = 0;
      for (const int groups : {0, 4, 2}) {
        const bool with_counts = groups > 0;
        const Tensor<std::int32_t>& counts = groups == 2 ? per_pair : per_matrix;
        const auto counts_gpu = mpx::to_device(counts);
        const std::string what =
            std::string(mask == mpx::AttentionMask::Causal ? "causal" : "bidirectional") +
            ", S = " + std::to_string(S) + ", " + std::to_string(groups) + " key counts";
        Tensor<T> probs_cpu(Shape{4, S, S});
        Tensor<T, mpx::Cuda> probs_gpu(Shape{4, S, S});
        mpx::cpu::attention_softmax_forward(scores, probs_cpu, mask, with_counts ? &counts : nullptr);
        mpx::cuda::attention_softmax_forward(mpx::to_device(scores), probs_gpu, mask,
                                             with_counts ? &counts_gpu : nullptr);
        const double e = eps_of<float>();
        require_finite_and_close(
            mpx::to_host(probs_gpu), probs_cpu, "softmax forward " + what, [&](std::int64_t, double p) {
              return 2.0 * static_cast<double>(S + 16) * e * std::abs(p) + storage_slack<T>(p);
            });
        // The backward from the same (CPU) probabilities on both sides.
        Tensor<T> ds_cpu(Shape{4, S, S});
        Tensor<T, mpx::Cuda> ds_gpu(Shape{4, S, S});
        mpx::cpu::attention_softmax_backward(probs_cpu, dprobs, ds_cpu, mask,
                                             with_counts ? &counts : nullptr);
        mpx::cuda::attention_softmax_backward(mpx::to_device(probs_cpu), mpx::to_device(dprobs), ds_gpu, mask,
                                              with_counts ? &counts_gpu : nullptr);
        require_finite_and_close(
            mpx::to_host(ds_gpu), ds_cpu, "softmax backward " + what, [&](std::int64_t index, double ds) {
              const std::int64_t row = index / S;
              double mean = 0;
              for (std::int64_t j = 0; j < S; ++j) {
                mean +=
                    std::abs(to_double(probs_cpu[row * S + j]) * static_cast<double>(dprobs[row * S + j]));
              }
              const double p = std::abs(to_double(probs_cpu[index]));
              const double magnitude = p * std::abs(static_cast<double>(dprobs[index])) + p * mean;
              return 2.0 * static_cast<double>(S + 16) * e * magnitude + storage_slack<T>(ds);
            });
        if (with_counts) {  // the matrices without an allowed key are exactly zero on the GPU
          const auto probs = mpx::to_host(probs_gpu);
          const std::int64_t first = groups == 2 ? 2 * S * S : S * S,
                             end = groups == 2 ? 4 * S * S : 2 * S * S;
          for (std::int64_t i = first; i < end; ++i) REQUIRE(to_double(probs[i]) == 0.0);
        }
      }
    }
  }
}

namespace {

// The GPU model's output and dx against the CPU model's (the same weights) for random x and dy of
// shape `input`, each within 16 u of the CPU tensor's largest value.
template <class T, class CpuModel, class GpuModel>
void require_forward_and_dx_close(CpuModel& cpu, GpuModel& gpu, const Shape& input, double u,
                                  std::mt19937& rng) {
  const auto x = random_host<T>(input, rng);
  const auto dy = random_host<T>(input, rng);
  const auto x_gpu = mpx::to_device(x);
  const auto dy_gpu = mpx::to_device(dy);
  const Tensor<T> y_cpu = cpu.forward(x).clone();
  const Tensor<T> y_gpu = mpx::to_host(gpu.forward(x_gpu));
  const double y_scale = largest(y_cpu);
  require_finite_and_close(y_gpu, y_cpu, "forward", [&](std::int64_t, double) { return 16 * u * y_scale; });
  const Tensor<T> dx_cpu = cpu.backward(dy, true)->clone();
  const Tensor<T> dx_gpu = mpx::to_host(*gpu.backward(dy_gpu, true));
  const double dx_scale = largest(dx_cpu);
  require_finite_and_close(dx_gpu, dx_cpu, "dx", [&](std::int64_t, double) { return 16 * u * dx_scale; });
}

// The GPU layer's output, dx and the four parameter gradients against the CPU layer's, from the same
// weights, x [batch, ..., C] and dy.
template <template <class, class> class Layer, class P>
void check_layer_against_cpu(const Shape& input, std::int64_t heads) {
  using T = mpx::compute_t<P>;
  const std::int64_t C = input.cols();
  const double u = std::is_same_v<T, float> ? 1e-4 / 16 : eps_of<T>() / 2;
  Layer<P, mpx::Host> cpu(C, heads);
  Layer<P, mpx::Cuda> gpu(C, heads);
  cpu.initialize(7, 3);  // the same Philox draws on both devices give the same weights
  gpu.initialize(7, 3);
  std::mt19937 rng(5400);
  require_forward_and_dx_close<T>(cpu, gpu, input, u, rng);
  std::vector<Tensor<float>> cpu_grads;
  cpu.for_each_parameter([&](std::string_view, auto& p) { cpu_grads.push_back(p.grad().clone()); });
  std::size_t index = 0;
  gpu.for_each_parameter([&](std::string_view name, auto& p) {
    const Tensor<float> grad = mpx::to_host(p.grad());
    const double scale = largest(cpu_grads[index]);
    require_finite_and_close(grad, cpu_grads[index], std::string(name),
                             [&](std::int64_t, double) { return 16 * u * scale; });
    ++index;
  });
  CHECK(index == 4);
}

}  // namespace

TEMPLATE_TEST_CASE("cuda CausalSelfAttention forward and backward follow the cpu layer", "[cuda][attention]",
                   mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed) {
  check_layer_against_cpu<mpx::nn::CausalSelfAttention, TestType>(Shape{3, 33, 48}, 4);
}

TEMPLATE_TEST_CASE("cuda SelfAttention over an image's pixels follows the cpu layer", "[cuda][attention]",
                   mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed) {
  check_layer_against_cpu<mpx::nn::SelfAttention, TestType>(Shape{2, 5, 7, 48}, 4);  // 35 pixels
}

TEST_CASE("cuda gather_rows and its backward give the cpu's bits", "[cuda][attention]") {
  std::mt19937 rng(5600);
  const auto x = random_host<Eigen::bfloat16>(Shape{5, 9, 24}, rng);  // 45 rows
  const auto dy = random_host<Eigen::bfloat16>(Shape{4, 24}, rng);
  Tensor<std::int32_t> rows(Shape{4});
  const std::int32_t chosen[] = {44, 0, 9, 17};
  for (std::int64_t m = 0; m < 4; ++m) rows[m] = chosen[m];
  const auto rows_gpu = mpx::to_device(rows);
  Tensor<Eigen::bfloat16> y_cpu(Shape{4, 24}), dx_cpu(Shape{5, 9, 24});
  Tensor<Eigen::bfloat16, mpx::Cuda> y_gpu(Shape{4, 24}), dx_gpu(Shape{5, 9, 24});
  mpx::cpu::gather_rows(x, rows, y_cpu);
  mpx::cuda::gather_rows(mpx::to_device(x), rows_gpu, y_gpu);
  require_same_bits(mpx::to_host(y_gpu), y_cpu, "gather_rows");
  mpx::cpu::gather_rows_backward(dy, rows, dx_cpu);
  mpx::cuda::gather_rows_backward(mpx::to_device(dy), rows_gpu, dx_gpu);
  require_same_bits(mpx::to_host(dx_gpu), dx_cpu, "gather_rows_backward");
}

TEMPLATE_TEST_CASE("cuda PaddedSelfAttention in a padded encoder block follows the cpu, lengths 0 to full",
                   "[cuda][attention]", mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed) {
  using P = TestType;
  using T = mpx::compute_t<P>;
  const auto block = [](auto device) {
    using L = mpx::nn::layers<P, decltype(device)>;
    return mpx::nn::PaddedSequences{
        mpx::nn::Residual{mpx::nn::Sequential{L::layer_norm(48), L::padded_self_attention(48, 4)}}};
  };
  auto cpu = block(mpx::Host{});
  auto gpu = block(mpx::Cuda{});
  cpu.initialize(7);  // the same Philox draws on both devices give the same weights
  gpu.initialize(7);
  const std::vector<std::int32_t> lengths = {33, 10, 0, 1};
  cpu.set_lengths(lengths);
  gpu.set_lengths(lengths);
  std::mt19937 rng(5500);
  const double u = std::is_same_v<T, float> ? 1e-4 / 16 : eps_of<T>() / 2;
  require_forward_and_dx_close<T>(cpu, gpu, Shape{4, 33, 48}, u, rng);
}

}  // namespace MPX_UNITY_ID
}  // namespace
