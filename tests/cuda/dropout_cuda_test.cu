// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Dropout on the GPU against the CPU: the same key gives the same mask and output bits; the kernel
// reads the step from device memory when it runs (a count advanced on the device between two
// launches of the same arguments changes the mask); the nn::Dropout layer on Cuda equals the one on
// Host, bound or counting its own steps, forward and backward.
// main() is in numeric_cuda_test.cu and skips (exit 77) without a device.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <span>
#include <sstream>
#include <string>

#include <mpx/backend/cuda/dropout.cuh>
#include <mpx/cuda.hpp>

#include "../support/mismatch_log.hpp"
#include "support.hpp"

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx_test::random_host;
using mpx_test::same_bits_or_both_nan;
using mpx_test::to_double;

template <class T>
bool same_tensor_bits(const mpx::Tensor<T>& gpu, const mpx::Tensor<T>& cpu, const std::string& what) {
  if (!(gpu.shape() == cpu.shape())) return false;
  mpx_test::MismatchLog log(what);
  for (std::int64_t i = 0; i < cpu.numel(); ++i) {
    log.check(same_bits_or_both_nan(gpu[i], cpu[i]), [&] {
      // A stream, not string concatenation: GCC 12 warns falsely (-Wrestrict) on the inlined operator+.
      std::ostringstream message;
      message << "[" << i << "] gpu " << to_double(gpu[i]) << " cpu " << to_double(cpu[i]);
      return message.str();
    });
  }
  INFO(log.summary());
  return log.failures() == 0;
}

// One int64 in device memory, holding `value`.
mpx::cuda::DeviceArray<std::int64_t> device_step(std::int64_t value) {
  mpx::cuda::DeviceArray<std::int64_t> step(1);
  const std::int64_t host[] = {value};
  step.upload(std::span<const std::int64_t>{host});
  return step;
}

struct Increment {
  MPX_HOST_DEVICE void operator()(std::int64_t* count) const { ++*count; }
};

}  // namespace

TEMPLATE_TEST_CASE("cuda dropout draws the cpu's mask and output bits for the same key", "[cuda][dropout]",
                   float, double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(41);
  for (const std::int64_t count : {1, 3, 4, 5, 1023, 1000003}) {
    for (const float p : {0.1f, 0.5f, 0.9f}) {
      CAPTURE(count, p);
      auto x = random_host<T>(mpx::Shape{count}, rng, -3.0, 3.0);
      if (count > 8) {  // NaN and inf propagate through dropped elements too (x * 0)
        x[count - 1] = static_cast<T>(std::numeric_limits<float>::quiet_NaN());
        x[count - 2] = static_cast<T>(std::numeric_limits<float>::infinity());
      }
      const std::int64_t host_step = 12345678901;
      const auto step = device_step(host_step);
      const mpx::DropoutMask gpu_mask{p, 7, 0x9e3779b97f4a7c15ull, step.data(), 3};
      const mpx::DropoutMask cpu_mask{p, 7, 0x9e3779b97f4a7c15ull, &host_step, 3};
      mpx::Tensor<T> y_cpu(x.shape());
      mpx::cpu::dropout(x, y_cpu, cpu_mask);
      const auto x_gpu = mpx::to_device(x);
      mpx::Tensor<T, mpx::Cuda> y_gpu(x.shape());
      mpx::cuda::dropout(x_gpu, y_gpu, gpu_mask);
      CHECK(same_tensor_bits(mpx::to_host(y_gpu), y_cpu, "dropout"));
    }
  }
}

TEST_CASE("cuda dropout reads the step from device memory when it runs", "[cuda][dropout]") {
  std::mt19937 rng(42);
  const auto x = random_host<float>(mpx::Shape{4096}, rng, 0.5, 1.5);
  const auto x_gpu = mpx::to_device(x);
  auto step = device_step(5);
  const mpx::DropoutMask mask{0.5f, 1, 2, step.data(), 0};
  mpx::Tensor<float, mpx::Cuda> first(x.shape());
  mpx::Tensor<float, mpx::Cuda> second(x.shape());
  mpx::Tensor<float, mpx::Cuda> third(x.shape());
  // The same launch arguments three times; between them the device advances the count, and the host
  // writes it back to 5. Nothing waits in between.
  mpx::cuda::dropout(x_gpu, first, mask);
  mpx::cuda::single_thread(Increment{}, step.data());
  mpx::cuda::dropout(x_gpu, second, mask);
  const std::int64_t five[] = {5};
  step.upload(std::span<const std::int64_t>{five});
  mpx::cuda::dropout(x_gpu, third, mask);

  const std::int64_t host_five = 5;
  const std::int64_t host_six = 6;
  mpx::Tensor<float> expect5(x.shape());
  mpx::Tensor<float> expect6(x.shape());
  mpx::cpu::dropout(x, expect5, mpx::DropoutMask{0.5f, 1, 2, &host_five, 0});
  mpx::cpu::dropout(x, expect6, mpx::DropoutMask{0.5f, 1, 2, &host_six, 0});
  CHECK(same_tensor_bits(mpx::to_host(first), expect5, "step 5"));
  CHECK(same_tensor_bits(mpx::to_host(second), expect6, "step 6, advanced on the device"));
  CHECK(same_tensor_bits(mpx::to_host(third), expect5, "step 5 again"));
  CHECK_FALSE(same_tensor_bits(expect5, expect6, "steps 5 and 6 differ"));

  // A step count in host memory cannot be read by the kernel.
  CHECK_THROWS_AS(mpx::cuda::dropout(x_gpu, first, mpx::DropoutMask{0.5f, 1, 2, &host_five, 0}),
                  mpx::invalid_argument);
}

