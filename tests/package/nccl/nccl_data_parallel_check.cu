// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A consumer of the installed `nccl` component, the GPU twin of mpi/data_parallel_check.cpp: prints
// the NCCL it runs with, exits 77 (skipped) without a CUDA device, and otherwise joins NCCL as the
// one rank of a job from a unique id it makes itself (no MPI), trains a tiny MLP on the GPU through
// dist::NcclGradientSync and fails unless the loss falls.
#include <nccl.h>

#include <cstdio>

#include <mpx/cuda.hpp>
#include <mpx/dist/nccl_gradient_sync.cuh>

static_assert(MPX_HAS_NCCL == 1, "mpx::nccl defines MPX_HAS_NCCL=1");

int main() {
  int version = 0;  // major * 10000 + minor * 100 + patch
  mpx::cuda::check_nccl(ncclGetVersion(&version), "ncclGetVersion", 0);
  std::printf("nccl_data_parallel_check: NCCL %d.%d.%d\n", version / 10000, version % 10000 / 100,
              version % 100);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("nccl_data_parallel_check: no CUDA device; skipped (exit code 77)\n");
    return 77;
  }

  mpx::nn::Sequential model{mpx::nn::Linear<mpx::bf16_mixed, mpx::nn::Activation::ReLU, mpx::Cuda>(2, 16),
                            mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::None, mpx::Cuda>(16, 1)};
  model.initialize(1);
  mpx::nn::MSELoss<mpx::fp32, mpx::Cuda> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::dist::NcclBootstrap bootstrap{.rank = 0, .size = 1};  // one rank: no id to send to others
  mpx::cuda::check_nccl(ncclGetUniqueId(&bootstrap.id), "ncclGetUniqueId", bootstrap.rank);
  mpx::dist::NcclGradientSync sync(bootstrap, model);
  mpx::Trainer trainer(model, loss, optimizer, sync);
  // y = x0 - x1 on a fixed grid.
  mpx::Tensor<float> x(mpx::Shape{16, 2});
  mpx::Tensor<float> y(mpx::Shape{16, 1});
  for (int i = 0; i < 16; ++i) {
    x[2 * i] = static_cast<float>(i % 4) / 4.0f;
    x[2 * i + 1] = static_cast<float>(i / 4) / 4.0f;
    y[i] = x[2 * i] - x[2 * i + 1];
  }
  const auto x_gpu = mpx::to<mpx::Cuda>(x);
  const auto y_gpu = mpx::to<mpx::Cuda>(y);
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 50; ++step) {
    last = trainer.step(x_gpu, y_gpu).loss;
    if (step == 0) first = last;
  }
  std::printf("nccl_data_parallel_check: 1 rank on the GPU, loss %.5f -> %.5f\n", first, last);
  return last < 0.5 * first ? 0 : 1;
}
