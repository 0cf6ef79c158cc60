// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The training step on the GPU against the same step on the CPU. The step's bookkeeping
// (`BeginStep`, `FinishGradients`, `EndStep`, `StoreHostOwned`; train/step_scalars.hpp) is one
// host-and-device body: each test runs it in one device thread (`cuda::single_thread`) and on a
// host `StepScalars` in place, and requires the same fields bit for bit. The kernels are checked
// against the CPU backend's forms: unscale + finite check + squared norm over many tensors, SGD and
// AdamW driven by an `UpdateControl` (bit for bit, fp32 masters with fp16/bf16 compute copies and
// stochastically rounded bf16 masters), and the scaler's trajectory against `LossScaler`.
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
#include <mpx/backend/cuda/launch.cuh>
#include <mpx/backend/cuda/optimizer.cuh>
#include <mpx/backend/optimizer_math.hpp>
#include <mpx/backend/update_control.hpp>
#include <mpx/cuda.hpp>
#include <mpx/train/step_scalars.hpp>

#include "support.hpp"

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Cuda;
using mpx::StepScalars;
using mpx::UpdateControl;

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

// One step's scalars on both devices: the GPU's in device memory, as the CUDA step keeps them, and
// the CPU's on the host, as the CPU step keeps them.
struct BothScalars {
  explicit BothScalars(const StepScalars& start) : device(device_scalars(start)), host(start) {}

  // Applies a step functor to both: in one device thread, as the CUDA step runs it, and in place on
  // the host, as the CPU step runs it.
  template <class F>
  void apply(const F& f) {
    mpx::cuda::single_thread(f, device.data());
    f(&host);
  }

  [[nodiscard]] StepScalars on_device() const { return host_scalars(device); }

  mpx::cuda::DeviceArray<StepScalars> device;
  StepScalars host;
};

// Every field of the two devices' scalars, bit for bit (a NaN loss sum matches any NaN).
void require_same_scalars(const StepScalars& cpu, const StepScalars& gpu) {
  using mpx_test::same_bits_or_both_nan;
  CHECK(gpu.scaler == cpu.scaler);
  CHECK(same_bits_or_both_nan(gpu.scaler.scale, cpu.scaler.scale));
  CHECK(same_bits_or_both_nan(gpu.update.lr, cpu.update.lr));
  CHECK(same_bits_or_both_nan(gpu.update.clip_coefficient, cpu.update.clip_coefficient));
  CHECK(gpu.update.optimizer_step == cpu.update.optimizer_step);
  CHECK(gpu.updates == cpu.updates);
  CHECK(same_bits_or_both_nan(gpu.update.bias_correction1, cpu.update.bias_correction1));
  CHECK(same_bits_or_both_nan(gpu.update.bias_correction2, cpu.update.bias_correction2));
  CHECK(gpu.update.clipped == cpu.update.clipped);
  CHECK(gpu.update.skip == cpu.update.skip);
  CHECK(same_bits_or_both_nan(gpu.loss_sum, cpu.loss_sum));
  CHECK(same_bits_or_both_nan(gpu.sum_of_squares, cpu.sum_of_squares));
  CHECK(gpu.step == cpu.step);
  CHECK(same_bits_or_both_nan(gpu.loss_scale, cpu.loss_scale));
  CHECK(gpu.gradients_nonfinite == cpu.gradients_nonfinite);
  CHECK(gpu.inputs_nonfinite == cpu.inputs_nonfinite);
}

// Raises the step's gradient flag, as an inf found by unscale_and_inspect would (a step functor of
// the test's own, on both devices like the library's).
struct RaiseGradientsNonfinite {
  MPX_HOST_DEVICE void operator()(StepScalars* s) const { s->gradients_nonfinite = 1; }
};

const std::vector<std::int64_t> odd_sizes = {1, 7, 1023, 4097};

// ---- unscale_and_inspect ------------------------------------------------------------------------

