// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The step kernels of the CUDA backend against the CPU on the same inputs: unscale + finite check +
// squared norm over many tensors, the skip/clip decision, SGD and AdamW (bit for bit, fp32 masters
// with fp16/bf16 compute copies and stochastically rounded bf16 masters), and the scaler's update.
// main() is in numeric_cuda_test.cu and skips (exit 77) without a device.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <mpx/backend/cuda/gradient.cuh>
#include <mpx/backend/cuda/optimizer.cuh>
#include <mpx/backend/cuda/training_step.cuh>
#include <mpx/cuda.hpp>

namespace {

using mpx::Cuda;
using mpx::cuda::StepScalars;

template <mpx::Element T>
mpx::Tensor<T> random_host(std::int64_t count, std::mt19937& rng, float low = -1.0f, float high = 1.0f) {
  std::uniform_real_distribution<float> dist(low, high);
  mpx::Tensor<T> t(mpx::Shape{count});
  for (T& x : t.values()) x = static_cast<T>(dist(rng));
  return t;
}

template <class T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else {
    return std::isnan(static_cast<float>(x));
  }
}

// Equal bits, or both NaN: NaN payloads differ between x86 and the GPU and mean nothing here.
template <class T>
std::int64_t count_different(const mpx::Tensor<T>& a, const mpx::Tensor<T>& b) {
  REQUIRE(a.shape() == b.shape());
  std::int64_t different = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    const bool same =
        std::memcmp(&a.data()[i], &b.data()[i], sizeof(T)) == 0 || (is_nan(a[i]) && is_nan(b[i]));
    if (!same && ++different <= 3) UNSCOPED_INFO("element " << i << " differs");
  }
  return different;
}

template <class T>
void require_same(const mpx::Tensor<T>& cpu, const mpx::Tensor<T, Cuda>& gpu) {
  REQUIRE(count_different(cpu, mpx::to_host(gpu)) == 0);
}

// The step's scalars in device memory, from and back to the host.
mpx::cuda::DeviceArray<StepScalars> device_scalars(const StepScalars& values) {
  return mpx::cuda::DeviceArray<StepScalars>(std::span<const StepScalars>(&values, 1));
}

StepScalars host_scalars(const mpx::cuda::DeviceArray<StepScalars>& scalars) {
  return scalars.download()[0];
}

const std::vector<std::int64_t> odd_sizes = {1, 7, 1023, 4097};

// ---- unscale_and_inspect ------------------------------------------------------------------------

// The CPU trainer's pass: every gradient through cpu::unscale_and_inspect, sums added in order.
template <bool Scale, class G>
mpx::cpu::GradientStats cpu_pass(std::vector<mpx::Tensor<G>>& grads, G factor) {
  mpx::cpu::GradientStats total;
  for (auto& g : grads) total = total + mpx::cpu::unscale_and_inspect<Scale>(g, factor);
  return total;
}

template <bool Scale, class G>
void check_multi_tensor(std::vector<mpx::Tensor<G>> grads, float scale) {
  std::vector<mpx::Tensor<G, Cuda>> device;
  for (const auto& g : grads) device.push_back(mpx::to_device(g));
  std::vector<mpx::Tensor<G, Cuda>*> pointers;
  for (auto& g : device) pointers.push_back(&g);

  StepScalars start{};
  start.scaler.scale = scale;
  auto scalars = device_scalars(start);
  mpx::cuda::GradientWorkspace workspace;
  mpx::cuda::begin_step(scalars.data());
  mpx::cuda::unscale_and_inspect<Scale, G>(pointers, scalars.data(), workspace);
  const StepScalars found = host_scalars(scalars);

  const auto inverse = static_cast<G>(static_cast<float>(1.0 / static_cast<double>(scale)));
  const auto expected = cpu_pass<Scale>(grads, inverse);
  for (std::size_t t = 0; t < grads.size(); ++t) {
    CAPTURE(t);
    require_same(grads[t], device[t]);
  }
  CHECK((found.gradients_nonfinite == 0) == expected.finite);
  CAPTURE(found.sum_of_squares, expected.sum_of_squares);
  if (std::isfinite(expected.sum_of_squares)) {
    CHECK(std::fabs(found.sum_of_squares - expected.sum_of_squares) <= 1e-12 * expected.sum_of_squares);
  } else {
    CHECK(!std::isfinite(found.sum_of_squares));
  }
}

