// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The training step's bookkeeping as the trainer fuses it (train/step_scalars.hpp): `FinishStep`
// (the skip and clipping decisions, the optimizer's per-update scalars, the scaler update and the
// update count in one call, run before the optimizer's update) against the separate functors in the
// order the step used to run them; AdamW's bias corrections derived once into the `UpdateControl`
// against the ones each update derives itself; and the backends' step forms (`adamw_updates`,
// `flag_nonfinite` with a functor before it, `unscale_and_inspect` with one after it) on the CPU.
// The same functors run on a GPU in tests/cuda/step_cuda_test.cu.
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

// A scaler pattern that grows, backs off and skips.
const std::vector<bool> found_inf = {false, false, true, false, false, false, true, true, false, false};

// Runs the step's decisions both ways over found_inf and requires the same scalars and the same
// control for the update, as the optimizer sees it when it runs.
template <class Prepare>
void check_fused_against_separate(const Prepare& prepare, double max_grad_norm) {
  const mpx::DynamicLossScaling::Options options{.init_scale = 256.0f, .growth_interval = 2};
  mpx::StepScalars fused{};
  fused.scaler = mpx::LossScaler<mpx::DynamicLossScaling>(options).state();
  fused.updates = fused.update.optimizer_step = 41;  // as a loaded checkpoint leaves them
  mpx::StepScalars separate = fused;
  const mpx::FinishStep<mpx::DynamicLossScaling, Prepare> finish{
      mpx::FinishGradients{max_grad_norm}, prepare, mpx::EndStep<mpx::DynamicLossScaling>{options}};
  std::int64_t applied = 0;
  for (std::size_t step = 0; step < found_inf.size(); ++step) {
    CAPTURE(step);
    for (mpx::StepScalars* s : {&fused, &separate}) {
      mpx::BeginStep{}(s);
      s->sum_of_squares = 4.0 + static_cast<double>(step);  // a norm above the threshold
      s->gradients_nonfinite = found_inf[step] ? 1 : 0;
    }
    // Fused: everything is decided before the update runs.
    finish(&fused);
    const mpx::UpdateControl fused_control = fused.update;
    // Separate: decide, prepare, update (reads the control), then end the step.
    mpx::FinishGradients{max_grad_norm}(&separate);
    prepare(separate.update);
    const mpx::UpdateControl separate_control = separate.update;
    mpx::EndStep<mpx::DynamicLossScaling>{options}(&separate);

    CHECK(fused_control.optimizer_step == 41 + applied);  // the count before this update
    CHECK(fused_control.optimizer_step == separate_control.optimizer_step);
    CHECK(fused_control.skip == separate_control.skip);
    CHECK(fused_control.clipped == separate_control.clipped);
    CHECK(fused_control.clip_coefficient == separate_control.clip_coefficient);
    CHECK(fused_control.bias_correction1 == separate_control.bias_correction1);
    CHECK(fused_control.bias_correction2 == separate_control.bias_correction2);
    CHECK(fused.scaler == separate.scaler);
    if (!found_inf[step]) ++applied;
    CHECK(fused.updates == 41 + applied);
    CHECK(separate.updates == fused.updates);
    CHECK(fused.update.skip == (found_inf[step] ? 1 : 0));
  }
}

}  // namespace

TEST_CASE(
    "FinishStep decides before the update exactly what FinishGradients, the preparation and EndStep "
    "decided around it",
    "[train][step]") {
  SECTION("SGD: nothing to prepare, clipping on") {
    check_fused_against_separate(mpx::NoUpdatePreparation{}, 1.0);
  }
  SECTION("AdamW: bias corrections of t = updates + 1, no clipping") {
    check_fused_against_separate(mpx::AdamWBiasCorrections{0.9, 0.999}, 0.0);
  }
}

