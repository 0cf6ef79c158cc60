// expect: are E4M3, whose 3 mantissa bits they need
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: E5M2 for the forward GEMMs' inputs and weights, which need E4M3's mantissa bits.
#include <mpx/policy/fp8_precision.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Formats = mpx::Fp8Formats<mpx::Float8E4M3, mpx::Float8E5M2>;
#else
using Formats = mpx::Fp8Formats<mpx::Float8E5M2, mpx::Float8E5M2>;
#endif

int main() {
  return mpx::Fp8Precision<mpx::CurrentScaling<>, Formats>::name.empty() ? 1 : 0;
}
