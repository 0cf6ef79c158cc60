// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// What each precision policy means, and what rounding into it does to a few values.
#include <cstdio>

#include <mpx/mpx.hpp>

namespace {

// The facts a precision policy fixes at compile time.
template <mpx::PrecisionPolicy P>
void describe() {
  using Compute = typename P::compute_type;
  using compute = mpx::numeric_traits<Compute>;
  using scaler = mpx::default_scaler_t<P>;
  std::printf("%-11s compute %-4s master %-4s accumulate %-4s eps %-10.3g max %-10.4g scaler %s\n",
              P::name.data(), compute::name.data(), mpx::numeric_traits<typename P::master_type>::name.data(),
              mpx::numeric_traits<typename P::accumulate_type>::name.data(), double(mpx::epsilon_v<Compute>),
              double(compute::max_finite), scaler::name.data());
}

// One value rounded to nearest into every compute type.
void round_everywhere(float x) {
  std::printf("%-14.9g fp16 %-14.9g bf16 %-14.9g tf32 %-14.9g\n", double(x),
              double(static_cast<float>(mpx::round_to<mpx::Half>(x))),
              double(static_cast<float>(mpx::round_to<mpx::BFloat16>(x))),
              double(mpx::round_to<mpx::TF32>(x)));
}

}  // namespace

int main() {
  describe<mpx::fp32>();
  describe<mpx::tf32>();
  describe<mpx::fp16_mixed>();
  describe<mpx::bf16_mixed>();
  describe<mpx::Precision<mpx::BFloat16, mpx::BFloat16>>();

  std::printf("\nround to nearest:\n");
  for (const float x : {0.1f, 3.14159265f, 1.0e-6f, 1.0e-8f, 70000.0f}) round_everywhere(x);

  // Stochastic rounding keeps the mean: 1 + 2^-9 sits a quarter of the way between two bf16 values.
  const float x = 1.0f + 0x1p-9f;
  double sum = 0.0;
  constexpr int draws = 100000;
  for (int i = 0; i < draws; ++i) {
    sum += static_cast<float>(mpx::round_stochastic<mpx::BFloat16>(x, mpx::random_bits(42, 0, i)));
  }
  std::printf("\nbf16 of %.9g: nearest %.9g, mean of %d stochastic roundings %.9g\n", double(x),
              double(static_cast<float>(mpx::round_to<mpx::BFloat16>(x))), draws, sum / draws);
  return 0;
}