// One pass of each backend's multi-tensor unscale_and_inspect over the same gradients, into the
// step's scalars of its device (the scale read from there, the sum added and the flag raised there).
template <bool Scale, class G>
void unscale_and_inspect_both(BothScalars& scalars, std::span<mpx::Tensor<G, Cuda>* const> on_device,
                              std::span<mpx::Tensor<G>* const> on_host,
                              mpx::cuda::GradientWorkspace& workspace, std::int64_t micro_batches = 1) {
  StepScalars* const d = scalars.device.data();
  mpx::cuda::unscale_and_inspect<Scale, G>(on_device, &d->scaler.scale, micro_batches, &d->sum_of_squares,
                                           &d->gradients_nonfinite, workspace);
  mpx::cpu::GradientWorkspace host_workspace;
  StepScalars& h = scalars.host;
  mpx::cpu::unscale_and_inspect<Scale, G>(on_host, &h.scaler.scale, micro_batches, &h.sum_of_squares,
                                          &h.gradients_nonfinite, host_workspace);
}

// The sums of squares agree to rounding (the GPU adds in another fixed order), or are both not finite.
void check_same_sum(double gpu, double cpu) {
  CAPTURE(gpu, cpu);
  if (std::isfinite(cpu)) {
    CHECK(std::fabs(gpu - cpu) <= 1e-12 * cpu);
  } else {
    CHECK(!std::isfinite(gpu));
  }
}

