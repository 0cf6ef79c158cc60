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
#include <string>

#include <mpx/backend/cuda/dropout.cuh>
#include <mpx/cuda.hpp>

#include "../support/mismatch_log.hpp"
#include "support.hpp"

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
      return "[" + std::to_string(i) + "] gpu " + std::to_string(to_double(gpu[i])) + " cpu " +
             std::to_string(to_double(cpu[i]));
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