// ---- optimizers ---------------------------------------------------------------------------------

// One parameter's tensors on both devices.
template <class M, class C, class G>
struct Parameter {
  mpx::Tensor<M> master;
  mpx::Tensor<C> compute;
  mpx::Tensor<G> grad, state0, state1;
  mpx::Tensor<M, Cuda> d_master;
  mpx::Tensor<C, Cuda> d_compute;
  mpx::Tensor<G, Cuda> d_grad, d_state0, d_state1;

  Parameter(std::int64_t count, std::mt19937& rng)
      : master(random_host<M>(count, rng)),
        compute(random_host<C>(count, rng)),
        grad(random_host<G>(count, rng, -0.5f, 0.5f)),
        state0(random_host<G>(count, rng, -0.1f, 0.1f)),
        state1(random_host<G>(count, rng, 0.0f, 0.01f)),
        d_master(mpx::to_device(master)),
        d_compute(mpx::to_device(compute)),
        d_grad(mpx::to_device(grad)),
        d_state0(mpx::to_device(state0)),
        d_state1(mpx::to_device(state1)) {}

  void require_equal() const {
    require_same(master, d_master);
    require_same(compute, d_compute);
    require_same(state0, d_state0);
    require_same(state1, d_state1);
  }
};

const std::vector<mpx::SgdSettings> sgd_variants = {
    {.lr = 0.05},
    {.lr = 0.01, .weight_decay = 1e-2},
    {.lr = 0.01, .momentum = 0.9},
    {.lr = 0.02, .momentum = 0.9, .dampening = 0.25, .weight_decay = 1e-3},
    {.lr = 0.01, .momentum = 0.8, .weight_decay = 1e-4, .nesterov = true},
};

const std::vector<mpx::AdamWSettings> adamw_variants = {
    {},
    {.lr = 3e-4, .beta1 = 0.95, .beta2 = 0.99, .weight_decay = 0.1},
    {.lr = 1e-2, .beta1 = 0.6, .beta2 = 0.9999, .epsilon = 1e-6, .weight_decay = 0.0},  // lerp's other branch
};

// SGD through the CPU signature, two steps (the first sets the momentum buffer), against the CPU.
template <class M, class C, class G, class Rounding>
void check_sgd_host_api(bool with_compute, const Rounding& rounding) {
  std::mt19937 rng(7);
  for (const auto count : odd_sizes) {
    for (std::size_t v = 0; v < sgd_variants.size(); ++v) {
      CAPTURE(count, v, with_compute);
      const auto& s = sgd_variants[v];
      Parameter<M, C, G> p(count, rng);
      for (const bool first : {true, false}) {
        mpx::cpu::sgd_update(p.master, with_compute ? &p.compute : nullptr, p.grad,
                             s.momentum != 0.0 ? &p.state0 : nullptr, first, s, rounding);
        mpx::cuda::sgd_update(p.d_master, with_compute ? &p.d_compute : nullptr, p.d_grad,
                              s.momentum != 0.0 ? &p.d_state0 : nullptr, first, s, rounding);
        p.require_equal();
      }
    }
  }
}

template <class M, class C, class G, class Rounding>
void check_adamw_host_api(bool with_compute, const Rounding& rounding) {
  std::mt19937 rng(8);
  for (const auto count : odd_sizes) {
    for (std::size_t v = 0; v < adamw_variants.size(); ++v) {
      CAPTURE(count, v, with_compute);
      const auto& s = adamw_variants[v];
      Parameter<M, C, G> p(count, rng);
      for (const std::int64_t step : {1, 2, 1000, 123457}) {
        CAPTURE(step);
        mpx::cpu::adamw_update(p.master, with_compute ? &p.compute : nullptr, p.grad, p.state0, p.state1,
                               step, s, rounding);
        mpx::cuda::adamw_update(p.d_master, with_compute ? &p.d_compute : nullptr, p.d_grad, p.d_state0,
                                p.d_state1, step, s, rounding);
        p.require_equal();
      }
    }
  }
}

// The training step's form: lr, the update number and clipping from the device scalars. The CPU
// reference clips as the CPU trainer does (scale_in_place by Grad(coefficient)) and then updates.
struct StepCase {
  double lr;
  std::int64_t optimizer_step;
  bool clipped;
  double clip_coefficient;
};
const std::vector<StepCase> step_cases = {
    {0.03, 0, false, 1.0}, {0.007, 1, true, 0.37}, {0.02, 4, false, 1.0}, {0.001, 123456, true, 0.81}};

