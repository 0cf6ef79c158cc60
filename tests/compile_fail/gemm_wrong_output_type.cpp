// expect: static.assert.*D must hold the compute type or the accumulate type
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a bf16 GEMM writing into a double D (only bf16 or the fp32 accumulate type are allowed).
#include <mpx/backend/cpu/gemm.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using OutputElement = float;
#else
using OutputElement = double;
#endif

void multiply() {
  const mpx::Tensor<Eigen::bfloat16> a(mpx::Shape{2, 3});
  const mpx::Tensor<Eigen::bfloat16> b(mpx::Shape{3, 4});
  mpx::Tensor<OutputElement> d(mpx::Shape{2, 4});
  mpx::cpu::gemm<mpx::BFloat16>(a, b, d, {});
}

int main() {
  return 0;
}
