// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A data-parallel training run in which one rank fails at step 3, for the failure tests
// (tests/cmake/expect_job_failure.cmake runs it under mpirun): `throw` makes that rank throw (the
// job must end, naming the rank), `kill` makes it die by SIGKILL (mpirun must end the others),
// `hang` makes it sleep for an hour, alive (the others must time out, name it and end the job).
// `none` trains to the end and exits 0, which proves the failures come from the injection.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>

#include <mpx/dist/mpi_gradient_sync.hpp>
#include <mpx/dist/run.hpp>
#include <mpx/mpx.hpp>

#include "dist_support.hpp"

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "none";
  // A hang is noticed after 2 s instead of the default 10 minutes.
  mpx::dist::SyncOptions options;
  if (mode == "hang") options.timeout = std::chrono::seconds(2);
  // [data-parallel]
  return mpx::dist::run(argc, argv, [&](mpx::dist::Communicator& comm) {
    const mpx::data::Dataset data = mpx_dist_test::make_dataset(512, 5u);  // the same on every rank
    auto model = mpx_dist_test::make_model<mpx::fp32>(7);                  // from the same seed
    mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
    mpx::optim::SGD optimizer(model, {.lr = 0.05});
    mpx::dist::MpiGradientSync sync(comm, model, options);  // checks that every rank holds the same model
    mpx::Trainer trainer(model, loss, optimizer, sync);
    // Rank r takes samples [16 r, 16 r + 16) of each global batch of 16 x world size.
    mpx::data::Batcher batcher(data, {.batch_size = 16,
                                      .seed = 1,
                                      .last_batch = mpx::data::LastBatch::Drop,
                                      .shard = {comm.rank(), comm.size()}});
    // [data-parallel]
    const int victim = comm.size() - 1;
    mpx::Tensor<float> x;
    mpx::Tensor<std::int32_t> y;
    for (int step = 1; step <= 8 && batcher.next(x, y); ++step) {
      if (comm.rank() == victim && step == 3) {
        if (mode == "throw") throw mpx::error("injected failure at step 3");
        if (mode == "kill") std::raise(SIGKILL);
        if (mode == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
      }
      const mpx::StepResult result = trainer.step(x, y);
      if (comm.rank() == 0) std::printf("step %d loss %.6f\n", step, result.loss);
    }
    return 0;
  });
}
