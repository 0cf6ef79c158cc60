// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A timestep-conditioned model (nn::TimeConditioned: a time network and a body of Linear layers
// over [N, positions, C] with two AddTimeEmbedding layers; convolutions would need the cuDNN
// frontend's translation unit) on the GPU against the same model on the CPU, in fp32: the output,
// the input gradient and every parameter gradient, time network's included, within 1e-4 of the
// largest magnitude (cuBLASLt's and the CPU's GEMMs sum in different orders; the shift kernels
// themselves are bit for bit, cnn_kernels_cuda_test.cu). main() is in numeric_cuda_test.cu and skips
// (exit 77) without a device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/cuda.hpp>

#include "support.hpp"

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

template <class Device>
auto conditioned_model() {
  using L = mpx::nn::layers<mpx::fp32, Device>;
  auto model = mpx::nn::TimeConditioned{
      mpx::nn::TimestepFeatures{.dim = 16},
      mpx::nn::Sequential{L::linear(16, 32), L::silu(), L::linear(32, 32), L::silu()},
      mpx::nn::Sequential{L::linear(3, 8), L::add_time_embedding(32, 8), L::silu(), L::linear(8, 2),
                          L::add_time_embedding(32, 2)}};
  model.initialize(21, 0);
  return model;
}

// max |a - b| <= 1e-4 max |b| over the elements.
void check_close(const mpx::Tensor<float>& gpu, const mpx::Tensor<float>& cpu, const std::string& what) {
  INFO(what);
  REQUIRE(gpu.shape() == cpu.shape());
  double largest = 0.0, difference = 0.0;
  for (std::int64_t i = 0; i < cpu.numel(); ++i) {
    largest = std::max(largest, std::abs(double(cpu[i])));
    difference = std::max(difference, std::abs(double(gpu[i]) - double(cpu[i])));
  }
  CHECK(difference <= 1e-4 * largest);
}

}  // namespace

TEST_CASE("A TimeConditioned model computes on the GPU what it computes on the CPU", "[cuda][time]") {
  auto cpu = conditioned_model<mpx::Host>();
  auto gpu = conditioned_model<mpx::Cuda>();
  std::mt19937 rng(22);
  const auto x = mpx_test::random_host<float>(mpx::Shape{3, 6, 3}, rng, -1.0, 1.0);
  const auto dy = mpx_test::random_host<float>(mpx::Shape{3, 6, 2}, rng, -1.0, 1.0);
  const std::vector<float> timesteps{0.0f, 17.0f, 999.0f};
  cpu.set_timesteps(timesteps);
  gpu.set_timesteps(timesteps);
  const auto x_gpu = mpx::to<mpx::Cuda>(x);
  const auto dy_gpu = mpx::to<mpx::Cuda>(dy);
  check_close(mpx::to<mpx::Host>(gpu.forward(x_gpu)), cpu.forward(x), "forward");
  const mpx::Tensor<float> dx_cpu = cpu.backward(dy)->clone();
  check_close(mpx::to<mpx::Host>(*gpu.backward(dy_gpu)), dx_cpu, "dx");
  std::vector<mpx::Tensor<float>> cpu_grads;
  cpu.for_each_parameter([&](std::string_view, auto& p) { cpu_grads.push_back(p.grad().clone()); });
  std::size_t index = 0;
  gpu.for_each_parameter([&](std::string_view name, auto& p) {
    check_close(mpx::to<mpx::Host>(p.grad()), cpu_grads.at(index++), "gradient of " + std::string(name));
  });
  CHECK(index == cpu_grads.size());
}

}  // namespace MPX_UNITY_ID
}  // namespace