StepScalars scalars_for(const StepCase& c) {
  StepScalars s{};
  s.lr = c.lr;
  s.optimizer_step = c.optimizer_step;
  s.clipped = c.clipped ? 1 : 0;
  s.clip_coefficient = c.clip_coefficient;
  return s;
}

// The rounding the CPU applies for the device's rounding at update `update`.
template <class Rounding>
auto cpu_rounding(const Rounding& rounding, std::int64_t update) {
  if constexpr (std::is_same_v<Rounding, mpx::RoundStochasticPerUpdate>) {
    return rounding.at_update(update);
  } else {
    return rounding;
  }
}

template <class M, class C, class G, class Rounding>
void check_sgd_step_api(const Rounding& rounding) {
  std::mt19937 rng(9);
  for (const auto count : odd_sizes) {
    for (std::size_t v = 0; v < sgd_variants.size(); ++v) {
      auto s = sgd_variants[v];
      Parameter<M, C, G> p(count, rng);
      for (const auto& c : step_cases) {
        CAPTURE(count, v, c.optimizer_step);
        const auto before_grad = p.grad.clone();
        auto cpu_settings = s;
        cpu_settings.lr = c.lr;
        auto grad = p.grad.clone();
        if (c.clipped) mpx::cpu::scale_in_place(grad, static_cast<G>(c.clip_coefficient));
        mpx::cpu::sgd_update(p.master, &p.compute, grad, s.momentum != 0.0 ? &p.state0 : nullptr,
                             c.optimizer_step == 0, cpu_settings,
                             cpu_rounding(rounding, c.optimizer_step + 1));
        s.lr = 1e9;  // must not be read: the device's lr wins
        auto scalars = device_scalars(scalars_for(c));
        mpx::cuda::sgd_update(p.d_master, &p.d_compute, p.d_grad, s.momentum != 0.0 ? &p.d_state0 : nullptr,
                              s, rounding, scalars.data());
        p.require_equal();
        require_same(before_grad, p.d_grad);  // clipped in registers only
        s.lr = sgd_variants[v].lr;
      }
    }
  }
}

template <class M, class C, class G, class Rounding>
void check_adamw_step_api(const Rounding& rounding) {
  std::mt19937 rng(10);
  for (const auto count : odd_sizes) {
    for (std::size_t v = 0; v < adamw_variants.size(); ++v) {
      auto s = adamw_variants[v];
      Parameter<M, C, G> p(count, rng);
      for (const auto& c : step_cases) {
        CAPTURE(count, v, c.optimizer_step);
        auto cpu_settings = s;
        cpu_settings.lr = c.lr;
        auto grad = p.grad.clone();
        if (c.clipped) mpx::cpu::scale_in_place(grad, static_cast<G>(c.clip_coefficient));
        mpx::cpu::adamw_update(p.master, &p.compute, grad, p.state0, p.state1, c.optimizer_step + 1,
                               cpu_settings, cpu_rounding(rounding, c.optimizer_step + 1));
        s.lr = 1e9;  // must not be read
        auto scalars = device_scalars(scalars_for(c));
        mpx::cuda::adamw_update(p.d_master, &p.d_compute, p.d_grad, p.d_state0, p.d_state1, s, rounding,
                                scalars.data());
        p.require_equal();
        s.lr = adamw_variants[v].lr;
      }
    }
  }
}

}  // namespace