TEST_CASE("nn::Dropout on Cuda equals nn::Dropout on Host, bound or counting, forward and backward",
          "[cuda][dropout]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  std::mt19937 rng(43);
  const auto x = random_host<T>(mpx::Shape{4, 9, 33}, rng, 0.5, 1.5);
  const auto dy = random_host<T>(x.shape(), rng, -1.0, 1.0);
  const auto x_gpu = mpx::to_device(x);
  const auto dy_gpu = mpx::to_device(dy);
  for (const bool bound : {true, false}) {
    CAPTURE(bound);
    mpx::nn::Dropout<P> cpu(0.2f);
    mpx::nn::Dropout<P, mpx::Cuda> gpu(0.2f);
    cpu.initialize(3, 17);
    gpu.initialize(3, 17);
    std::int64_t host_step = 9;
    const auto step = device_step(9);
    if (bound) {
      cpu.bind_step(mpx::nn::StepKey{&host_step, 2});
      gpu.bind_step(mpx::nn::StepKey{step.data(), 2});
    }
    for (int repeat = 0; repeat < 2; ++repeat) {
      CAPTURE(repeat);
      const auto& y_cpu = cpu.forward(x);
      const auto& y_gpu = gpu.forward(x_gpu);
      CHECK(same_tensor_bits(mpx::to_host(y_gpu), y_cpu, "layer forward"));
      const auto* dx_cpu = cpu.backward(dy, true);
      const auto* dx_gpu = gpu.backward(dy_gpu, true);
      CHECK(same_tensor_bits(mpx::to_host(*dx_gpu), *dx_cpu, "layer backward"));
    }
  }
  // Evaluation: the input itself on the GPU too.
  mpx::nn::Dropout<P, mpx::Cuda> evaluating(0.5f);
  evaluating.set_training(false);
  CHECK(&evaluating.forward(x_gpu) == &x_gpu);
}

namespace {

// A model with two dropouts on the GPU, trained by a Trainer (which binds its device step count).
using DropoutL = mpx::nn::layers<mpx::bf16_mixed, mpx::Cuda>;

auto make_dropout_model() {
  mpx::nn::Sequential model{DropoutL::linear(8, 32, mpx::nn::gelu), DropoutL::dropout(0.3f),
                            DropoutL::linear(32, 8), DropoutL::dropout(0.2f)};
  model.initialize(4);
  return model;
}

struct DropoutSetup {
  using Model = decltype(make_dropout_model());
  using Loss = decltype(DropoutL::mse_loss());
  Model model = make_dropout_model();
  Loss loss = DropoutL::mse_loss();
  mpx::optim::SGD<Model> optimizer{model, {.lr = 0.05}};
  mpx::Trainer<Model, Loss, mpx::optim::SGD<Model>> trainer{model, loss, optimizer};
};

std::vector<float> master_weights(auto& model) {
  std::vector<float> all;
  model.for_each_parameter([&](std::string_view, auto& p) {
    const auto host = mpx::to_host(p.master());
    for (std::int64_t i = 0; i < host.numel(); ++i) all.push_back(static_cast<float>(host[i]));
  });
  return all;
}

}  // namespace

TEST_CASE("a replayed CUDA graph of a step with dropout draws each step's masks, as eager steps do",
          "[cuda][dropout][graph]") {
  std::mt19937 rng(44);
  const auto x = mpx::to_device(random_host<float>(mpx::Shape{4, 6, 8}, rng, -1.0, 1.0));
  const auto y = mpx::to_device(random_host<float>(mpx::Shape{4, 6, 8}, rng, -1.0, 1.0));
  DropoutSetup eager;
  DropoutSetup graphed;
  graphed.trainer.capture_step(x, y);  // runs step 1 eagerly, captures step 2
  (void)eager.trainer.step(x, y);
  for (int s = 1; s < 12; ++s) {
    (void)eager.trainer.step(x, y);
    graphed.trainer.replay_step();
  }
  const auto replayed = graphed.trainer.read_result();
  const auto stepped = eager.trainer.read_result();
  CHECK(replayed.step == stepped.step);
  CHECK(replayed.loss == stepped.loss);
  CHECK(master_weights(graphed.model) == master_weights(eager.model));

  // The masks changed from step to step: the same weights at another step count give another loss.
  DropoutSetup other;
  DropoutSetup same;
  (void)other.trainer.step(x, y);
  other.trainer.set_steps(5);
  (void)same.trainer.step(x, y);
  CHECK(other.trainer.step(x, y).loss != same.trainer.step(x, y).loss);
}

}  // namespace MPX_UNITY_ID
}  // namespace
