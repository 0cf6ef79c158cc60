// expect: static.assert.*Compute must be a precision tag
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a plain type instead of a precision tag as the compute type.
#include <mpx/policy/precision.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Policy = mpx::Precision<mpx::Float>;
#else
using Policy = mpx::Precision<int>;
#endif

// Naming a member instantiates the class, and with it the checks.
static_assert(!Policy::name.empty());

int main() {
  return 0;
}
