// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The fused attention (cuDNN's SDPA, backend/cuda/fused_attention.cuh) against the CPU: the function
// itself against a double-precision reference (outputs and the softmax statistics), then
// PaddedSelfAttention (lengths full, partial, 1 and 0) and SelfAttention (a sequence, an image's
// pixels) on the fused path against the same layers on mpx::Host, forward, dx and the four parameter
// gradients, in bf16 and fp16; evaluation mode; two runs and a CUDA graph replay giving the same bits;
// and the batched-GEMM path chosen where the fused one does not apply (fp32, a head width that is not
// a multiple of 8, the causal mask). main() is in numeric_cuda_test.cu and skips (exit 77) without a
// device. Not yet run on a GPU (written on a machine without one).
//
// Bounds. u is the compute type's unit roundoff (2^-8 bf16, 2^-11 fp16); every sum is in fp32 on both
// sides, whose error (K e_fp32 for K <= 128 terms) is below 1e-5 and negligible next to u. Against
// the double reference, an output is sum_j p_j v_j with P rounded into the compute type before the
// product (each p_j within u relatively; cuDNN rounds it against a running maximum, which moves where
// the rounding lands but not its size) and the result rounded once: within u max|v| + u |o|, held to
// 4 u max|v|. The statistics are fp32 log-sum-exps of scores that are exact products of 16-bit
// values summed in fp32: within 1e-4 (1 + |lse|). Against the CPU layer (the batched-GEMM path), both
// sides round the same intermediates into the compute type (the qkv output, P, O, dS, the qkv
// gradient) from fp32 values that differ in their last bits (other summation orders, cuDNN's online
// softmax, its D = rowsum(dO o O) where mpx sums P dP), so each rounding may land on the other
// neighbour; chained through the projections that is a few u of each tensor's scale, held to 16 u of
// the tensor's largest value, the bound tests/cuda/attention_cuda_test.cu holds the GPU's
// batched-GEMM path to.
// First, with nothing before it: this file is fused_attention.cuh's compiles-alone check
// (tests/CMakeLists.txt).
#include <mpx/backend/cuda/fused_attention.cuh>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <mpx/cuda.hpp>
#include <mpx/nn/causal_self_attention.hpp>
#include <mpx/nn/layers.hpp>
#include <mpx/nn/padded_sequences.hpp>
#include <mpx/nn/self_attention.hpp>

#include "../support/mismatch_log.hpp"
#include "comparisons.hpp"
#include "support.hpp"

