// expect: static.assert.*every element of the list must be a precision policy
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a type that is neither a precision policy, a LayerPrecisions plan nor a Config in the list.
#include <boost/hana/tuple.hpp>
#include <mpx/experiment/sweep.hpp>

int main() {
#ifdef MPX_COMPILE_FAIL_CONTROL
  const auto configurations = boost::hana::tuple_t<mpx::fp32, mpx::bf16_mixed>;
#else
  const auto configurations = boost::hana::tuple_t<mpx::fp32, int>;
#endif
  const auto records = mpx::experiment::sweep(configurations, [](auto) { return 1; });
  return static_cast<int>(records.size()) - 2;
}
