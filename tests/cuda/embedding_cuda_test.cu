// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The token and positional embedding kernels of the CUDA backend against the CPU backend, and the
// layers on both devices. main() is in numeric_cuda_test.cu and skips (exit 77) without a device.
//
// Everything here is bit for bit, no tolerance: forward copies rows (or adds once and rounds once,
// one correctly rounded operation on both sides), and backward adds each term onto the fp32 gradient
// in the same order on both devices (position order for the token table, batch order for the
// position table), with adds only, so nvcc has no multiply-add to contract. The normal
// initialisation is drawn on the host for both devices.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>

#include <mpx/backend/cuda/embedding.cuh>
#include <mpx/backend/cuda/positional_embedding.cuh>
#include <mpx/cuda.hpp>

#include "../support/mismatch_log.hpp"
#include "comparisons.hpp"
#include "support.hpp"

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx_test::random_host;
using mpx_test::require_same_bits;

mpx::Tensor<std::int32_t> random_ids(const mpx::Shape& shape, std::int32_t used, std::mt19937& rng) {
  std::uniform_int_distribution<std::int32_t> pick(0, used - 1);
  mpx::Tensor<std::int32_t> ids(shape);
  for (std::int64_t i = 0; i < ids.numel(); ++i) ids[i] = pick(rng);
  return ids;
}

// Magnitudes 2^u, u uniform on [-16, 6): sums of these round at every step, so a different order of
// the terms would show in the bits.
template <class T>
mpx::Tensor<T> wide_range(const mpx::Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> exponent(-16.0, 6.0);
  std::bernoulli_distribution negative(0.5);
  mpx::Tensor<T> tensor(shape);
  for (std::int64_t i = 0; i < tensor.numel(); ++i) {
    const double magnitude = std::exp2(exponent(rng));
    tensor[i] = static_cast<T>(static_cast<float>(negative(rng) ? -magnitude : magnitude));
  }
  return tensor;
}

template <class T>
using acc_of = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Forward and backward of the token table on both devices, with a non-zero starting gradient (a
// second micro-batch) and the workspace reused by a second, smaller call.
template <class T>
void check_embedding(std::int64_t num_embeddings, std::int32_t used, std::int64_t dim,
                     const mpx::Shape& ids_shape, std::mt19937& rng) {
  using Acc = acc_of<T>;
  INFO("num_embeddings " << num_embeddings << " used " << used << " dim " << dim << " ids " << ids_shape);
  const auto ids = random_ids(ids_shape, used, rng);
  const auto weight = random_host<T>(mpx::Shape{num_embeddings, dim}, rng);
  const mpx::Shape out_shape = mpx::embedding_output_shape("test", ids_shape, dim);
  mpx::Tensor<T> out_cpu(out_shape);
  mpx::cpu::embedding_forward(ids, weight, out_cpu);
  const auto ids_gpu = mpx::to_device(ids);
  mpx::Tensor<T, mpx::Cuda> out_gpu(out_shape);
  mpx::cuda::embedding_forward(ids_gpu, mpx::to_device(weight), out_gpu);
  require_same_bits(mpx::to_host(out_gpu), out_cpu, "embedding forward");

  const auto dy = wide_range<T>(out_shape, rng);
  auto dweight_cpu = wide_range<Acc>(mpx::Shape{num_embeddings, dim}, rng);
  auto dweight_gpu = mpx::to_device(dweight_cpu);
  mpx::cpu::EmbeddingWorkspace cpu_workspace;
  mpx::cuda::EmbeddingWorkspace gpu_workspace;
  mpx::cpu::embedding_backward(ids, dy, dweight_cpu, cpu_workspace);
  mpx::cuda::embedding_backward(ids_gpu, mpx::to_device(dy), dweight_gpu, gpu_workspace);
  require_same_bits(mpx::to_host(dweight_gpu), dweight_cpu, "embedding dweight");
  // Again on the same buffers: the same bits added once more.
  mpx::cpu::embedding_backward(ids, dy, dweight_cpu, cpu_workspace);
  mpx::cuda::embedding_backward(ids_gpu, mpx::to_device(dy), dweight_gpu, gpu_workspace);
  require_same_bits(mpx::to_host(dweight_gpu), dweight_cpu, "embedding dweight, second call");
}

}  // namespace