template <bool Scale, class G>
void check_multi_tensor(std::vector<mpx::Tensor<G>> grads, float scale, std::int64_t micro_batches = 1) {
  std::vector<mpx::Tensor<G, Cuda>> device;
  for (const auto& g : grads) device.push_back(mpx::to_device(g));
  std::vector<mpx::Tensor<G, Cuda>*> device_pointers;
  for (auto& g : device) device_pointers.push_back(&g);
  std::vector<mpx::Tensor<G>*> host_pointers;
  for (auto& g : grads) host_pointers.push_back(&g);

  StepScalars start{};
  start.scaler.scale = scale;
  BothScalars scalars(start);
  mpx::cuda::GradientWorkspace workspace;
  scalars.apply(mpx::BeginStep{});
  unscale_and_inspect_both<Scale, G>(scalars, device_pointers, host_pointers, workspace, micro_batches);
  const StepScalars found = scalars.on_device();
  const StepScalars& expected = scalars.host;

  for (std::size_t t = 0; t < grads.size(); ++t) {
    CAPTURE(t);
    require_same(grads[t], device[t]);
  }
  CHECK(found.gradients_nonfinite == expected.gradients_nonfinite);
  check_same_sum(found.sum_of_squares, expected.sum_of_squares);
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

// A host copy of a parameter's weights and optimizer state, updated another way.
template <class M, class C, class G>
struct HostCopy {
  mpx::Tensor<M> master;
  mpx::Tensor<C> compute;
  mpx::Tensor<G> state0, state1;

  explicit HostCopy(const Parameter<M, C, G>& p)
      : master(p.master.clone()),
        compute(p.compute.clone()),
        state0(p.state0.clone()),
        state1(p.state1.clone()) {}

  void require_equal(const Parameter<M, C, G>& p) const {
    REQUIRE(count_different(master, p.master) == 0);
    REQUIRE(count_different(compute, p.compute) == 0);
    REQUIRE(count_different(state0, p.state0) == 0);
    REQUIRE(count_different(state1, p.state1) == 0);
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

// The training step's form: lr, the update number and clipping from the step's `UpdateControl`.
// The device reads it from device memory, the CPU from the host; both must give the same bits, and
// the same bits as an explicit reference: the gradient clipped first (scale_in_place by
// Grad(coefficient)), then the host-value signature at the control's lr and update number.
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
  s.update.lr = c.lr;
  s.update.optimizer_step = c.optimizer_step;
  s.update.clipped = c.clipped ? 1 : 0;
  s.update.clip_coefficient = c.clip_coefficient;
  return s;
}

template <class M, class C, class G, class Rounding>
void check_sgd_step_api(const Rounding& rounding) {
  std::mt19937 rng(9);
  for (const auto count : odd_sizes) {
    for (std::size_t v = 0; v < sgd_variants.size(); ++v) {
      auto s = sgd_variants[v];
      const bool momentum = s.momentum != 0.0;
      Parameter<M, C, G> p(count, rng);
      HostCopy<M, C, G> reference(p);
      for (const auto& c : step_cases) {
        CAPTURE(count, v, c.optimizer_step);
        const auto before_grad = p.grad.clone();
        auto reference_settings = s;
        reference_settings.lr = c.lr;
        auto grad = p.grad.clone();
        if (c.clipped) mpx::cpu::scale_in_place(grad, static_cast<G>(c.clip_coefficient));
        mpx::cpu::sgd_update(reference.master, &reference.compute, grad,
                             momentum ? &reference.state0 : nullptr, c.optimizer_step == 0,
                             reference_settings, mpx::rounding_at(rounding, c.optimizer_step + 1));

        s.lr = 1e9;  // must not be read: the control's lr wins
        const StepScalars host = scalars_for(c);
        auto device = device_scalars(host);
        mpx::cpu::sgd_update(p.master, &p.compute, p.grad, momentum ? &p.state0 : nullptr, s, rounding,
                             &host.update);
        mpx::cuda::sgd_update(p.d_master, &p.d_compute, p.d_grad, momentum ? &p.d_state0 : nullptr, s,
                              rounding, &device.data()->update);
        p.require_equal();
        reference.require_equal(p);
        REQUIRE(count_different(before_grad, p.grad) == 0);  // clipped in registers only
        require_same(before_grad, p.d_grad);
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
      HostCopy<M, C, G> reference(p);
      for (const auto& c : step_cases) {
        CAPTURE(count, v, c.optimizer_step);
        const auto before_grad = p.grad.clone();
        auto reference_settings = s;
        reference_settings.lr = c.lr;
        auto grad = p.grad.clone();
        if (c.clipped) mpx::cpu::scale_in_place(grad, static_cast<G>(c.clip_coefficient));
        mpx::cpu::adamw_update(reference.master, &reference.compute, grad, reference.state0, reference.state1,
                               c.optimizer_step + 1, reference_settings,
                               mpx::rounding_at(rounding, c.optimizer_step + 1));

        s.lr = 1e9;  // must not be read
        const StepScalars host = scalars_for(c);
        auto device = device_scalars(host);
        mpx::cpu::adamw_update(p.master, &p.compute, p.grad, p.state0, p.state1, s, rounding, &host.update);
        mpx::cuda::adamw_update(p.d_master, &p.d_compute, p.d_grad, p.d_state0, p.d_state1, s, rounding,
                                &device.data()->update);
        p.require_equal();
        reference.require_equal(p);
        REQUIRE(count_different(before_grad, p.grad) == 0);  // clipped in registers only
        require_same(before_grad, p.d_grad);
        s.lr = adamw_variants[v].lr;
      }
    }
  }
}

}  // namespace

TEST_CASE("cuda::unscale_and_inspect over many tensors matches cpu::unscale_and_inspect", "[cuda][step]") {
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

  SECTION("scaled by the inverse of the step's loss scale") {
    check_multi_tensor<true>(make(3000.0f), 1024.0f);
  }
  SECTION("a scale whose inverse is not exact in fp32") {
    check_multi_tensor<true>(make(3000.0f), 3.0f);
  }
  SECTION("without scaling") {
    check_multi_tensor<false>(make(1.0f), 1024.0f);
  }
  SECTION("the sum over 3 micro-batches divided by 3, then unscaled: two roundings, as on the CPU") {
    check_multi_tensor<true>(make(3000.0f), 3.0f, 3);
  }
  SECTION("the sum over 3 micro-batches divided by 3, without scaling") {
    check_multi_tensor<false>(make(1.0f), 1024.0f, 3);
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

TEST_CASE(
    "cuda::unscale_and_inspect adds to the step's sum and keeps an earlier non-finite flag, as the CPU does",
    "[cuda][step]") {
  std::mt19937 rng(2);
  auto a_host = random_host<float>(1000, rng);
  auto b_host = random_host<float>(5000, rng);
  auto a = mpx::to_device(a_host);
  auto b = mpx::to_device(b_host);
  mpx::Tensor<float, Cuda>* first[] = {&a};
  mpx::Tensor<float, Cuda>* second[] = {&b};
  mpx::Tensor<float>* first_host[] = {&a_host};
  mpx::Tensor<float>* second_host[] = {&b_host};
  StepScalars start{};
  start.scaler.scale = 1.0f;
  BothScalars scalars(start);
  mpx::cuda::GradientWorkspace workspace;
  scalars.apply(mpx::BeginStep{});
  unscale_and_inspect_both<false, float>(scalars, first, first_host, workspace);
  const double after_first = scalars.on_device().sum_of_squares;
  const double expected_first = scalars.host.sum_of_squares;
  unscale_and_inspect_both<false, float>(scalars, second, second_host, workspace);
  const double both = scalars.on_device().sum_of_squares;
  const double expected_both = scalars.host.sum_of_squares;
  CHECK(after_first > 0.0);
  check_same_sum(after_first, expected_first);
  CHECK(both > after_first);
  check_same_sum(both, expected_both);
  CHECK(expected_both == mpx::cpu::unscale_and_inspect<false>(a_host, 1.0f).sum_of_squares +
                             mpx::cpu::unscale_and_inspect<false>(b_host, 1.0f).sum_of_squares);

  auto with_inf = random_host<float>(10, rng);
  with_inf[3] = -std::numeric_limits<float>::infinity();
  auto c = mpx::to_device(with_inf);
  mpx::Tensor<float, Cuda>* third[] = {&c};
  mpx::Tensor<float>* third_host[] = {&with_inf};
  scalars.apply(mpx::BeginStep{});
  unscale_and_inspect_both<true, float>(scalars, third, third_host, workspace);
  unscale_and_inspect_both<true, float>(scalars, second, second_host, workspace);
  CHECK(scalars.on_device().gradients_nonfinite == 1);
  CHECK(scalars.host.gradients_nonfinite == 1);
  scalars.apply(mpx::BeginStep{});  // the next step starts clean
  const StepScalars found = scalars.on_device();
  CHECK(found.gradients_nonfinite == 0);
  CHECK(found.sum_of_squares == 0.0);
  require_same_scalars(scalars.host, found);
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

TEST_CASE("FinishGradients skips and clips the same on the device and on the host", "[cuda][step]") {
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
      {"norm not exact in double", 0, 0, 1.5, 3.0, 1.5},
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
    start.update.clip_coefficient = 1.0;
    BothScalars scalars(start);
    scalars.apply(mpx::FinishGradients{c.max_norm});
    const StepScalars found = scalars.on_device();
    require_same_scalars(scalars.host, found);

    // The decision, written out: PyTorch's clip_grad_norm_ after GradScaler's skip.
    const bool finite =
        c.gradients_nonfinite == 0 && c.inputs_nonfinite == 0 && std::isfinite(c.loss_sum / 2.0);
    const double coefficient = c.max_norm / (std::sqrt(c.sum_of_squares) + 1e-6);
    const bool clipped = finite && c.max_norm > 0.0 && coefficient < 1.0;
    CHECK(found.update.skip == (finite ? 0 : 1));
    CHECK(found.update.clipped == (clipped ? 1 : 0));
    CHECK(found.update.clip_coefficient == (clipped ? coefficient : 1.0));
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

TEST_CASE(
    "sgd_update and adamw_update read lr, the update number and clipping from the UpdateControl, "
    "the same on the device and on the host",
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

TEST_CASE("A skipped step leaves master, compute copy and optimizer state bit-unchanged on both devices",
          "[cuda][step]") {
  std::mt19937 rng(11);
  StepScalars skipped{};
  skipped.update.skip = 1;
  skipped.update.lr = 0.1;
  skipped.update.optimizer_step = 3;
  auto scalars = device_scalars(skipped);
  const mpx::SgdSettings sgd{.lr = 0.1, .momentum = 0.9};
  const mpx::AdamWSettings adamw{};
  for (const auto count : odd_sizes) {
    CAPTURE(count);
    Parameter<float, Eigen::bfloat16, float> p(count, rng);
    const HostCopy<float, Eigen::bfloat16, float> before(p);
    auto nan_grad = mpx::Tensor<float>(mpx::Shape{count});
    for (float& g : nan_grad.values()) g = std::numeric_limits<float>::quiet_NaN();
    p.d_grad = mpx::to_device(nan_grad);  // even NaN gradients change nothing
    p.grad = std::move(nan_grad);
    mpx::cuda::sgd_update(p.d_master, &p.d_compute, p.d_grad, &p.d_state0, sgd, mpx::RoundNearest{},
                          &scalars.data()->update);
    mpx::cuda::adamw_update(p.d_master, &p.d_compute, p.d_grad, p.d_state0, p.d_state1, adamw,
                            mpx::RoundNearest{}, &scalars.data()->update);
    mpx::cpu::sgd_update(p.master, &p.compute, p.grad, &p.state0, sgd, mpx::RoundNearest{}, &skipped.update);
    mpx::cpu::adamw_update(p.master, &p.compute, p.grad, p.state0, p.state1, adamw, mpx::RoundNearest{},
                           &skipped.update);
    before.require_equal(p);  // the CPU left them
    p.require_equal();        // and so did the GPU
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
  CHECK_THROWS_AS(mpx::cuda::adamw_update(master, no_tensor, state, state, state, mpx::AdamWSettings{},
                                          mpx::RoundNearest{}, nullptr),
                  mpx::invalid_argument);
}

TEST_CASE(
    "BeginStep, StoreHostOwned, FinishGradients and EndStep follow LossScaler step by step on both devices",
    "[cuda][step]") {
  // Overflow pattern (true: some gradient is inf) long enough to grow, back off and use hysteresis.
  const std::vector<bool> found_inf = {false, false, false, true, false, true, true,  false, false, false,
                                       false, false, false, true, true,  true, false, false, false, false};
  const auto run = [&](const mpx::DynamicLossScaling::Options& options) {
    mpx::LossScaler<mpx::DynamicLossScaling> reference(options);
    StepScalars start{};
    start.scaler = reference.state();
    BothScalars scalars(start);
    const mpx::EndStep<mpx::DynamicLossScaling> end_step{options};
    std::int64_t updates = 0;
    for (std::size_t step = 0; step < found_inf.size(); ++step) {
      CAPTURE(step);
      const float scale_before = reference.scale();
      const std::int64_t updates_before = updates;
      const double lr = 0.001 * static_cast<double>(step + 1);
      scalars.apply(mpx::BeginStep{});
      scalars.apply(mpx::StoreHostOwned{.host = {.lr = lr}, .fields = mpx::HostOwnedScalars::lr_field});
      if (found_inf[step]) scalars.apply(RaiseGradientsNonfinite{});
      scalars.apply(mpx::FinishGradients{0.0});
      scalars.apply(end_step);
      reference.update(found_inf[step]);
      if (!found_inf[step]) ++updates;
      const StepScalars found = scalars.on_device();
      require_same_scalars(scalars.host, found);
      CHECK(found.scaler == reference.state());
      CHECK(found.loss_scale == scale_before);
      CHECK(found.step == static_cast<std::int64_t>(step + 1));
      CHECK(found.update.optimizer_step == updates_before);  // the count the update (if any) reads
      CHECK(found.updates == updates);
      CHECK(found.update.skip == (found_inf[step] ? 1 : 0));
      CHECK(found.update.lr == lr);
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

TEST_CASE("EndStep under static and no loss scaling only counts, on both devices", "[cuda][step]") {
  StepScalars start{};
  start.scaler.scale = 128.0f;
  mpx::cuda::DeviceArray<StepScalars> scalars = device_scalars(start);
  StepScalars host = start;
  // Through Backend<Cuda>, as the trainer queues them, and called in place, as the CPU step runs them.
  const auto apply = [&](const auto& f) {
    mpx::Backend<Cuda>::single_thread(f, scalars.data());
    f(&host);
  };
  apply(mpx::BeginStep{});
  apply(mpx::EndStep<mpx::StaticLossScaling>{{.scale = 128.0f}});
  apply(mpx::BeginStep{});
  apply(mpx::EndStep<mpx::NoLossScaling>{});
  const StepScalars found = host_scalars(scalars);
  require_same_scalars(host, found);
  CHECK(found.scaler.scale == 128.0f);
  CHECK(found.scaler.steps_taken == 2);
  CHECK(found.updates == 2);
  CHECK(found.step == 2);
}

TEST_CASE("StoreHostOwned overwrites only the fields it names, the same on both devices", "[cuda][step]") {
  StepScalars start{};
  start.scaler.scale = 64.0f;
  start.update.lr = 0.5;
  start.update.optimizer_step = 7;
  start.updates = 7;
  start.step = 9;
  mpx::HostOwnedScalars values{};
  values.scaler.scale = 4096.0f;
  values.scaler.growth_tracker = 11;
  values.optimizer_steps = 1234;
  values.lr = 0.0625;
  values.steps = 1300;
  using Owned = mpx::HostOwnedScalars;
  const unsigned masks[] = {
      0u,
      Owned::scaler_field,
      Owned::optimizer_steps_field,
      Owned::lr_field,
      Owned::steps_field,
      Owned::scaler_field | Owned::lr_field,
      Owned::scaler_field | Owned::optimizer_steps_field | Owned::lr_field | Owned::steps_field};
  for (const unsigned fields : masks) {
    CAPTURE(fields);
    BothScalars scalars(start);
    scalars.apply(mpx::StoreHostOwned{.host = values, .fields = fields});
    const StepScalars found = scalars.on_device();
    require_same_scalars(scalars.host, found);
    CHECK(found.scaler == ((fields & Owned::scaler_field) != 0 ? values.scaler : start.scaler));
    CHECK(found.update.optimizer_step == ((fields & Owned::optimizer_steps_field) != 0
                                              ? values.optimizer_steps
                                              : start.update.optimizer_step));
    CHECK(found.updates == found.update.optimizer_step);
    CHECK(found.update.lr == ((fields & Owned::lr_field) != 0 ? values.lr : start.update.lr));
    CHECK(found.step == ((fields & Owned::steps_field) != 0 ? values.steps : start.step));
  }
}

// ---- the step's fused forms ------------------------------------------------------------------------

namespace {

// Parameters of three type combinations, interleaved as a mixed-precision model visits them (an fp32
// master with a bf16 compute copy, a pure-bf16 master rounded stochastically, an fp32 master
// without a copy), more than one launch's worth of each, sizes around the update chunk (4096).
struct MixedParameters {
  std::vector<Parameter<float, Eigen::bfloat16, float>> mixed;
  std::vector<Parameter<Eigen::bfloat16, Eigen::bfloat16, float>> pure;
  std::vector<Parameter<float, float, float>> plain;

  explicit MixedParameters(std::mt19937& rng) {
    const std::int64_t sizes[] = {1, 7, 4095, 4096, 4097, 9000, 300, 2};
    for (int i = 0; i < 130; ++i) {
      const std::int64_t n = sizes[static_cast<std::size_t>(i) % std::size(sizes)];
      if (i % 3 == 0) mixed.emplace_back(n, rng);
      if (i % 3 == 1) pure.emplace_back(n, rng);
      if (i % 3 == 2) plain.emplace_back(n, rng);
    }
  }
};

// One optimizer step over all of `ps`, on the GPU as one collection (few launches) and on the CPU
// parameter by parameter, under the same control; `add(updates, p, device, rounding)` adds one.
template <class Updates, class CpuUpdate, class Add>
void update_all(MixedParameters& ps, Updates& device_updates, const CpuUpdate& cpu_update, const Add& add) {
  int index = 0;
  for (std::size_t i = 0; i < ps.mixed.size() || i < ps.pure.size() || i < ps.plain.size(); ++i) {
    if (i < ps.mixed.size()) {
      add(device_updates, ps.mixed[i], &ps.mixed[i].d_compute, mpx::RoundNearest{});
      cpu_update(ps.mixed[i], &ps.mixed[i].compute, mpx::RoundNearest{});
      ++index;
    }
    if (i < ps.pure.size()) {
      const mpx::RoundStochasticPerUpdate rounding{0x5EED, index++};
      add(device_updates, ps.pure[i], &ps.pure[i].d_compute, rounding);
      cpu_update(ps.pure[i], &ps.pure[i].compute, rounding);
    }
    if (i < ps.plain.size()) {
      add(device_updates, ps.plain[i], static_cast<mpx::Tensor<float, Cuda>*>(nullptr), mpx::RoundNearest{});
      cpu_update(ps.plain[i], static_cast<mpx::Tensor<float>*>(nullptr), mpx::RoundNearest{});
      ++index;
    }
  }
  device_updates.queue();
}

void require_all_equal(const MixedParameters& ps) {
  for (const auto& p : ps.mixed) p.require_equal();
  for (const auto& p : ps.pure) p.require_equal();
  for (const auto& p : ps.plain) {
    require_same(p.master, p.d_master);
    require_same(p.state0, p.d_state0);
    require_same(p.state1, p.d_state1);
  }
}

}  // namespace

TEST_CASE("cuda::adamw_updates and sgd_updates over many mixed-type parameters give cpu's bits",
          "[cuda][step][optimizer]") {
  std::mt19937 rng(12);
  MixedParameters ps(rng);
  for (const auto& c : step_cases) {
    CAPTURE(c.optimizer_step, c.clipped);
    for (const bool prepared : {false, true}) {
      CAPTURE(prepared);
      StepScalars host = scalars_for(c);
      const mpx::AdamWSettings adamw = adamw_variants[1];
      // Prepared: the bias corrections derived once, as the trainer's FinishStep does; otherwise
      // every block derives them from the update count. Both must give the CPU's bits.
      if (prepared) mpx::AdamWBiasCorrections{adamw.beta1, adamw.beta2}(host.update);
      auto device = device_scalars(host);
      auto updates = mpx::cuda::adamw_updates(adamw, &device.data()->update);
      update_all(
          ps, updates,
          [&](auto& p, auto* compute, const auto& rounding) {
            mpx::cpu::adamw_update(p.master, compute, p.grad, p.state0, p.state1, adamw, rounding,
                                   &host.update);
          },
          [](auto& u, auto& p, auto* compute, const auto& rounding) {
            u.add(p.d_master, compute, p.d_grad, p.d_state0, p.d_state1, rounding);
          });
      require_all_equal(ps);
    }
    StepScalars host = scalars_for(c);
    auto device = device_scalars(host);
    const mpx::SgdSettings sgd = sgd_variants[3];
    auto updates = mpx::cuda::sgd_updates(sgd, &device.data()->update);
    update_all(
        ps, updates,
        [&](auto& p, auto* compute, const auto& rounding) {
          mpx::cpu::sgd_update(p.master, compute, p.grad, &p.state0, sgd, rounding, &host.update);
        },
        [](auto& u, auto& p, auto* compute, const auto& rounding) {
          u.add(p.d_master, compute, p.d_grad, &p.d_state0, rounding);
        });
    require_all_equal(ps);
  }
}

TEST_CASE(
    "The step's fused kernels decide as the CPU's calls do: BeginStep before the input check, "
    "FinishStep after the gradient pass",
    "[cuda][step]") {
  std::mt19937 rng(13);
  const mpx::DynamicLossScaling::Options options{.init_scale = 512.0f, .growth_interval = 2};
  StepScalars start{};
  start.scaler = mpx::LossScaler<mpx::DynamicLossScaling>(options).state();
  start.updates = start.update.optimizer_step = 5;
  start.inputs_nonfinite = 1;  // a previous step's: the begin clears it before the check raises it
  BothScalars scalars(start);
  mpx::cuda::GradientWorkspace workspace;
  mpx::cpu::GradientWorkspace host_workspace;
  // More than one launch of gradients (96 per launch), so the last launch's last block sums all.
  std::vector<mpx::Tensor<float>> grads;
  for (int i = 0; i < 200; ++i)
    grads.push_back(random_host<float>(1 + (i * 997) % 20000, rng, -300.0f, 300.0f));
  std::vector<mpx::Tensor<float, Cuda>> device_grads;
  for (const auto& g : grads) device_grads.push_back(mpx::to_device(g));
  const mpx::FinishStep<mpx::DynamicLossScaling, mpx::AdamWBiasCorrections> finish{
      mpx::FinishGradients{1.0}, mpx::AdamWBiasCorrections{0.9, 0.95}, {options}};
  for (int step = 0; step < 4; ++step) {
    CAPTURE(step);
    auto inputs = random_host<float>(5000, rng);
    if (step == 2) inputs[4321] = std::numeric_limits<float>::infinity();  // this step is skipped
    const auto device_inputs = mpx::to_device(inputs);
    StepScalars* const d = scalars.device.data();
    mpx::cuda::flag_nonfinite(device_inputs, &d->inputs_nonfinite, workspace, mpx::BeginStep{}, d);
    mpx::cpu::flag_nonfinite(inputs, &scalars.host.inputs_nonfinite, host_workspace, mpx::BeginStep{},
                             &scalars.host);
    std::vector<mpx::Tensor<float, Cuda>*> on_device;
    for (auto& g : device_grads) on_device.push_back(&g);
    std::vector<mpx::Tensor<float>*> on_host;
    for (auto& g : grads) on_host.push_back(&g);
    mpx::cuda::unscale_and_inspect<true, float>(on_device, &d->loss_scale, 1, &d->sum_of_squares,
                                                &d->gradients_nonfinite, workspace, finish, d);
    mpx::cpu::unscale_and_inspect<true, float>(
        on_host, &scalars.host.loss_scale, 1, &scalars.host.sum_of_squares, &scalars.host.gradients_nonfinite,
        host_workspace, finish, &scalars.host);
    StepScalars found = scalars.on_device();
    check_same_sum(found.sum_of_squares, scalars.host.sum_of_squares);
    // The clipping coefficient follows the norm, which agrees to rounding only; the rest is exact.
    CHECK(std::fabs(found.update.clip_coefficient - scalars.host.update.clip_coefficient) <=
          1e-12 * scalars.host.update.clip_coefficient);
    found.sum_of_squares = scalars.host.sum_of_squares;
    found.update.clip_coefficient = scalars.host.update.clip_coefficient;
    require_same_scalars(scalars.host, found);
    CHECK(found.inputs_nonfinite == (step == 2 ? 1 : 0));
    CHECK(found.update.skip == (step == 2 ? 1 : 0));
    // Clipped where the unscaled norm exceeds max_norm 1: every step unscales the gradients in place,
    // so their norm falls by the loss scale each step and a later step may not clip.
    const bool over_max_norm = std::sqrt(static_cast<double>(scalars.host.sum_of_squares)) > 1.0;
    CHECK(found.update.clipped == (step != 2 && over_max_norm ? 1 : 0));
    CHECK(found.update.bias_correction1 == 1.0 - mpx::integer_power(0.9, found.update.optimizer_step + 1));
    for (std::size_t t = 0; t < grads.size(); t += 37) require_same(grads[t], device_grads[t]);
  }
}

}  // namespace MPX_UNITY_ID
}  // namespace
