// expect: static.assert.*the scaler must be a loss-scaling policy
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a type that is not a loss-scaling policy (a precision policy) in the scaler slot.
#include <mpx/policy/loss_scaling.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Scaler = mpx::checked_scaler_t<mpx::bf16_mixed, mpx::NoLossScaling>;
#else
using Scaler = mpx::checked_scaler_t<mpx::bf16_mixed, mpx::fp32>;
#endif

static_assert(sizeof(Scaler) > 0);

int main() {
  return 0;
}
