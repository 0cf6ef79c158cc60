// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The data-parallel umbrella over MPI: everything in <mpx/mpx.hpp> plus `mpx::dist` on the
/// CPU: `dist::run` (MPI start, an error on any rank ends the job), `dist::Communicator`,
/// `dist::MpiGradientSync` (the `GradientSync` a `Trainer` takes) with its `SyncOptions`, and the
/// job a training program runs (`experiment::run_job`, `DataParallelJob`, `make_gradient_sync`).
/// Link `mpx::mpi` (CMake), `mpx-mpi` (pkg-config) or the Conan component `mpi`, which bring MPI
/// and set MPX_HAS_MPI. NCCL's sync for GPUs is `<mpx/dist/nccl_gradient_sync.cuh>` (a .cu file,
/// `mpx::nccl`). docs/distributed.md is the guide.

#include "mpx/config.hpp"
#if !MPX_HAS_MPI
#error \
    "<mpx/dist.hpp> needs MPI: link the mpx::mpi target (defined when CMake finds MPI; pkg-config: mpx-mpi), or without either build with your MPI's compiler wrapper (mpicxx) and -DMPX_HAS_MPI=1; programs that may also run without MPI include <mpx/mpx.hpp> and <mpx/experiment/data_parallel_job.hpp>"
#endif  // !MPX_HAS_MPI

#include "mpx/mpx.hpp"

#include "mpx/dist/bucket_schedule.hpp"
#include "mpx/dist/buckets.hpp"
#include "mpx/dist/communicator.hpp"
#include "mpx/dist/environment.hpp"
#include "mpx/dist/model_signature.hpp"
#include "mpx/dist/mpi_gradient_sync.hpp"
#include "mpx/dist/run.hpp"
#include "mpx/experiment/data_parallel_job.hpp"
