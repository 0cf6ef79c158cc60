// expect: static.assert.*fp16 without loss scaling loses small gradients
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: fp16 compute with no loss scaling and no explicit opt-in.
#include <mpx/policy/loss_scaling.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Scaler = mpx::checked_scaler_t<mpx::fp16_mixed, mpx::AllowFp16Underflow<mpx::NoLossScaling>>;
#else
using Scaler = mpx::checked_scaler_t<mpx::fp16_mixed, mpx::NoLossScaling>;
#endif

static_assert(!Scaler::scales_loss);

int main() {
  return 0;
}
