// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The weight average (EMA) on the GPU: the multi-tensor update and the decay schedule give the CPU's
// bits; a skipped step changes nothing; a trainer's eager and CUDA-graph steps update the average on
// the device as diffusers' formula does from the GPU's own weights, bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/cuda.hpp>

#include "support.hpp"

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

template <class T>
bool same_bytes(const mpx::Tensor<T>& a, const mpx::Tensor<T>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// Averages and master weights of one type combination, on the host and on the device.
template <class Acc, class M>
struct Pairs {
  std::vector<mpx::Tensor<Acc>> host_average;
  std::vector<mpx::Tensor<M>> host_master;
  std::vector<mpx::Tensor<Acc, mpx::Cuda>> device_average;
  std::vector<mpx::Tensor<M, mpx::Cuda>> device_master;

  Pairs(const std::vector<std::int64_t>& sizes, std::mt19937& rng) {
    for (const std::int64_t n : sizes) {
      host_average.push_back(mpx_test::random_host<Acc>(mpx::Shape{n}, rng));
      host_master.push_back(mpx_test::random_host<M>(mpx::Shape{n}, rng));
      device_average.push_back(mpx::to<mpx::Cuda>(host_average.back()));
      device_master.push_back(mpx::to<mpx::Cuda>(host_master.back()));
    }
  }
  template <class HostUpdates, class DeviceUpdates>
  void add(HostUpdates& host, DeviceUpdates& device) {
    for (std::size_t i = 0; i < host_average.size(); ++i) {
      host.add(host_average[i], host_master[i]);
      device.add(device_average[i], device_master[i]);
    }
  }
  bool device_equals_host() const {
    bool same = true;
    for (std::size_t i = 0; i < host_average.size(); ++i)
      same = same && same_bytes(mpx::to<mpx::Host>(device_average[i]), host_average[i]);
    return same;
  }
};

}  // namespace

TEST_CASE("the GPU's weight average update and decay schedule give the CPU's bits",
          "[cuda][weight_average]") {
  std::mt19937 rng(5);
  // Sizes across chunk (4096) boundaries, and more fp32 tensors than one launch's list takes.
  std::vector<std::int64_t> many(130, 33);
  many.insert(many.end(), {1, 4095, 4096, 4097, 20000});
  Pairs<float, float> fp32(many, rng);
  Pairs<float, Eigen::bfloat16> bf16_masters({7, 5000}, rng);
  Pairs<double, double> fp64({3, 9000}, rng);

  for (const double decay : {0.9999, 0.3, 0.0, 1.0}) {
    CAPTURE(decay);
    for (const int skip : {0, 1}) {
      CAPTURE(skip);
      const mpx::UpdateControl control{.skip = skip};
      const mpx::WeightAverageControl state{.updates = 4, .decay = decay};
      mpx::DeviceValue<mpx::UpdateControl, mpx::Cuda> device_control;
      mpx::DeviceValue<mpx::WeightAverageControl, mpx::Cuda> device_state;
      device_control.write(control);
      device_state.write(state);
      auto host = mpx::cpu::weight_average_updates(&control, &state);
      auto device = mpx::cuda::weight_average_updates(device_control.get(), device_state.get());
      const auto before = mpx::to<mpx::Host>(fp32.device_average.back());
      fp32.add(host, device);
      bf16_masters.add(host, device);
      fp64.add(host, device);
      host.queue();
      device.queue();
      CHECK(fp32.device_equals_host());
      CHECK(bf16_masters.device_equals_host());
      CHECK(fp64.device_equals_host());
      const bool unchanged = same_bytes(mpx::to<mpx::Host>(fp32.device_average.back()), before);
      CHECK(unchanged == (skip != 0 || decay == 1.0));
    }
  }

  // The decay schedule and its count, derived in one device thread, as on the host.
  for (const bool warmup : {false, true}) {
    const mpx::WeightAverageOptions options{.decay = 0.9999, .warmup = warmup};
    mpx::DeviceValue<mpx::UpdateControl, mpx::Cuda> device_control;
    mpx::DeviceValue<mpx::WeightAverageControl, mpx::Cuda> device_state;
    device_control.write(mpx::UpdateControl{});
    device_state.write(mpx::WeightAverageControl{});
    mpx::WeightAverageControl host_state;
    const mpx::UpdateControl control{};
    for (int u = 0; u < 200; ++u) {
      const mpx::PrepareWeightAverage prepare{options, device_state.get()};
      mpx::cuda::single_thread(prepare, static_cast<const mpx::UpdateControl*>(device_control.get()));
      mpx::PrepareWeightAverage{options, &host_state}(control);
      const mpx::WeightAverageControl read = device_state.read();
      REQUIRE(read.updates == host_state.updates);
      REQUIRE(std::memcmp(&read.decay, &host_state.decay, sizeof(double)) == 0);
    }
    CHECK(host_state.updates == 200);
  }
}

