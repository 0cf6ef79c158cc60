// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `dist::Environment`: MPI's lifetime (MPI_Init / MPI_Finalize) as an object;
/// `dist::launched_by_mpirun`, whether a launcher started this process; and `dist::check_mpi`, which turns an
/// MPI error code into an `mpx::dist::mpi_error` naming the call and the rank.

#include <mpi.h>

#include <cstdlib>
#include <string>

#include "mpx/error.hpp"

namespace mpx::dist {

/// @brief An MPI call that failed; the message names the call, the rank and MPI's own text.
class mpi_error : public error {
 public:
  using error::error;
};

/// @brief Ranks that stopped meeting: a collective that did not complete within its timeout
/// (`SyncOptions::timeout`); the message names the ranks that never reached it.
class timeout_error : public mpi_error {
 public:
  using mpi_error::mpi_error;
};

/// @brief Throws `mpi_error` naming `call` and `rank` unless `code` is `MPI_SUCCESS`. The
/// communicators mpx creates return errors (MPI_ERRORS_RETURN) instead of aborting, so every
/// failure reaches the caller as an exception with its place.
inline void check_mpi(int code, const char* call, int rank) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw mpi_error(mpx::detail::concat(call, " failed on rank ", rank, " (error ", code,
                                      "): ", std::string(text, static_cast<std::size_t>(length))));
}

/// @brief Whether an MPI launcher started this process: `mpirun`/`mpiexec` of Open MPI
/// (`OMPI_COMM_WORLD_SIZE`), of MPICH, Intel MPI or MVAPICH (`PMI_SIZE`), or a PMIx launcher such as
/// Slurm's `srun --mpi=pmix` (`PMIX_RANK`). Read from the environment, before and without MPI_Init:
/// a program that can train alone or data-parallel asks this to choose, as a PyTorch script asks
/// whether torchrun set `RANK`, and started by hand it never initialises MPI.
[[nodiscard]] inline bool launched_by_mpirun() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

/// @brief Initialises MPI (thread level MPI_THREAD_SERIALIZED: one thread at a time calls MPI;
/// Eigen's OpenMP threads never do, and a gradient sync's progress thread takes turns with the
/// training thread) and finalises it when destroyed. When the
/// program has already called MPI_Init itself, the environment neither initialises nor finalises:
/// MPI stays the program's.
class Environment {
 public:
  /// @brief Initialises MPI with the program's arguments (MPI may consume its own), unless it is
  /// already initialised. Throws `mpi_error` if MPI was already finalised or MPI_Init_thread fails.
  Environment(int* argc = nullptr, char*** argv = nullptr) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) {
      throw mpi_error(
          "mpx::dist::Environment: MPI was already finalised in this process; it cannot be "
          "initialised again");
    }
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized != 0) return;
    int provided = 0;
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread", -1);
    owns_ = true;
  }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  /// @brief Finalises MPI if this environment initialised it.
  ~Environment() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_ && finalized == 0) MPI_Finalize();
  }

  /// @brief Whether this environment initialised MPI (and so finalises it).
  [[nodiscard]] bool owns_mpi() const noexcept { return owns_; }

 private:
  bool owns_ = false;
};

}  // namespace mpx::dist
