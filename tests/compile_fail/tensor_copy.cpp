// expect: use of deleted function.*Tensor|call to deleted constructor.*Tensor
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: an implicit copy of a tensor; copies must be explicit (clone()) so that none inflates the
// peak memory a benchmark reports.
#include <mpx/tensor/tensor.hpp>

void duplicate() {
  const mpx::Tensor<float> original(mpx::Shape{2, 3});
#ifdef MPX_COMPILE_FAIL_CONTROL
  const mpx::Tensor<float> copy = original.clone();
#else
  const mpx::Tensor<float> copy = original;
#endif
  static_cast<void>(copy);
}

int main() {
  return 0;
}
