// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Compiled with short macros a user program may define (-DW=1, -DDEBUG=1, ...; tests/CMakeLists.txt
// lists them): mpx's headers must not use these names as identifiers. Single letters that Eigen or
// Boost.Hana themselves use (V, N, T, P, M, X, ...) cannot work and are not tested; docs/building.md
// says which and why.
#include <mpx/mpx.hpp>

// Not in the umbrella, but public and just as exposed.
#include <mpx/experiment/data_parallel_job.hpp>

int main() {
  return 0;
}
