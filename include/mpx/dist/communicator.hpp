// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `dist::Communicator`: the processes of a data-parallel job (an MPI communicator of mpx's
/// own), their number and this process's rank.

#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "mpx/dist/environment.hpp"
#include "mpx/error.hpp"

namespace mpx::dist {

/// @brief A private duplicate of an MPI communicator (MPI_COMM_WORLD by default), so that mpx's
/// collectives never match a program's own messages, with MPI_ERRORS_RETURN set on it so that a
/// failed call becomes an `mpi_error` naming the call and the rank instead of aborting the job.
/// MPI must be initialised (`dist::Environment`) for its whole lifetime.
class Communicator {
 public:
  /// @brief Duplicates `parent` (collective: every process of `parent` must construct one).
  explicit Communicator(MPI_Comm parent = MPI_COMM_WORLD) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
      throw mpi_error(
          "mpx::dist::Communicator: MPI is not initialised; create a mpx::dist::Environment "
          "first (or call MPI_Init)");
    }
    int parent_rank = -1;
    MPI_Comm_rank(parent, &parent_rank);
    check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup", parent_rank);
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", parent_rank);
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank", parent_rank);
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size", parent_rank);
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  /// @brief Frees the duplicate (unless MPI is already finalised).
  ~Communicator() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0 && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  /// @brief This process's rank, 0 to `size() - 1`.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// @brief Number of processes (the world size).
  [[nodiscard]] int size() const noexcept { return size_; }
  /// @brief The MPI communicator, for MPI calls of the caller's own.
  [[nodiscard]] MPI_Comm native() const noexcept { return comm_; }

  /// @brief Throws `mpi_error` naming `call` and this rank unless `code` is `MPI_SUCCESS`.
  void check(int code, const char* call) const { check_mpi(code, call, rank_); }

  /// @brief Waits until every process has reached it.
  void barrier() const { check(MPI_Barrier(comm_), "MPI_Barrier"); }

  /// @brief Every process's `value`, indexed by rank.
  [[nodiscard]] std::vector<std::uint64_t> all_gather(std::uint64_t value) const {
    std::vector<std::uint64_t> values(static_cast<std::size_t>(size_));
    check(MPI_Allgather(&value, 1, MPI_UINT64_T, values.data(), 1, MPI_UINT64_T, comm_), "MPI_Allgather");
    return values;
  }

  /// @brief Ends the whole job with `code` (MPI_Abort): what a rank does when it cannot go on, so
  /// that the others do not wait for it forever.
  [[noreturn]] void abort(int code) const {
    MPI_Abort(comm_, code);
    std::abort();  // MPI_Abort does not return; this is for the compiler
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace mpx::dist