TEST_CASE("AdamWBiasCorrections writes 1 - beta^t for t = optimizer_step + 1", "[optim][adamw][step]") {
  mpx::UpdateControl control{};
  control.optimizer_step = 9;
  mpx::AdamWBiasCorrections{0.9, 0.999}(control);
  CHECK(control.bias_correction1 == 1.0 - mpx::integer_power(0.9, 10));
  CHECK(control.bias_correction2 == 1.0 - mpx::integer_power(0.999, 10));
  const mpx::UpdateControl before = control;
  mpx::NoUpdatePreparation{}(control);
  CHECK(control.bias_correction1 == before.bias_correction1);
}

TEST_CASE("AdamW coefficients from a control's bias corrections are those derived from its update count",
          "[optim][adamw][step]") {
  const mpx::AdamWSettings s{.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .weight_decay = 0.1};
  for (const std::int64_t optimizer_step :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{77}, std::int64_t{123456}}) {
    CAPTURE(optimizer_step);
    mpx::UpdateControl derived{.lr = 1e-3, .optimizer_step = optimizer_step};
    mpx::UpdateControl prepared = derived;
    mpx::AdamWBiasCorrections{s.beta1, s.beta2}(prepared);
    REQUIRE(prepared.bias_correction1 > 0.0);
    const auto a = mpx::adamw_coefficients<float>(s, derived);
    const auto b = mpx::adamw_coefficients<float>(s, prepared);
    const auto c = mpx::adamw_coefficients<float>(s, 1e-3, optimizer_step + 1);
    CHECK(a.minus_step_size == b.minus_step_size);
    CHECK(a.bias_correction2_sqrt == b.bias_correction2_sqrt);
    CHECK(b.minus_step_size == c.minus_step_size);
    CHECK(b.bias_correction2_sqrt == c.bias_correction2_sqrt);
    CHECK(b.decay == c.decay);
    // A control whose corrections are another t's: they are what the update uses.
    mpx::UpdateControl other = derived;
    other.bias_correction1 = 0.5;
    other.bias_correction2 = 0.25;
    CHECK(mpx::adamw_coefficients<double>(s, other).minus_step_size == -(1e-3 / 0.5));
    CHECK(mpx::adamw_coefficients<double>(s, other).bias_correction2_sqrt == 0.5);
  }
}

TEST_CASE(
    "cpu::adamw_updates over several parameters gives the bits of adamw_update one by one, prepared or "
    "not",
    "[optim][adamw][step]") {
  const mpx::AdamWSettings s{.lr = 1e-2, .weight_decay = 0.05};
  const auto make = [](std::int64_t n, float offset) {
    mpx::Tensor<float> t(mpx::Shape{n});
    for (std::int64_t i = 0; i < n; ++i) t[i] = std::sin(static_cast<float>(i) + offset);
    return t;
  };
  struct Param {
    mpx::Tensor<float> master, grad, m, v;
    mpx::Tensor<Eigen::bfloat16> compute;
  };
  const auto params = [&] {
    std::vector<Param> p;
    for (const std::int64_t n : {std::int64_t{5}, std::int64_t{300}, std::int64_t{1}}) {
      p.push_back({make(n, 0.1f), make(n, 2.0f), mpx::Tensor<float>(mpx::Shape{n}),
                   mpx::Tensor<float>(mpx::Shape{n}), mpx::Tensor<Eigen::bfloat16>(mpx::Shape{n})});
    }
    return p;
  };
  auto one_by_one = params();
  auto batched = params();
  for (std::int64_t step = 0; step < 5; ++step) {
    mpx::UpdateControl control{.lr = s.lr, .optimizer_step = step};
    for (auto& p : one_by_one) {
      mpx::cpu::adamw_update(p.master, &p.compute, p.grad, p.m, p.v, s, mpx::RoundNearest{}, &control);
    }
    mpx::AdamWBiasCorrections{s.beta1, s.beta2}(control);
    auto updates = mpx::Backend<mpx::Host>::adamw_updates(s, &control);
    for (auto& p : batched) updates.add(p.master, &p.compute, p.grad, p.m, p.v, mpx::RoundNearest{});
    updates.queue();
  }
  for (std::size_t i = 0; i < one_by_one.size(); ++i) {
    CAPTURE(i);
    for (std::int64_t k = 0; k < one_by_one[i].master.numel(); ++k) {
      REQUIRE(one_by_one[i].master[k] == batched[i].master[k]);
      REQUIRE(one_by_one[i].v[k] == batched[i].v[k]);
      REQUIRE(one_by_one[i].compute[k] == batched[i].compute[k]);
    }
  }
}