TEMPLATE_TEST_CASE("cuda embedding forward and backward give the cpu's bits", "[cuda][embedding]", float,
                   double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(61);
  check_embedding<T>(1, 1, 1, mpx::Shape{1}, rng);                // one token
  check_embedding<T>(6, 4, 5, mpx::Shape{3, 7}, rng);             // repeats, unused rows
  check_embedding<T>(3, 3, 300, mpx::Shape{8, 512}, rng);         // runs of ~1365, two column tiles
  check_embedding<T>(65, 65, 256, mpx::Shape{4, 1, 128}, rng);    // rank-3 ids
  check_embedding<T>(50257, 50257, 64, mpx::Shape{16, 64}, rng);  // GPT-2's vocabulary: 16 key bits
  check_embedding<T>(50257, 2, 33, mpx::Shape{2, 4097}, rng);     // one run of ~4097 per id
}

TEST_CASE("cuda embedding writes NaN rows for ids out of range and skips them in backward",
          "[cuda][embedding]") {
  std::mt19937 rng(62);
  const std::int64_t dim = 9;
  mpx::Tensor<std::int32_t> ids = random_ids(mpx::Shape{2, 5}, 4, rng);
  ids[3] = 4;   // == num_embeddings
  ids[7] = -1;  // negative
  const auto weight = random_host<float>(mpx::Shape{4, dim}, rng);
  mpx::Tensor<float, mpx::Cuda> out_gpu(mpx::Shape{2, 5, dim});
  const auto ids_gpu = mpx::to_device(ids);
  mpx::cuda::embedding_forward(ids_gpu, mpx::to_device(weight), out_gpu);
  const auto out = mpx::to_host(out_gpu);
  for (std::int64_t n = 0; n < 10; ++n) {
    for (std::int64_t c = 0; c < dim; ++c) {
      INFO("position " << n << " column " << c);
      if (n == 3 || n == 7) {
        CHECK(std::isnan(out[n * dim + c]));
      } else {
        CHECK(out[n * dim + c] == weight[ids[n] * dim + c]);
      }
    }
  }

  // Backward adds the valid positions only: the CPU's result on the ids with those two left out.
  const auto dy = random_host<float>(mpx::Shape{2, 5, dim}, rng);
  mpx::Tensor<float> expected(mpx::Shape{4, dim});
  for (std::int64_t n = 0; n < 10; ++n) {
    if (n == 3 || n == 7) continue;
    for (std::int64_t c = 0; c < dim; ++c) expected[ids[n] * dim + c] += dy[n * dim + c];
  }
  mpx::Tensor<float, mpx::Cuda> dweight(mpx::Shape{4, dim});
  mpx::cuda::EmbeddingWorkspace workspace;
  mpx::cuda::embedding_backward(ids_gpu, mpx::to_device(dy), dweight, workspace);
  require_same_bits(mpx::to_host(dweight), expected, "dweight without the invalid ids");

  // Shapes are checked on the host, as on the CPU.
  mpx::Tensor<float, mpx::Cuda> wrong(mpx::Shape{2, 5, dim + 1});
  CHECK_THROWS_AS(mpx::cuda::embedding_forward(ids_gpu, mpx::to_device(weight), wrong), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::embedding_backward(ids_gpu, wrong, dweight, workspace), mpx::shape_error);
}

