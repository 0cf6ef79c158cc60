// expect: static.assert.*TF32 is a Tensor Core compute mode, not a storage type
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: TF32 as the master type; TF32 only exists inside Tensor Core matmuls.
#include <mpx/policy/precision.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Policy = mpx::Precision<mpx::TF32, mpx::Float>;
#else
using Policy = mpx::Precision<mpx::Float, mpx::TF32>;
#endif

static_assert(!Policy::name.empty());

int main() {
  return 0;
}
