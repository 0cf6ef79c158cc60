// expect: static.assert.*Master must be a precision tag
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: the element type `float` where the tag `mpx::Float` is meant, as the master type.
#include <mpx/policy/precision.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Policy = mpx::Precision<mpx::BFloat16, mpx::Float>;
#else
using Policy = mpx::Precision<mpx::BFloat16, float>;
#endif

static_assert(!Policy::name.empty());

int main() {
  return 0;
}