namespace {

using mpx::AttentionKernel;
using mpx::Shape;
using mpx::Tensor;
using mpx_test::eps_of;
using mpx_test::largest;
using mpx_test::random_host;
using mpx_test::require_same_bits;
using mpx_test::to_double;

// Every element finite and within `bound` of the CPU's.
template <class A, class B>
void require_close(const Tensor<A>& gpu, const Tensor<B>& cpu, const std::string& what, double bound) {
  mpx_test::require_finite_and_close(gpu, cpu, what, [bound](std::int64_t, double) { return bound; });
}

// Every element of sequence `b` of t [batch, ...] exactly zero.
template <class T>
void require_sequence_zero(const Tensor<T>& t, std::int64_t b, const std::string& what) {
  const std::int64_t per_sequence = t.numel() / t.shape()[0];
  std::int64_t nonzero = 0;
  for (std::int64_t i = b * per_sequence; i < (b + 1) * per_sequence; ++i) nonzero += to_double(t[i]) != 0.0;
  INFO(what << ": sequence " << b << " of length 0");
  CHECK(nonzero == 0);
}

// The fused path's preconditions on this device; the tests that need it say so and stop without them.
template <class T>
bool fused_available(std::int64_t head_dim) {
  if (mpx::cuda::attention_fused_applies<T>(head_dim)) return true;
  const cudaDeviceProp& properties = mpx::cuda_context().properties();
  WARN("the fused attention does not apply on this device (compute capability "
       << properties.major << "." << properties.minor << ", cuDNN " << cudnnGetVersion()
       << "): its checks are skipped");
  return false;
}

// The attention layer of a model: a PaddedSequences' body, or the model itself.
template <class Model>
auto& attention_of(Model& model) {
  if constexpr (requires { model.body(); }) {
    return model.body();
  } else {
    return model;
  }
}

// The GPU model's output, dx and four parameter gradients against the CPU model's (the same
// weights), for random x and dy of x's shape; returns the GPU's (y, dx) on the host.
template <class T, class CpuModel, class GpuModel>
std::pair<Tensor<T>, Tensor<T>> check_against_cpu(CpuModel& cpu, GpuModel& gpu, const Shape& input,
                                                  std::mt19937& rng) {
  const double u = eps_of<T>() / 2;
  const auto x = random_host<T>(input, rng);
  const auto dy = random_host<T>(input, rng);
  const auto x_gpu = mpx::to_device(x);
  const auto dy_gpu = mpx::to_device(dy);
  const Tensor<T> y_cpu = cpu.forward(x).clone();
  Tensor<T> y_gpu = mpx::to_host(gpu.forward(x_gpu));
  require_close(y_gpu, y_cpu, "forward", 16 * u * largest(y_cpu));
  const Tensor<T> dx_cpu = cpu.backward(dy, true)->clone();
  Tensor<T> dx_gpu = mpx::to_host(*gpu.backward(dy_gpu, true));
  require_close(dx_gpu, dx_cpu, "dx", 16 * u * largest(dx_cpu));
  std::vector<Tensor<float>> cpu_grads;
  attention_of(cpu).for_each_parameter(
      [&](std::string_view, auto& p) { cpu_grads.push_back(p.grad().clone()); });
  std::size_t index = 0;
  attention_of(gpu).for_each_parameter([&](std::string_view name, auto& p) {
    const Tensor<float> grad = mpx::to_host(p.grad());
    require_close(grad, cpu_grads[index], std::string(name), 16 * u * largest(cpu_grads[index]));
    ++index;
  });
  CHECK(index == 4);
  return {std::move(y_gpu), std::move(dx_gpu)};
}

}  // namespace

TEST_CASE("cuda fused attention applies within its limits only", "[cuda][attention][fused]") {
  STATIC_REQUIRE(mpx::cuda::fused_attention_max_head_dim(9) == 256);
  STATIC_REQUIRE(mpx::cuda::fused_attention_max_head_dim(8) == 128);
  STATIC_REQUIRE(mpx::Backend<mpx::Cuda>::has_fused_attention);
  STATIC_REQUIRE(!mpx::Backend<mpx::Host>::has_fused_attention);
  CHECK(mpx::cuda::detail::fused_attention_registered);
  const cudaDeviceProp& properties = mpx::cuda_context().properties();
  const bool device_fits =
      properties.major >= 8 && cudnnGetVersion() >= mpx::cuda::fused_attention_min_cudnn_version;
  const std::int64_t widest = mpx::cuda::fused_attention_max_head_dim(properties.major);
  for (const std::int64_t d : {std::int64_t{8}, std::int64_t{64}, std::int64_t{128}, widest}) {
    CHECK(mpx::cuda::attention_fused_applies<Eigen::bfloat16>(d) == device_fits);
    CHECK(mpx::cuda::attention_fused_applies<Eigen::half>(d) == device_fits);
  }
  for (const std::int64_t d : {std::int64_t{0}, std::int64_t{12}, std::int64_t{60}, widest + 8}) {
    CHECK_FALSE(mpx::cuda::attention_fused_applies<Eigen::bfloat16>(d));
  }
  CHECK_FALSE(mpx::cuda::attention_fused_applies<float>(64));  // cuDNN's SDPA is fp16 / bf16 only
  CHECK_FALSE(mpx::cuda::attention_fused_applies<double>(64));
}

