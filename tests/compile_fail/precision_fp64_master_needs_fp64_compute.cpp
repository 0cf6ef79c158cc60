// expect: static.assert.*fp64 master weights would be rounded every step
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: fp64 master weights under fp32 compute. Optimizer updates accumulate in fp32 unless the
// compute type is fp64, so the wider master type would only be rounded on every step.
#include <mpx/policy/precision.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using P = mpx::Precision<mpx::Float>;
#else
using P = mpx::Precision<mpx::Float, mpx::Double>;
#endif

using Master = P::master_type;
int main() {
  return sizeof(Master) > 0 ? 0 : 1;
}
