// expect: call it from a translation unit that nvcc compiles
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// make_gradient_sync<mpx::Cuda> in a C++ translation unit of a build with MPI: it cannot make NCCL's
// sync there, and a second definition beside the nvcc units' one could win at link time. Compiled with
// MPX_HAS_MPI=1 and MPI's headers (only where CMake found MPI).
#include <mpx/backend/cpu/backend.hpp>
#include <mpx/experiment/data_parallel_job.hpp>
#include <mpx/experiment/models.hpp>

// All make_gradient_sync reads of a model on the GPU before the device check: its precision.
struct ModelOnTheGpu {
  using precision = mpx::fp32;
};

int main() {
  const mpx::experiment::DataParallelJob job;
#ifdef MPX_COMPILE_FAIL_CONTROL
  auto model = mpx::experiment::mlp3<mpx::fp32>(4, 4, 4, 2);
  const auto sync = mpx::experiment::make_gradient_sync<mpx::Host>(job, model);
#else
  ModelOnTheGpu model;
  const auto sync = mpx::experiment::make_gradient_sync<mpx::Cuda>(job, model);
#endif
  return sync == nullptr ? 0 : 1;
}
