// expect: static.assert.*stochastic rounding is for fp16 or bf16 master weights
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: stochastic update rounding with fp32 master weights, which hold the update exactly.
#include <mpx/policy/precision.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Policy = mpx::Precision<mpx::BFloat16, mpx::BFloat16, mpx::RoundStochastic>;
#else
using Policy = mpx::Precision<mpx::BFloat16, mpx::Float, mpx::RoundStochastic>;
#endif

static_assert(!Policy::name.empty());

int main() {
  return 0;
}
