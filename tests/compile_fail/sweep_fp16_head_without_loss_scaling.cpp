// expect: static.assert.*a plan with fp16 layers needs loss scaling
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a sweep configuration whose classifier alone computes in fp16, with no loss scaling and no
// explicit opt-in (fp16 gradients below 2^-24 would flush to zero).
#include <boost/hana/tuple.hpp>
#include <mpx/experiment/sweep.hpp>

using Plan = mpx::experiment::LayerPrecisions<mpx::bf16_mixed, mpx::fp16_mixed>;
#ifdef MPX_COMPILE_FAIL_CONTROL
using Unscaled = mpx::experiment::Config<Plan, mpx::AllowFp16Underflow<mpx::NoLossScaling>>;
#else
using Unscaled = mpx::experiment::Config<Plan, mpx::NoLossScaling>;
#endif

int main() {
  const auto records = mpx::experiment::sweep(boost::hana::tuple_t<Unscaled>, [](auto) { return 1; });
  return static_cast<int>(records.size()) - 1;
}