TEST_CASE("a trainer's eager and CUDA-graph steps update the weight average on the device, skips included",
          "[cuda][trainer][graph][weight_average]") {
  using P = mpx::bf16_mixed;
  using namespace mpx::nn;
  const auto make_model = [] {
    Sequential model{Linear<P, Activation::ReLU, mpx::Cuda>(16, 64),
                     Linear<P, Activation::None, mpx::Cuda>(64, 4)};
    model.initialize(2026);
    return model;
  };
  auto eager_model = make_model();
  auto graphed_model = make_model();
  SoftmaxCrossEntropy<P, mpx::Cuda> eager_loss, graphed_loss;
  mpx::optim::AdamW eager_optimizer(eager_model, {.lr = 1e-2});
  mpx::optim::AdamW graphed_optimizer(graphed_model, {.lr = 1e-2});
  mpx::Trainer eager(eager_model, eager_loss, eager_optimizer);
  mpx::Trainer graphed(graphed_model, graphed_loss, graphed_optimizer);
  const mpx::WeightAverageOptions options{.decay = 0.95, .warmup = true};
  auto& eager_average = eager.keep_weight_average(options);
  auto& graphed_average = graphed.keep_weight_average(options);

  // Batches on the device; batch 3 holds an inf (its step is skipped).
  std::mt19937 rng(3);
  std::vector<mpx::Tensor<float, mpx::Cuda>> inputs;
  std::vector<mpx::Tensor<std::int32_t, mpx::Cuda>> labels;
  for (int b = 0; b < 8; ++b) {
    auto x = mpx_test::random_host<float>(mpx::Shape{32, 16}, rng);
    if (b == 3) x[5] = std::numeric_limits<float>::infinity();
    mpx::Tensor<std::int32_t> y(mpx::Shape{32});
    for (std::int64_t i = 0; i < 32; ++i) y[i] = static_cast<std::int32_t>((i * 5 + b) % 4);
    inputs.push_back(mpx::to<mpx::Cuda>(x));
    labels.push_back(mpx::to<mpx::Cuda>(y));
  }

  // The reference: diffusers' formula on the host, from the GPU's weights after each step.
  std::vector<std::vector<float>> reference;
  eager_model.for_each_parameter([&](std::string_view, auto& p) {
    const auto w = mpx::to<mpx::Host>(p.master());
    reference.emplace_back(w.values().begin(), w.values().end());
  });
  std::int64_t taken = 0;

  auto x = inputs[0].clone();
  auto y = labels[0].clone();
  graphed.capture_step(x, y);  // runs step 1 eagerly, then records the step
  for (int b = 0; b < 8; ++b) {
    CAPTURE(b);
    const mpx::StepResult result =
        eager.step(inputs[static_cast<std::size_t>(b)], labels[static_cast<std::size_t>(b)]);
    CHECK(result.stepped == (b != 3));
    if (b > 0) {
      mpx::copy(x, inputs[static_cast<std::size_t>(b)]);
      mpx::copy(y, labels[static_cast<std::size_t>(b)]);
      graphed.replay_step();
    }
    if (result.stepped) {
      const double decay = taken == 0 ? 0.0 : std::min((1.0 + taken) / (10.0 + taken), options.decay);
      const auto factor = static_cast<float>(1.0 - decay);
      std::size_t index = 0;
      eager_model.for_each_parameter([&](std::string_view, auto& p) {
        const auto w = mpx::to<mpx::Host>(p.master());
        std::vector<float>& s = reference[index++];
        for (std::size_t i = 0; i < s.size(); ++i) {
          const float difference = s[i] - w[static_cast<std::int64_t>(i)];
          const float product = factor * difference;
          s[i] = s[i] - product;
        }
      });
      ++taken;
    }
    std::size_t index = 0;
    bool same = true;
    eager_average.for_each([&](std::string_view, const mpx::Tensor<float, mpx::Cuda>& t) {
      const auto host = mpx::to<mpx::Host>(t);
      same = same && std::memcmp(host.data(), reference[index++].data(), host.size_bytes()) == 0;
    });
    CHECK(same);
    CHECK(eager_average.updates() == taken);
  }
  CHECK(graphed.read_result().step == 8);
  CHECK(graphed_average.updates() == taken);
  CHECK(graphed_average.last_decay() == eager_average.last_decay());
  std::size_t index = 0;
  std::vector<mpx::Tensor<float>> eager_tensors;
  eager_average.for_each(
      [&](std::string_view, const auto& t) { eager_tensors.push_back(mpx::to<mpx::Host>(t)); });
  bool same = true;
  graphed_average.for_each([&](std::string_view, const auto& t) {
    same = same && same_bytes(mpx::to<mpx::Host>(t), eager_tensors[index++]);
  });
  CHECK(same);
  CHECK(index == eager_tensors.size());
}

}  // namespace MPX_UNITY_ID
}  // namespace
