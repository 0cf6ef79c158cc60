// expect: static.assert.*only mpx::NoLossScaling needs this opt-in
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: the fp16-underflow opt-in wrapped around a policy that does scale the loss.
#include <mpx/policy/loss_scaling.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Scaler = mpx::AllowFp16Underflow<mpx::NoLossScaling>;
#else
using Scaler = mpx::AllowFp16Underflow<mpx::DynamicLossScaling>;
#endif

static_assert(Scaler::allows_fp16_underflow);

int main() {
  return 0;
}
