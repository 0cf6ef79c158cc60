// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `dist::NcclGradientSync`'s constructor from an MPI `dist::Communicator`: the ranks that
/// MPI launched receive rank 0's NCCL unique id over MPI, then join NCCL as from an
/// `NcclBootstrap` (which compares their models). mpx/dist/nccl_gradient_sync.cuh includes this header when
/// MPX_HAS_MPI is 1 (`mpx::mpi` linked), so a program includes that one.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/dist/nccl_gradient_sync_mpi.cuh holds CUDA code: compile this translation unit with nvcc (a .cu file) and link mpx::nccl and mpx::mpi"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <mpi.h>
#include <nccl.h>

#include "mpx/backend/cuda/nccl.cuh"
#include "mpx/dist/communicator.hpp"
#include "mpx/dist/nccl_gradient_sync.cuh"

namespace mpx::dist {

namespace detail {
// Broadcasts rank 0's unique id: collective over `comm`.
inline NcclBootstrap nccl_bootstrap_over_mpi(const Communicator& comm) {
  NcclBootstrap bootstrap{.rank = comm.rank(), .size = comm.size()};
  if (comm.rank() == 0) cuda::check_nccl(ncclGetUniqueId(&bootstrap.id), "ncclGetUniqueId", 0);
  comm.check(MPI_Bcast(&bootstrap.id, sizeof bootstrap.id, MPI_BYTE, 0, comm.native()),
             "MPI_Bcast (NCCL unique id)");
  return bootstrap;
}
}  // namespace detail

template <class Grad>
template <class Model>
NcclGradientSync<Grad>::NcclGradientSync(const Communicator& comm, Model& model, const SyncOptions& options)
    : NcclGradientSync(detail::nccl_bootstrap_over_mpi(comm), model, options) {}

}  // namespace mpx::dist