TEST_CASE("cuda::unscale_and_inspect over many tensors matches the CPU trainer's pass", "[cuda][step]") {
  std::mt19937 rng(1);
  // More than 64 tensors (several launches), sizes around the chunk (16384), empty ones among them.
  std::vector<std::int64_t> sizes = {1, 7, 1023, 4097, 0, 16384, 16385, 3 * 16384 + 5, 100000, 0};
  std::uniform_int_distribution<std::int64_t> small(1, 3000);
  for (int i = 0; i < 150; ++i) sizes.push_back(small(rng));
  const auto make = [&](float magnitude) {
    std::vector<mpx::Tensor<float>> grads;
    for (const auto n : sizes) grads.push_back(random_host<float>(n, rng, -magnitude, magnitude));
    return grads;
  };

  SECTION("scaled by the inverse of the device's loss scale") {
    check_multi_tensor<true>(make(3000.0f), 1024.0f);
  }
  SECTION("a scale whose inverse is not exact in fp32") {
    check_multi_tensor<true>(make(3000.0f), 3.0f);
  }
  SECTION("without scaling") {
    check_multi_tensor<false>(make(1.0f), 1024.0f);
  }
  SECTION("an inf is found") {
    auto grads = make(1.0f);
    grads[5][100] = std::numeric_limits<float>::infinity();
    check_multi_tensor<true>(std::move(grads), 65536.0f);
  }
  SECTION("a NaN is found, in the last launch") {
    auto grads = make(1.0f);
    grads.back()[0] = std::numeric_limits<float>::quiet_NaN();
    check_multi_tensor<true>(std::move(grads), 65536.0f);
  }
  SECTION("scaling overflows a finite gradient to inf") {
    auto grads = make(1.0f);
    grads[3][9] = 3e38f;
    check_multi_tensor<true>(std::move(grads), 0.5f);
  }
  SECTION("fp64 gradients whose squares overflow are still finite") {
    std::vector<mpx::Tensor<double>> grads;
    for (const auto n : {std::int64_t{7}, std::int64_t{4097}}) grads.push_back(random_host<double>(n, rng));
    grads[1][17] = 1e200;
    check_multi_tensor<true>(std::move(grads), 8.0f);
  }
  SECTION("no tensors, or only empty ones: nothing is added") {
    check_multi_tensor<true>(std::vector<mpx::Tensor<float>>{}, 2.0f);
    std::vector<mpx::Tensor<float>> empty;
    empty.push_back(mpx::Tensor<float>(mpx::Shape{0}));
    check_multi_tensor<true>(std::move(empty), 2.0f);
  }
}

TEST_CASE("cuda::unscale_and_inspect adds to the step's sum and keeps an earlier non-finite flag",
          "[cuda][step]") {
  std::mt19937 rng(2);
  auto a = mpx::to_device(random_host<float>(1000, rng));
  auto b = mpx::to_device(random_host<float>(5000, rng));
  mpx::Tensor<float, Cuda>* first[] = {&a};
  mpx::Tensor<float, Cuda>* second[] = {&b};
  StepScalars start{};
  start.scaler.scale = 1.0f;
  auto scalars = device_scalars(start);
  mpx::cuda::GradientWorkspace workspace;
  mpx::cuda::begin_step(scalars.data());
  mpx::cuda::unscale_and_inspect<false, float>(first, scalars.data(), workspace);
  const double after_first = host_scalars(scalars).sum_of_squares;
  mpx::cuda::unscale_and_inspect<false, float>(second, scalars.data(), workspace);
  const double both = host_scalars(scalars).sum_of_squares;
  auto a_host = mpx::to_host(a);
  auto b_host = mpx::to_host(b);
  const double expected = mpx::cpu::unscale_and_inspect<false>(a_host, 1.0f).sum_of_squares +
                          mpx::cpu::unscale_and_inspect<false>(b_host, 1.0f).sum_of_squares;
  CHECK(after_first > 0.0);
  CHECK(std::fabs(both - expected) <= 1e-12 * expected);

  auto with_inf = random_host<float>(10, rng);
  with_inf[3] = -std::numeric_limits<float>::infinity();
  auto c = mpx::to_device(with_inf);
  mpx::Tensor<float, Cuda>* third[] = {&c};
  mpx::cuda::begin_step(scalars.data());
  mpx::cuda::unscale_and_inspect<true, float>(third, scalars.data(), workspace);
  mpx::cuda::unscale_and_inspect<true, float>(second, scalars.data(), workspace);
  CHECK(host_scalars(scalars).gradients_nonfinite == 1);
  mpx::cuda::begin_step(scalars.data());  // the next step starts clean
  CHECK(host_scalars(scalars).gradients_nonfinite == 0);
}

