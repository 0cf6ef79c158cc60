// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `dist::run`: the top of a rank's program. It starts MPI, runs the rank's work, and turns an
/// exception on any rank into the end of the whole job with a message naming that rank, so that no
/// rank waits forever in a collective for one that has gone.

#include <cstdio>
#include <exception>
#include <type_traits>
#include <utility>

#include "mpx/dist/communicator.hpp"
#include "mpx/dist/environment.hpp"

namespace mpx::dist {

/// @brief Runs `body(communicator)` on this rank between MPI's initialisation and finalisation; returns
/// what `body` returns (0 for a `void` body).
///
/// When `body` throws, prints "mpx::dist: rank R of N failed: <what>" to stderr and calls MPI_Abort,
/// which makes mpirun end every other rank and exit non-zero: an error on one rank ends the job
/// instead of leaving the others blocked in their next collective. A rank killed by a signal is
/// mpirun's to notice; it ends the job the same way.
/// @code
/// int main(int argc, char** argv) {
///   return mpx::dist::run(argc, argv, [](mpx::dist::Communicator& comm) { return train(comm); });
/// }
/// @endcode
template <class Body>
int run(int& argc, char**& argv, Body&& body) {
  Environment environment(&argc, &argv);
  int world_rank = -1;
  int world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  try {
    Communicator communicator;
    if constexpr (std::is_void_v<std::invoke_result_t<Body&, Communicator&>>) {
      body(communicator);
      return 0;
    } else {
      return static_cast<int>(body(communicator));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpx::dist: rank %d of %d failed: %s\n", world_rank, world_size, e.what());
  } catch (...) {
    std::fprintf(stderr, "mpx::dist: rank %d of %d failed with an exception that is not a std::exception\n",
                 world_rank, world_size);
  }
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;  // not reached: MPI_Abort ends the process
}

}  // namespace mpx::dist
