// expect: static.assert.*fp64 compute needs fp64 master weights
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: fp64 compute with the default (fp32) master type.
#include <mpx/policy/precision.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Policy = mpx::Precision<mpx::Double, mpx::Double>;
#else
using Policy = mpx::Precision<mpx::Double>;
#endif

static_assert(!Policy::name.empty());

int main() {
  return 0;
}
