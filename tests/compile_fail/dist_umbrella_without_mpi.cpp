// expect: <mpx/dist.hpp> needs MPI: link the mpx::mpi target
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: the data-parallel umbrella in a program that does not link mpx::mpi (MPX_HAS_MPI unset):
// the #error names the target to link, before any missing <mpi.h> could.
#ifdef MPX_COMPILE_FAIL_CONTROL
#include <mpx/config.hpp>  // the umbrella's first include, which needs nothing
#else
#include <mpx/dist.hpp>
#endif

int main() {
  return 0;
}
