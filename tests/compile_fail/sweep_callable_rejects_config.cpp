// expect: static.assert.*the callable must accept every configuration
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a callable that does not take a configuration (here it only takes an int).
#include <boost/hana/tuple.hpp>
#include <mpx/experiment/sweep.hpp>

int main() {
#ifdef MPX_COMPILE_FAIL_CONTROL
  const auto run = [](auto config) { return static_cast<int>(decltype(config)::name().size()); };
#else
  const auto run = [](int steps) { return steps; };
#endif
  const auto records = mpx::experiment::sweep(boost::hana::tuple_t<mpx::fp32, mpx::bf16_mixed>, run);
  return static_cast<int>(records.size()) - 2;
}
