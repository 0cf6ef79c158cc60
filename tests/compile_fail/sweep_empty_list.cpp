// expect: static.assert.*the list of configurations is empty
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a sweep over no configurations at all.
#include <boost/hana/tuple.hpp>
#include <mpx/experiment/sweep.hpp>

int main() {
#ifdef MPX_COMPILE_FAIL_CONTROL
  const auto records = mpx::experiment::sweep(boost::hana::tuple_t<mpx::fp32>, [](auto) { return 1; });
#else
  const auto records = mpx::experiment::sweep(boost::hana::tuple_t<>, [](auto) { return 1; });
#endif
  return static_cast<int>(records.size()) - 1;
}