TEMPLATE_TEST_CASE("cuda positional embedding forward and backward give the cpu's bits", "[cuda][positional]",
                   float, double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  using Acc = acc_of<T>;
  std::mt19937 rng(63);
  struct Size {
    std::int64_t batch, sequence, max_positions, dim;
  };
  for (const Size s : {Size{1, 1, 1, 1}, Size{3, 7, 9, 5}, Size{64, 128, 128, 256}, Size{5, 1023, 1024, 3}}) {
    INFO("batch " << s.batch << " sequence " << s.sequence << " dim " << s.dim);
    const mpx::Shape shape{s.batch, s.sequence, s.dim};
    const auto x = random_host<T>(shape, rng, -4.0, 4.0);
    const auto weight = random_host<Acc>(mpx::Shape{s.max_positions, s.dim}, rng);
    mpx::Tensor<T> y_cpu(shape);
    mpx::cpu::positional_embedding_forward(x, weight, y_cpu);
    mpx::Tensor<T, mpx::Cuda> y_gpu(shape);
    mpx::cuda::positional_embedding_forward(mpx::to_device(x), mpx::to_device(weight), y_gpu);
    require_same_bits(mpx::to_host(y_gpu), y_cpu, "positional forward");

    const auto dy = wide_range<T>(shape, rng);
    auto dweight_cpu = wide_range<Acc>(mpx::Shape{s.max_positions, s.dim}, rng);
    auto dweight_gpu = mpx::to_device(dweight_cpu);
    mpx::cpu::positional_embedding_backward(dy, dweight_cpu);
    mpx::cuda::positional_embedding_backward(mpx::to_device(dy), dweight_gpu);
    require_same_bits(mpx::to_host(dweight_gpu), dweight_cpu, "positional dweight");
  }
  mpx::Tensor<T, mpx::Cuda> x(mpx::Shape{2, 5, 4});
  mpx::Tensor<Acc, mpx::Cuda> short_table(mpx::Shape{4, 4});
  mpx::Tensor<T, mpx::Cuda> y(mpx::Shape{2, 5, 4});
  CHECK_THROWS_AS(mpx::cuda::positional_embedding_forward(x, short_table, y), mpx::shape_error);
}

TEST_CASE("cuda fill_normal draws the host's values", "[cuda][tensor_ops]") {
  mpx::Tensor<float> host(mpx::Shape{1000, 3});
  mpx::Tensor<float, mpx::Cuda> device(mpx::Shape{1000, 3});
  mpx::Backend<mpx::Host>::fill_normal(host, 0.5, 0.02, 17, 3);
  mpx::Backend<mpx::Cuda>::fill_normal(device, 0.5, 0.02, 17, 3);
  require_same_bits(mpx::to_host(device), host, "fill_normal");
}

TEMPLATE_TEST_CASE("an embedding model on the GPU follows the CPU bit for bit through one step",
                   "[cuda][embedding][positional]", mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed) {
  using P = TestType;
  using T = mpx::compute_t<P>;
  using Cpu = mpx::nn::layers<P, mpx::Host>;
  using Gpu = mpx::nn::layers<P, mpx::Cuda>;
  mpx::nn::Sequential cpu{Cpu::embedding(50, 24, {.init_std = 0.02}), Cpu::positional_embedding(16, 24)};
  mpx::nn::Sequential gpu{Gpu::embedding(50, 24, {.init_std = 0.02}), Gpu::positional_embedding(16, 24)};
  cpu.initialize(5);
  gpu.initialize(5);
  std::mt19937 rng(64);
  const auto ids = random_ids(mpx::Shape{4, 16}, 10, rng);  // heavy repetition
  const auto ids_gpu = mpx::to_device(ids);
  require_same_bits(mpx::to_host(gpu.forward(ids_gpu)), cpu.forward(ids), "model output");
  const auto dy = wide_range<T>(mpx::Shape{4, 16, 24}, rng);
  const auto dy_gpu = mpx::to_device(dy);
  cpu.zero_grad();
  gpu.zero_grad();
  CHECK(cpu.backward(dy) == nullptr);
  CHECK(gpu.backward(dy_gpu) == nullptr);
  require_same_bits(mpx::to_host(gpu.template layer<0>().weight().grad()),
                    cpu.template layer<0>().weight().grad(), "token dW");
  require_same_bits(mpx::to_host(gpu.template layer<1>().weight().grad()),
                    cpu.template layer<1>().weight().grad(), "position dW");
  require_same_bits(mpx::to_host(gpu.template layer<0>().weight().master()),
                    cpu.template layer<0>().weight().master(), "token table");
}

}  // namespace MPX_UNITY_ID
}  // namespace
