// expect: FP8 values are GEMM operands scaled per tensor by a recipe
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: an FP8 format as a precision's compute type, with no scaling recipe and nothing 16-bit for
// the activations between layers.
#include <mpx/policy/fp8_precision.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using P = mpx::fp8_hybrid<mpx::DelayedScaling<>>;
#else
using P = mpx::Precision<mpx::Float8E4M3>;
#endif

int main() {
  return P::name.empty() ? 1 : 0;
}
