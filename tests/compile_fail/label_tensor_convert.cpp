// expect: FloatingElement
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: rounding a tensor of int32 labels into a precision; labels are moved and compared, never
// rounded, and operations that need a precision say so in their constraint.
#include <cstdint>

#include <mpx/tensor/convert.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Value = float;
#else
using Value = std::int32_t;
#endif

int main() {
  const mpx::Tensor<Value> labels(mpx::Shape{4});
  const auto rounded = mpx::convert<mpx::BFloat16>(labels);
  return rounded.numel() == 4 ? 0 : 1;
}
