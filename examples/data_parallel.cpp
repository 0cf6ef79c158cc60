// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Data-parallel training over MPI, complete: Fashion-MNIST in bf16_mixed on N ranks, sharded
// batches, epochs that roll over, a checkpoint every 50 steps, and a resume from it on any number of
// ranks. Run it under mpirun (docs/distributed.md):
//   OMP_NUM_THREADS=1 mpirun -np 2 data_parallel --checkpoint run.safetensors --stop-after 120
//   OMP_NUM_THREADS=1 mpirun -np 3 data_parallel --checkpoint run.safetensors   # resumes on 3 ranks
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include <mpx/dist.hpp>

using P = mpx::bf16_mixed;

int main(int argc, char** argv) {
  const mpx::experiment::Usage usage("data_parallel",
                                     "[--checkpoint PATH] [--epochs N] [--stop-after STEPS]");
  std::string checkpoint = "data_parallel.safetensors";
  int epochs = 2;
  long long stop_after = 0;  // > 0: end after this step, as a job killed there would
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    const std::string value = usage.value_after(argc, argv, i);  // --help prints the usage and exits
    if (option != "--checkpoint" && option != "--epochs" && option != "--stop-after")
      usage.fail("unknown option " + option);
    if (option == "--checkpoint") checkpoint = value;
    if (option == "--epochs") epochs = static_cast<int>(usage.number(option, value, 1, 1000));
    if (option == "--stop-after") stop_after = static_cast<long long>(usage.number(option, value, 1, 1e9));
  }
  // Every rank runs this body; an exception on any rank ends the whole job with its message.
  return mpx::dist::run(argc, argv, [&](mpx::dist::Communicator& comm) {
    const mpx::data::FashionMnist data = mpx::data::load_fashion_mnist();  // the same on every rank
    const mpx::data::Dataset train_set = data.train.subset(0, 8192);
    // The same model from the same seed on every rank (the sync checks that they agree).
    mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(784, 256),
                              mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(256, 128),
                              mpx::nn::Linear<mpx::fp32>(128, 10)};
    model.initialize(42);
    mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
    mpx::optim::AdamW optimizer(model, {.lr = 1e-3, .weight_decay = 1e-4});
    mpx::dist::MpiGradientSync sync(comm, model);  // averages gradients across the ranks
    mpx::Trainer trainer(model, loss, optimizer, sync);
    // Each global batch is 64 x N samples; rank r trains on its 64 (rows [64 r, 64 r + 64)).
    mpx::data::Batcher batcher(train_set, {.batch_size = 64,
                                           .seed = 1,
                                           .last_batch = mpx::data::LastBatch::Drop,
                                           .shard = {comm.rank(), comm.size()}});
    // A checkpoint written by any number of ranks resumes here: weights, optimizer, loss scale,
    // step count and the batcher's global position (samples dealt to all ranks together).
    if (std::filesystem::exists(checkpoint)) {
      const mpx::io::LoadedCheckpoint loaded = mpx::io::load_checkpoint(checkpoint, trainer);
      mpx::io::restore_batcher(batcher, loaded.metadata);
      if (comm.rank() == 0)
        std::printf("resumed at step %lld (epoch %llu, sample %lld) with %d rank(s)\n",
                    static_cast<long long>(trainer.steps()), static_cast<unsigned long long>(batcher.epoch()),
                    static_cast<long long>(batcher.position()), comm.size());
    }
    const auto save = [&] {  // rank 0 writes atomically; the others wait until the file is in place
      if (comm.rank() == 0) mpx::io::save_checkpoint(checkpoint, trainer, mpx::io::batcher_state(batcher));
      comm.barrier();
    };
    mpx::Tensor<float> x;
    mpx::Tensor<std::int32_t> y;
    mpx::StepResult last;
    while (batcher.epoch() < static_cast<std::uint64_t>(epochs)) {
      if (!batcher.next(x, y)) {  // the epoch is over (its last partial global batch is dropped)
        batcher.start_epoch(batcher.epoch() + 1);
        continue;
      }
      last = trainer.step(x, y);  // the loss is already the mean over all ranks
      if (trainer.steps() % 50 == 0) save();
      if (trainer.steps() == stop_after) {
        save();
        if (comm.rank() == 0) std::printf("stopped at step %lld\n", static_cast<long long>(stop_after));
        return;
      }
    }
    save();
    // The weights are the same bits on every rank; rank 0 reports.
    const mpx::experiment::Evaluation test = mpx::experiment::evaluate(model, loss, data.test);
    if (comm.rank() == 0)
      std::printf("%d rank(s), %lld steps: training loss %.4f, test accuracy %.2f%%\n", comm.size(),
                  static_cast<long long>(trainer.steps()), last.loss, 100.0 * test.accuracy);
  });
}
