// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A consumer of the installed `mpi` component: trains a tiny MLP data-parallel over however many
// ranks it is started with (one, without mpirun) and fails unless the loss falls.
#include <cstdio>

#include <mpx/dist/mpi_gradient_sync.hpp>
#include <mpx/dist/run.hpp>
#include <mpx/mpx.hpp>

int main(int argc, char** argv) {
  return mpx::dist::run(argc, argv, [](mpx::dist::Communicator& comm) {
    mpx::nn::Sequential model{mpx::nn::Linear<mpx::bf16_mixed, mpx::nn::Activation::ReLU>(2, 16),
                              mpx::nn::Linear<mpx::fp32>(16, 1)};
    model.initialize(1);
    mpx::nn::MSELoss<mpx::fp32> loss;
    mpx::optim::SGD optimizer(model, {.lr = 0.1});
    mpx::dist::MpiGradientSync sync(comm, model);
    mpx::Trainer trainer(model, loss, optimizer, sync);
    // y = x0 - x1 on a fixed grid, the same batch on every rank.
    mpx::Tensor<float> x(mpx::Shape{16, 2});
    mpx::Tensor<float> y(mpx::Shape{16, 1});
    for (int i = 0; i < 16; ++i) {
      x[2 * i] = static_cast<float>(i % 4) / 4.0f;
      x[2 * i + 1] = static_cast<float>(i / 4) / 4.0f;
      y[i] = x[2 * i] - x[2 * i + 1];
    }
    double first = 0.0, last = 0.0;
    for (int step = 0; step < 50; ++step) {
      last = trainer.step(x, y).loss;
      if (step == 0) first = last;
    }
    if (comm.rank() == 0)
      std::printf("data_parallel_check: %d rank(s), loss %.5f -> %.5f\n", comm.size(), first, last);
    return last < 0.5 * first ? 0 : 1;
  });
}