TEST_CASE("The CPU backend's fused step forms run their functor before or after the pass", "[train][step]") {
  mpx::StepScalars s{};
  s.scaler.scale = 4.0f;
  s.inputs_nonfinite = 1;  // a previous step's: BeginStep clears it before the check
  mpx::Backend<mpx::Host>::GradientWorkspace workspace;
  mpx::Tensor<float> finite_inputs(mpx::Shape{3});
  mpx::Backend<mpx::Host>::flag_nonfinite(finite_inputs, &s.inputs_nonfinite, workspace, mpx::BeginStep{},
                                          &s);
  CHECK(s.inputs_nonfinite == 0);
  CHECK(s.step == 1);
  CHECK(s.loss_scale == 4.0f);
  mpx::Tensor<float> bad_inputs(mpx::Shape{2});
  bad_inputs[1] = std::numeric_limits<float>::quiet_NaN();
  mpx::Backend<mpx::Host>::flag_nonfinite(bad_inputs, &s.inputs_nonfinite, workspace, mpx::BeginStep{}, &s);
  CHECK(s.inputs_nonfinite == 1);  // raised after the begin cleared it
  CHECK(s.step == 2);

  mpx::BeginStep{}(&s);
  mpx::Tensor<float> grad(mpx::Shape{2});
  grad[0] = 8.0f;
  grad[1] = -4.0f;
  mpx::Tensor<float>* const gradients[] = {&grad};
  const mpx::FinishStep<mpx::DynamicLossScaling> finish{mpx::FinishGradients{1.0}, {}, {{}}};
  mpx::Backend<mpx::Host>::unscale_and_inspect<true>(std::span<mpx::Tensor<float>* const>(gradients),
                                                     &s.loss_scale, 1, &s.sum_of_squares,
                                                     &s.gradients_nonfinite, workspace, finish, &s);
  CHECK(grad[0] == 2.0f);
  CHECK(s.sum_of_squares == 5.0);  // 2^2 + 1^2, seen by the decision that follows
  CHECK(s.update.clipped == 1);
  CHECK(s.update.clip_coefficient == mpx::clip_coefficient(1.0, std::sqrt(5.0)));
  CHECK(s.updates == 1);
}

TEST_CASE("unscale_and_inspect: an fp64 gradient whose square overflows is finite, as the GPU finds it",
          "[train][step]") {
  // 1e200 squared is inf in fp64: the sum of squares is inf, yet every value is finite, so the step
  // is not skipped (the CPU flagged it until an H200 run of the same case disagreed).
  mpx::Tensor<double> grad(mpx::Shape{3});
  grad[0] = 1e200;
  grad[1] = -2.0;
  mpx::Tensor<double>* const gradients[] = {&grad};
  const float scale = 8.0f;
  double sum_of_squares = 0.0;
  int nonfinite = 0;
  mpx::Backend<mpx::Host>::GradientWorkspace workspace;
  mpx::Backend<mpx::Host>::unscale_and_inspect<true>(std::span<mpx::Tensor<double>* const>(gradients), &scale,
                                                     1, &sum_of_squares, &nonfinite, workspace);
  CHECK(nonfinite == 0);
  CHECK(std::isinf(sum_of_squares));
  CHECK(grad[0] == 1.25e199);
  grad[2] = std::numeric_limits<double>::quiet_NaN();
  sum_of_squares = 0.0;
  mpx::Backend<mpx::Host>::unscale_and_inspect<true>(std::span<mpx::Tensor<double>* const>(gradients), &scale,
                                                     1, &sum_of_squares, &nonfinite, workspace);
  CHECK(nonfinite == 1);
}

}  // namespace MPX_UNITY_ID
}  // namespace
