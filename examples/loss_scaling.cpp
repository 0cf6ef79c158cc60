// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Dynamic loss scaling step by step: two scalers see the same run of clean and overflowing steps,
// one with GradScaler's behaviour, one with the opt-in hysteresis and floor. Exits 1 if either
// ends anywhere but where docs/loss_scaling.md's algorithm says.
#include <cstdio>

#include <mpx/train/loss_scaler.hpp>

int main() {
  // growth_interval 3 instead of 2000 so that growth shows within ten steps.
  mpx::LossScaler<mpx::DynamicLossScaling> plain({.init_scale = 1024.0f, .growth_interval = 3});
  mpx::LossScaler<mpx::DynamicLossScaling> patient(
      {.init_scale = 1024.0f, .growth_interval = 3, .min_scale = 512.0f, .hysteresis = 2});

  const bool overflow[] = {false, false, false, true, false, true, true, false, false, false};
  std::printf("step  overflow  plain scale  patient scale\n");
  int step = 0;
  for (const bool found_inf : overflow) {
    plain.update(found_inf);  // the Trainer calls this after unscaling, with the finite check's result
    patient.update(found_inf);
    std::printf("%4d  %-8s  %11g  %13g\n", ++step, found_inf ? "inf" : "-", double(plain.scale()),
                double(patient.scale()));
  }
  const auto& p = plain.state();
  const auto& q = patient.state();
  std::printf("plain: %lld taken, %lld skipped, %lld backoffs; patient: %lld backoffs\n",
              static_cast<long long>(p.steps_taken), static_cast<long long>(p.steps_skipped),
              static_cast<long long>(p.backoffs), static_cast<long long>(q.backoffs));
  // plain: grows to 2048 at step 3, backs off at steps 4, 6 and 7 (256), grows again at step 10.
  // patient: only the second consecutive overflow (step 7) backs off; grows again at step 10.
  const bool as_documented = plain.scale() == 512.0f && p.steps_skipped == 3 && p.backoffs == 3 &&
                             patient.scale() == 2048.0f && q.steps_skipped == 3 && q.backoffs == 1;
  return as_documented ? 0 : 1;
}