TEMPLATE_TEST_CASE("cuda fused attention forward matches a double reference, statistics included",
                   "[cuda][attention][fused]", Eigen::bfloat16, Eigen::half) {
  using T = TestType;
  constexpr std::int64_t B = 3, S = 20, H = 2, d = 32, C = H * d;
  if (!fused_available<T>(d)) return;
  std::mt19937 rng(7100);
  const auto qkv = random_host<T>(Shape{B, S, 3 * C}, rng, -2.0, 2.0);
  Tensor<std::int32_t> lengths(Shape{B});
  lengths[0] = S;
  lengths[1] = 7;
  lengths[2] = 0;
  Tensor<T, mpx::Cuda> out(Shape{B, S, C});
  Tensor<float, mpx::Cuda> stats(Shape{B, H, S});
  const auto lengths_gpu = mpx::to_device(lengths);
  mpx::cuda::reset_fused_attention_counts();
  const bool ran = mpx::cuda::attention_fused_forward(mpx::to_device(qkv), &lengths_gpu, out, &stats, H);
  INFO(mpx::cuda::last_fused_attention_refusal());
  REQUIRE(ran);
  CHECK(mpx::cuda::fused_attention_counts() == mpx::cuda::FusedAttentionCounts{.forward = 1});
  const Tensor<T> o = mpx::to_host(out);
  const Tensor<float> lse = mpx::to_host(stats);
  const double u = eps_of<T>() / 2;
  double v_max = 0;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < S; ++t)
      for (std::int64_t j = 0; j < C; ++j)
        v_max = std::max(v_max, std::abs(to_double(qkv[(b * S + t) * 3 * C + 2 * C + j])));
  mpx_test::MismatchLog out_log("output"), stats_log("statistics");
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < H; ++h) {
      for (std::int64_t t = 0; t < S; ++t) {
        const auto at = [&](std::int64_t position, std::int64_t group, std::int64_t j) {
          return to_double(qkv[(b * S + position) * 3 * C + group * C + h * d + j]);
        };
        const std::int64_t keys = lengths[b];
        std::vector<double> scores(static_cast<std::size_t>(keys));
        double max = -INFINITY;
        for (std::int64_t key = 0; key < keys; ++key) {
          double dot = 0;
          for (std::int64_t j = 0; j < d; ++j) dot += at(t, 0, j) * at(key, 1, j);
          scores[key] = dot / std::sqrt(static_cast<double>(d));
          max = std::max(max, scores[key]);
        }
        double sum = 0;
        for (const double s : scores) sum += std::exp(s - max);
        for (std::int64_t j = 0; j < d; ++j) {
          double expected = 0;
          for (std::int64_t key = 0; key < keys; ++key)
            expected += std::exp(scores[key] - max) / sum * at(key, 2, j);
          const double actual = to_double(o[(b * S + t) * C + h * d + j]);
          const double bound = keys == 0 ? 0.0 : 4 * u * v_max;  // a sequence of length 0 gives exact zeros
          out_log.check(std::isfinite(actual) && std::abs(actual - expected) <= bound, [&] {
            return "b " + std::to_string(b) + " h " + std::to_string(h) + " t " + std::to_string(t) + " j " +
                   std::to_string(j) + ": gpu " + std::to_string(actual) + " reference " +
                   std::to_string(expected);
          });
        }
        if (keys > 0) {
          const double expected = max + std::log(sum);
          const double actual = lse[(b * H + h) * S + t];
          stats_log.check(std::abs(actual - expected) <= 1e-4 * (1 + std::abs(expected)), [&] {
            return "b " + std::to_string(b) + " h " + std::to_string(h) + " t " + std::to_string(t) +
                   ": gpu " + std::to_string(actual) + " reference log-sum-exp " + std::to_string(expected);
          });
        }
      }
    }
  }
  INFO(out_log.summary());
  CHECK(out_log.failures() == 0);
  INFO(stats_log.summary());
  CHECK(stats_log.failures() == 0);
}