TEST_CASE("cuda::unscale_and_inspect and scale_in_place with the CPU signatures match the CPU",
          "[cuda][step]") {
  std::mt19937 rng(3);
  for (const std::int64_t n : {0, 1, 7, 1023, 4097, 70000}) {
    CAPTURE(n);
    auto host = random_host<float>(n, rng, -100.0f, 100.0f);
    auto device = mpx::to_device(host);
    const auto cpu = mpx::cpu::unscale_and_inspect<true>(host, 0.125f);
    const auto gpu = mpx::cuda::unscale_and_inspect<true>(device, 0.125f);
    require_same(host, device);
    CHECK(gpu.finite == cpu.finite);
    CHECK(std::fabs(gpu.sum_of_squares - cpu.sum_of_squares) <= 1e-12 * cpu.sum_of_squares);

    mpx::cpu::scale_in_place(host, 0.3f);
    mpx::cuda::scale_in_place(device, 0.3f);
    require_same(host, device);

    auto half_host = random_host<Eigen::half>(n, rng);
    auto half_device = mpx::to_device(half_host);
    mpx::cpu::scale_in_place(half_host, Eigen::half(0.3f));
    mpx::cuda::scale_in_place(half_device, Eigen::half(0.3f));
    require_same(half_host, half_device);
  }
  auto with_nan = mpx::Tensor<float>(mpx::Shape{3});
  with_nan[1] = std::numeric_limits<float>::quiet_NaN();
  auto device = mpx::to_device(with_nan);
  const auto stats = mpx::cuda::unscale_and_inspect<false>(device, 1.0f);
  CHECK_FALSE(stats.finite);
  CHECK(std::isnan(stats.sum_of_squares));
}

