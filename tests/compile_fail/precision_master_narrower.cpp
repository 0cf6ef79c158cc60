// expect: static.assert.*master type is narrower than the compute type
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: bf16 master weights for fp16 compute; bf16 has 3 fewer mantissa bits than fp16, so every
// refresh of the fp16 compute copy from the master would lose information.
#include <mpx/policy/precision.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Policy = mpx::Precision<mpx::Half, mpx::Float>;
#else
using Policy = mpx::Precision<mpx::Half, mpx::BFloat16>;
#endif

static_assert(!Policy::name.empty());

int main() {
  return 0;
}