TEMPLATE_TEST_CASE("cuda PaddedSelfAttention on the fused path follows the cpu layer, lengths 0 to full",
                   "[cuda][attention][fused]", mpx::bf16_mixed, mpx::fp16_mixed) {
  using P = TestType;
  using T = mpx::compute_t<P>;
  constexpr std::int64_t C = 128, H = 2;  // heads of 64
  if (!fused_available<T>(C / H)) return;
  mpx::nn::PaddedSequences cpu{mpx::nn::layers<P, mpx::Host>::padded_self_attention(C, H)};
  mpx::nn::PaddedSequences gpu{mpx::nn::layers<P, mpx::Cuda>::padded_self_attention(C, H)};
  cpu.initialize(7);  // the same Philox draws on both devices give the same weights
  gpu.initialize(7);
  // 37 positions: a partial tile of keys whatever cuDNN's tile; sequence 2 empty, 3 a single token.
  const std::vector<std::int32_t> lengths = {37, 10, 0, 1, 36};
  cpu.set_lengths(lengths);
  gpu.set_lengths(lengths);
  mpx::cuda::reset_fused_attention_counts();
  std::mt19937 rng(7200);
  const auto [y, dx] = check_against_cpu<T>(cpu, gpu, Shape{5, 37, C}, rng);
  INFO(mpx::cuda::last_fused_attention_refusal());
  CHECK(gpu.body().attention_kernel() == AttentionKernel::Fused);
  CHECK(cpu.body().attention_kernel() == AttentionKernel::BatchedGemm);
  CHECK(mpx::cuda::fused_attention_counts() == mpx::cuda::FusedAttentionCounts{.forward = 1, .backward = 1});
  // Zero biases (the initialisation's): the empty sequence's output and input gradient are zeros.
  require_sequence_zero(y, 2, "y");
  require_sequence_zero(dx, 2, "dx");
}

TEMPLATE_TEST_CASE("cuda SelfAttention on the fused path follows the cpu layer", "[cuda][attention][fused]",
                   mpx::bf16_mixed, mpx::fp16_mixed) {
  using P = TestType;
  using T = mpx::compute_t<P>;
  std::mt19937 rng(7300);
  SECTION("a sequence, heads of 64") {
    if (!fused_available<T>(64)) return;
    mpx::nn::SelfAttention<P, mpx::Host> cpu(128, 2);
    mpx::nn::SelfAttention<P, mpx::Cuda> gpu(128, 2);
    cpu.initialize(7, 3);
    gpu.initialize(7, 3);
    check_against_cpu<T>(cpu, gpu, Shape{2, 40, 128}, rng);
    CHECK(gpu.attention_kernel() == AttentionKernel::Fused);
  }
  SECTION("an image's 35 pixels, heads of 32") {
    if (!fused_available<T>(32)) return;
    mpx::nn::SelfAttention<P, mpx::Host> cpu(64, 2);
    mpx::nn::SelfAttention<P, mpx::Cuda> gpu(64, 2);
    cpu.initialize(7, 3);
    gpu.initialize(7, 3);
    check_against_cpu<T>(cpu, gpu, Shape{2, 5, 7, 64}, rng);
    CHECK(gpu.attention_kernel() == AttentionKernel::Fused);
  }
}

TEST_CASE("cuda fused attention in evaluation mode saves nothing and follows the cpu",
          "[cuda][attention][fused]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  if (!fused_available<T>(64)) return;
  mpx::nn::PaddedSequences cpu{mpx::nn::layers<P, mpx::Host>::padded_self_attention(128, 2)};
  mpx::nn::PaddedSequences gpu{mpx::nn::layers<P, mpx::Cuda>::padded_self_attention(128, 2)};
  cpu.initialize(7);
  gpu.initialize(7);
  cpu.set_training(false);
  gpu.set_training(false);
  const std::vector<std::int32_t> lengths = {24, 0, 5};
  cpu.set_lengths(lengths);
  gpu.set_lengths(lengths);
  std::mt19937 rng(7400);
  const auto x = random_host<T>(Shape{3, 24, 128}, rng);
  const Tensor<T> y_cpu = cpu.forward(x).clone();
  const auto x_gpu = mpx::to_device(x);
  const Tensor<T> y_gpu = mpx::to_host(gpu.forward(x_gpu));
  CHECK(gpu.body().attention_kernel() == AttentionKernel::Fused);
  require_close(y_gpu, y_cpu, "evaluation forward", 16 * eps_of<T>() / 2 * largest(y_cpu));
  require_sequence_zero(y_gpu, 1, "y");
  CHECK_THROWS(gpu.backward(x_gpu));  // evaluation keeps nothing for a backward
}

