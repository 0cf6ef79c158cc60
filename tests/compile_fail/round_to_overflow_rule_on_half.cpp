// expect: the overflow rule is for formats kept as bit patterns
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: choosing an overflow rule (saturate or not) for fp16, which always overflows to infinity;
// the rule is for FP8 and smaller formats.
#include <mpx/numeric/rounding.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Format = mpx::Float8E4M3;
#else
using Format = mpx::Half;
#endif

int main() {
  const auto x = mpx::round_to<Format, mpx::Overflow::Saturate>(1000.0f);
  return static_cast<float>(x) > 0.0f ? 0 : 1;
}