TEST_CASE("cuda::finish_gradients skips and clips as the CPU trainer does", "[cuda][step]") {
  struct Case {
    const char* what;
    int gradients_nonfinite, inputs_nonfinite;
    double loss_sum, sum_of_squares, max_norm;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Case cases[] = {
      {"clean, no clipping", 0, 0, 1.5, 4.0, 0.0},
      {"clean, norm 2 clipped to 1", 0, 0, 1.5, 4.0, 1.0},
      {"clean, norm 2 below 5", 0, 0, 1.5, 4.0, 5.0},
      {"norm equal to the maximum: the epsilon clips", 0, 0, 1.5, 4.0, 2.0},
      {"inf gradient", 1, 0, 1.5, inf, 1.0},
      {"NaN input", 0, 1, 1.5, 4.0, 1.0},
      {"NaN loss", 0, 0, nan, 4.0, 1.0},
      {"inf loss", 0, 0, -inf, 4.0, 1.0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    StepScalars start{};
    start.gradients_nonfinite = c.gradients_nonfinite;
    start.inputs_nonfinite = c.inputs_nonfinite;
    start.loss_sum = c.loss_sum;
    start.sum_of_squares = c.sum_of_squares;
    start.clip_coefficient = 1.0;
    auto scalars = device_scalars(start);
    mpx::cuda::finish_gradients(scalars.data(), c.max_norm);
    const StepScalars found = host_scalars(scalars);

    // The CPU trainer's decision.
    const bool finite =
        c.gradients_nonfinite == 0 && c.inputs_nonfinite == 0 && std::isfinite(c.loss_sum / 2.0);
    const double coefficient = c.max_norm / (std::sqrt(c.sum_of_squares) + 1e-6);
    const bool clipped = finite && c.max_norm > 0.0 && coefficient < 1.0;
    CHECK(found.skip == (finite ? 0 : 1));
    CHECK(found.clipped == (clipped ? 1 : 0));
    CHECK(found.clip_coefficient == (clipped ? coefficient : 1.0));
  }
}

TEST_CASE("cuda::sgd_update with the CPU signature is bit-exact with cpu::sgd_update", "[cuda][step][sgd]") {
  SECTION("fp32 master, fp16 compute copy") {
    check_sgd_host_api<float, Eigen::half, float>(true, mpx::RoundNearest{});
  }
  SECTION("fp32 master, bf16 compute copy") {
    check_sgd_host_api<float, Eigen::bfloat16, float>(true, mpx::RoundNearest{});
  }
  SECTION("fp32 master, no compute copy") {
    check_sgd_host_api<float, float, float>(false, mpx::RoundNearest{});
  }
  SECTION("fp64") {
    check_sgd_host_api<double, double, double>(false, mpx::RoundNearest{});
  }
  SECTION("bf16 master rounded stochastically") {
    check_sgd_host_api<Eigen::bfloat16, Eigen::bfloat16, float>(false, mpx::RoundStochastic{0x5EED, 77});
  }
  SECTION("fp16 master rounded stochastically, bf16 compute copy") {
    check_sgd_host_api<Eigen::half, Eigen::bfloat16, float>(true, mpx::RoundStochastic{3, 1ull << 63});
  }
}

TEST_CASE("cuda::adamw_update with the CPU signature is bit-exact with cpu::adamw_update",
          "[cuda][step][adamw]") {
  SECTION("fp32 master, fp16 compute copy") {
    check_adamw_host_api<float, Eigen::half, float>(true, mpx::RoundNearest{});
  }
  SECTION("fp32 master, bf16 compute copy") {
    check_adamw_host_api<float, Eigen::bfloat16, float>(true, mpx::RoundNearest{});
  }
  SECTION("fp32 master, no compute copy") {
    check_adamw_host_api<float, float, float>(false, mpx::RoundNearest{});
  }
  SECTION("fp64") {
    check_adamw_host_api<double, double, double>(false, mpx::RoundNearest{});
  }
  SECTION("bf16 master rounded stochastically") {
    check_adamw_host_api<Eigen::bfloat16, Eigen::bfloat16, float>(false, mpx::RoundStochastic{0x5EED, 77});
  }
}

TEST_CASE("cuda::sgd_update and adamw_update read lr, the update number and clipping from the device",
          "[cuda][step]") {
  SECTION("SGD, fp32 master, bf16 compute copy") {
    check_sgd_step_api<float, Eigen::bfloat16, float>(mpx::RoundNearest{});
  }
  SECTION("SGD, bf16 master with per-update stochastic rounding") {
    check_sgd_step_api<Eigen::bfloat16, Eigen::bfloat16, float>(mpx::RoundStochasticPerUpdate{0xABC, 5});
  }
  SECTION("AdamW, fp32 master, fp16 compute copy") {
    check_adamw_step_api<float, Eigen::half, float>(mpx::RoundNearest{});
  }
  SECTION("AdamW, bf16 master with per-update stochastic rounding") {
    check_adamw_step_api<Eigen::bfloat16, Eigen::bfloat16, float>(mpx::RoundStochasticPerUpdate{0xABC, 5});
  }
  SECTION("AdamW, bf16 master with a fixed stochastic stream") {
    check_adamw_step_api<Eigen::bfloat16, Eigen::bfloat16, float>(mpx::RoundStochastic{0xABC, 99});
  }
}

TEST_CASE("A skipped step leaves master, compute copy and optimizer state bit-unchanged", "[cuda][step]") {
  std::mt19937 rng(11);
  StepScalars skipped{};
  skipped.skip = 1;
  skipped.lr = 0.1;
  skipped.optimizer_step = 3;
  auto scalars = device_scalars(skipped);
  for (const auto count : odd_sizes) {
    CAPTURE(count);
    Parameter<float, Eigen::bfloat16, float> p(count, rng);
    auto nan_grad = mpx::Tensor<float>(mpx::Shape{count});
    for (float& g : nan_grad.values()) g = std::numeric_limits<float>::quiet_NaN();
    p.d_grad = mpx::to_device(nan_grad);  // even NaN gradients change nothing
    mpx::cuda::sgd_update(p.d_master, &p.d_compute, p.d_grad, &p.d_state0,
                          mpx::SgdSettings{.lr = 0.1, .momentum = 0.9}, mpx::RoundNearest{}, scalars.data());
    mpx::cuda::adamw_update(p.d_master, &p.d_compute, p.d_grad, p.d_state0, p.d_state1, mpx::AdamWSettings{},
                            mpx::RoundNearest{}, scalars.data());
    p.require_equal();  // the host copies were never updated
  }
}

TEST_CASE("cuda::sgd_update and adamw_update reject mismatched shapes, naming the function", "[cuda][step]") {
  mpx::Tensor<float, Cuda> master(mpx::Shape{4}), grad(mpx::Shape{5}), state(mpx::Shape{4});
  mpx::Tensor<float, Cuda>* const no_tensor = nullptr;
  CHECK_THROWS_WITH(mpx::cuda::sgd_update(master, no_tensor, grad, no_tensor, true, mpx::SgdSettings{}),
                    Catch::Matchers::Contains("mpx::cuda::sgd_update"));
  CHECK_THROWS_WITH(mpx::cuda::adamw_update(master, no_tensor, grad, state, state, 1, mpx::AdamWSettings{}),
                    Catch::Matchers::Contains("mpx::cuda::adamw_update"));
  CHECK_THROWS_AS(
      mpx::cuda::sgd_update(master, no_tensor, state, no_tensor, true, mpx::SgdSettings{.momentum = 0.9}),
      mpx::invalid_argument);
  CHECK_THROWS_AS(mpx::cuda::sgd_update(master, no_tensor, state, no_tensor, mpx::SgdSettings{},
                                        mpx::RoundNearest{}, nullptr),
                  mpx::invalid_argument);
}

TEST_CASE("begin_step, end_step and set_learning_rate follow LossScaler step by step", "[cuda][step]") {
  // Overflow pattern (true: some gradient is inf) long enough to grow, back off and use hysteresis.
  const std::vector<bool> found_inf = {false, false, false, true, false, true, true,  false, false, false,
                                       false, false, false, true, true,  true, false, false, false, false};
  const auto run = [&](const mpx::DynamicLossScaling::Options& options) {
    mpx::LossScaler<mpx::DynamicLossScaling> reference(options);
    StepScalars start{};
    start.scaler = reference.state();
    auto scalars = device_scalars(start);
    std::int64_t updates = 0;
    for (std::size_t step = 0; step < found_inf.size(); ++step) {
      CAPTURE(step);
      const float scale_before = reference.scale();
      mpx::cuda::begin_step(scalars.data());
      mpx::cuda::set_learning_rate(scalars.data(), 0.001 * static_cast<double>(step + 1));
      if (found_inf[step]) {
        const int one = 1;
        auto* flag = &scalars.data()->gradients_nonfinite;
        MPX_CUDA_CHECK(
            cudaMemcpyAsync(flag, &one, sizeof one, cudaMemcpyHostToDevice, mpx::cuda_context().stream()));
      }
      mpx::cuda::finish_gradients(scalars.data(), 0.0);
      mpx::cuda::end_step<mpx::DynamicLossScaling>(scalars.data(), options);
      reference.update(found_inf[step]);
      if (!found_inf[step]) ++updates;
      const StepScalars found = host_scalars(scalars);
      CHECK(found.scaler == reference.state());
      CHECK(found.loss_scale == scale_before);
      CHECK(found.step == static_cast<std::int64_t>(step + 1));
      CHECK(found.optimizer_step == updates);
      CHECK(found.skip == (found_inf[step] ? 1 : 0));
      CHECK(found.lr == 0.001 * static_cast<double>(step + 1));
    }
  };
  SECTION("growth_interval 3") {
    run({.init_scale = 1024.0f, .growth_interval = 3});
  }
  SECTION("growth_interval 3, hysteresis 2") {
    run({.init_scale = 1024.0f, .growth_interval = 3, .hysteresis = 2});
  }
  SECTION("min and max scale") {
    run({.init_scale = 1024.0f, .growth_interval = 3, .min_scale = 512.0f, .max_scale = 2048.0f});
  }
  // Factors fp32 cannot hold: the device forms float(double(scale) * factor) as the host does, so
  // 3 backed off by 0.3 is float(0.9), not 3 * 0.3f, and 1.1's growths stay on torch's trajectory.
  SECTION("double factors 1.1 / 0.3") {
    run({.init_scale = 3.0f, .growth_factor = 1.1, .backoff_factor = 0.3, .growth_interval = 3});
  }
  SECTION("double factors 1.1 / 0.9, growth_interval 1") {
    run({.init_scale = 1000.0f, .growth_factor = 1.1, .backoff_factor = 0.9, .growth_interval = 1});
  }
}

TEST_CASE("end_step under static and no loss scaling only counts", "[cuda][step]") {
  StepScalars start{};
  start.scaler.scale = 128.0f;
  auto scalars = device_scalars(start);
  mpx::cuda::begin_step(scalars.data());
  mpx::cuda::end_step<mpx::StaticLossScaling>(scalars.data(), {.scale = 128.0f});
  mpx::cuda::begin_step(scalars.data());
  mpx::cuda::end_step<mpx::NoLossScaling>(scalars.data(), {});
  const StepScalars found = host_scalars(scalars);
  CHECK(found.scaler.scale == 128.0f);
  CHECK(found.scaler.steps_taken == 2);
  CHECK(found.optimizer_step == 2);
  CHECK(found.step == 2);
}