TEST_CASE("cuda fused attention gives the same bits twice and in a replayed CUDA graph",
          "[cuda][attention][fused][graph]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  if (!fused_available<T>(64)) return;
  mpx::nn::PaddedSequences gpu{mpx::nn::layers<P, mpx::Cuda>::padded_self_attention(128, 2)};
  gpu.initialize(7);
  gpu.set_lengths(std::vector<std::int32_t>{30, 3, 0, 17});
  std::mt19937 rng(7500);
  const auto x = mpx::to_device(random_host<T>(Shape{4, 30, 128}, rng));
  const auto dy = mpx::to_device(random_host<T>(Shape{4, 30, 128}, rng));
  const Tensor<T, mpx::Cuda>* y = nullptr;
  const Tensor<T, mpx::Cuda>* dx = nullptr;
  const auto step = [&](const Tensor<T, mpx::Cuda>& input, const Tensor<T, mpx::Cuda>& gradient) {
    y = &gpu.forward(input);
    dx = gpu.backward(gradient, true);
  };
  step(x, dy);
  REQUIRE(gpu.body().attention_kernel() == AttentionKernel::Fused);
  const Tensor<T> y1 = mpx::to_host(*y), dx1 = mpx::to_host(*dx);
  step(x, dy);
  require_same_bits(*y, y1, "y, second run");
  require_same_bits(*dx, dx1, "dx, second run (cuDNN's deterministic backward)");

  // Captured with the plans the eager runs built, replayed after a run on other inputs: the first
  // run's bits again.
  mpx::cuda::Graph graph;
  graph.capture([&] { step(x, dy); });
  const auto other_x = mpx::to_device(random_host<T>(Shape{4, 30, 128}, rng));
  step(other_x, dy);
  graph.launch();
  mpx::cuda_context().synchronize();
  require_same_bits(*y, y1, "y, replayed");
  require_same_bits(*dx, dx1, "dx, replayed");
}

TEST_CASE("cuda attention takes the batched-GEMM path where the fused one does not apply",
          "[cuda][attention][fused]") {
  std::mt19937 rng(7600);
  mpx::cuda::reset_fused_attention_counts();
  SECTION("fp32") {
    mpx::nn::PaddedSequences cpu{mpx::nn::layers<mpx::fp32, mpx::Host>::padded_self_attention(128, 2)};
    mpx::nn::PaddedSequences gpu{mpx::nn::layers<mpx::fp32, mpx::Cuda>::padded_self_attention(128, 2)};
    cpu.initialize(7);
    gpu.initialize(7);
    const std::vector<std::int32_t> lengths = {9, 0, 4};
    cpu.set_lengths(lengths);
    gpu.set_lengths(lengths);
    const auto x = random_host<float>(Shape{3, 9, 128}, rng);
    const Tensor<float> y_cpu = cpu.forward(x).clone();
    const auto x_gpu = mpx::to_device(x);
    require_close(mpx::to_host(gpu.forward(x_gpu)), y_cpu, "fp32 forward", 1e-4 * largest(y_cpu));
    CHECK(gpu.body().attention_kernel() == AttentionKernel::BatchedGemm);
  }
  SECTION("bf16, heads of 12 (not a multiple of 8)") {
    mpx::nn::SelfAttention<mpx::bf16_mixed, mpx::Cuda> gpu(48, 4);
    const auto x = mpx::to_device(random_host<Eigen::bfloat16>(Shape{2, 16, 48}, rng));
    gpu.forward(x);
    CHECK(gpu.attention_kernel() == AttentionKernel::BatchedGemm);
  }
  SECTION("bf16, the causal mask") {
    mpx::nn::CausalSelfAttention<mpx::bf16_mixed, mpx::Cuda> gpu(128, 2);
    const auto x = mpx::to_device(random_host<Eigen::bfloat16>(Shape{2, 16, 128}, rng));
    gpu.forward(x);
    CHECK(gpu.attention_kernel() == AttentionKernel::BatchedGemm);
  }
  CHECK(mpx::cuda::fused_attention_counts() == mpx::cuda::FusedAttentionCounts{});
}
