// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Data parallel on GPUs over NCCL (one rank per GPU; the ranks share GPUs round-robin when there are
// fewer GPUs than ranks). Checks, on the values every rank shares: (1) weights stay bit-identical on
// every rank after 10 steps in fp32 and bf16_mixed; (2) each rank's result equals one process
// training on the same global batch as micro-batches, within fp32 rounding; (3) with one rank, the
// sync changes nothing: bit-identical to a trainer without it; (4) with sync_batch_norm, a model with
// BatchNorm tracks one process on the whole global batch. Exits 77 (skipped) without a device.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <vector>

#include <mpx/cuda.hpp>
#include <mpx/dist/communicator.hpp>
#include <mpx/dist/environment.hpp>
#include <mpx/dist/model_signature.hpp>
#include <mpx/dist/nccl_gradient_sync.cuh>

#include "dist_support.hpp"

namespace {

int failures = 0;

void check(bool ok, const char* what, int rank) {
  if (!ok) {
    std::fprintf(stderr, "nccl_gpu_test: rank %d: FAILED: %s\n", rank, what);
    ++failures;
  }
}

template <class P>
auto make_gpu_model() {
  mpx::nn::Sequential model{
      mpx::nn::Linear<P, mpx::nn::Activation::ReLU, mpx::Cuda>(mpx_dist_test::features, 64),
      mpx::nn::Linear<P, mpx::nn::Activation::ReLU, mpx::Cuda>(64, 64),
      mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::None, mpx::Cuda>(64, mpx_dist_test::classes)};
  model.initialize(7);
  return model;
}

template <class Model>
std::uint64_t gpu_state_hash(Model& model) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  model.for_each_parameter([&](std::string_view, auto& p) {
    const auto host = mpx::to<mpx::Host>(p.master());
    mpx::dist::detail::fnv1a(hash, host.data(), host.size_bytes());
  });
  return hash;
}

struct Result {
  std::vector<double> losses;
  std::uint64_t hash = 0;
};

// `sync`: with NcclGradientSync over `comm`, each rank on its shard; otherwise one process on the
// global batch as `comm.size()` micro-batches.
template <class P>
Result train(const mpx::dist::Communicator& comm, bool sync_on, int steps) {
  const mpx::data::Dataset data = mpx_dist_test::make_dataset(2048, 5u);
  auto model = make_gpu_model<P>();
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32, mpx::Cuda> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  constexpr std::int64_t batch = 32;
  const std::int64_t shards = comm.size();
  Result result;
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  if (sync_on) {
    mpx::dist::NcclGradientSync sync(comm, model, {.bucket_bytes = 8192});
    mpx::Trainer trainer(model, loss, optimizer, sync);
    mpx::data::Batcher batcher(data, {.batch_size = batch,
                                      .seed = 3,
                                      .last_batch = mpx::data::LastBatch::Drop,
                                      .shard = {comm.rank(), shards}});
    for (int s = 0; s < steps && batcher.next(x, y); ++s) {
      const auto gx = mpx::to<mpx::Cuda>(x);
      const auto gy = mpx::to<mpx::Cuda>(y);
      result.losses.push_back(trainer.step(gx, gy).loss);
    }
  } else {
    mpx::Trainer trainer(model, loss, optimizer);
    using Batch = typename decltype(trainer)::Batch;
    std::vector<mpx::data::Batcher> batchers;
    for (std::int64_t r = 0; r < shards; ++r)
      batchers.emplace_back(data, mpx::data::Batcher::Options{.batch_size = batch,
                                                              .seed = 3,
                                                              .last_batch = mpx::data::LastBatch::Drop,
                                                              .shard = {r, shards}});
    for (int s = 0; s < steps; ++s) {
      using Input = typename decltype(model)::input_type;  // micro-batches come in the model's input type
      mpx::Tensor<Input> xi;
      std::vector<mpx::Tensor<Input, mpx::Cuda>> xs;
      std::vector<mpx::Tensor<std::int32_t, mpx::Cuda>> ys;
      for (auto& b : batchers) {
        if (!b.next(xi, y)) return result;
        xs.push_back(mpx::to<mpx::Cuda>(xi));
        ys.push_back(mpx::to<mpx::Cuda>(y));
      }
      std::vector<Batch> batches;
      for (std::size_t i = 0; i < xs.size(); ++i) batches.push_back(Batch{xs[i], ys[i]});
      result.losses.push_back(trainer.step(std::span<const Batch>(batches)).loss);
    }
  }
  result.hash = gpu_state_hash(model);
  return result;
}

bool same_on_every_rank(const mpx::dist::Communicator& comm, std::uint64_t value) {
  for (std::uint64_t theirs : comm.all_gather(value))
    if (theirs != value) return false;
  return true;
}

template <class P>
void run_case(const mpx::dist::Communicator& comm, const char* name) {
  const Result distributed = train<P>(comm, true, 10);
  check(distributed.losses.size() == 10, name, comm.rank());
  check(same_on_every_rank(comm, distributed.hash), "weights bit-identical on every rank", comm.rank());
  const Result single = train<P>(comm, false, 10);
  if (comm.size() == 1) {
    check(single.hash == distributed.hash, "one rank: bit-identical to no sync", comm.rank());
    check(single.losses == distributed.losses, "one rank: same losses as no sync", comm.rank());
  }
  for (std::size_t s = 0; s < distributed.losses.size() && s < single.losses.size(); ++s) {
    // fp32 sums in another order (NCCL's chain vs accumulation): a relative 1e-4 after 10 steps.
    check(std::fabs(distributed.losses[s] - single.losses[s]) <= 1e-4 * std::fabs(single.losses[s]) + 1e-6,
          "losses match one process on the global batch", comm.rank());
  }
  check(distributed.losses.back() < distributed.losses.front(), "the loss fell", comm.rank());
  if (comm.rank() == 0) {
    std::printf("nccl_gpu_test: %s on %d rank(s): loss %.6f -> %.6f\n", name, comm.size(),
                distributed.losses.front(), distributed.losses.back());
  }
}

// SyncBatchNorm over NCCL (SyncOptions::sync_batch_norm): a model with BatchNorm, each rank on its
// shard, against one process on the whole global batch (one batch: BatchNorm's statistics span it).
template <class P>
Result train_batch_norm(const mpx::dist::Communicator& comm, bool sync_on, int steps) {
  const mpx::data::Dataset data = mpx_dist_test::make_dataset(2048, 5u);
  mpx::nn::Sequential model{
      mpx::nn::Linear<P, mpx::nn::Activation::None, mpx::Cuda>(mpx_dist_test::features, 64),
      mpx::nn::BatchNorm2d<P, mpx::Cuda>(64), mpx::nn::ReLU<P, mpx::Cuda>(),
      mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::None, mpx::Cuda>(64, mpx_dist_test::classes)};
  model.initialize(7);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32, mpx::Cuda> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1, .momentum = 0.9});
  constexpr std::int64_t batch = 32;
  Result result;
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  const auto run = [&](auto& trainer, mpx::data::Batcher& batcher) {
    for (int s = 0; s < steps && batcher.next(x, y); ++s) {
      const auto gx = mpx::to<mpx::Cuda>(x);
      const auto gy = mpx::to<mpx::Cuda>(y);
      result.losses.push_back(trainer.step(gx, gy).loss);
    }
  };
  if (sync_on) {
    mpx::dist::NcclGradientSync sync(comm, model, {.broadcast_buffers = false, .sync_batch_norm = true});
    mpx::Trainer trainer(model, loss, optimizer, sync);
    mpx::data::Batcher batcher(data, {.batch_size = batch,
                                      .seed = 3,
                                      .last_batch = mpx::data::LastBatch::Drop,
                                      .shard = {comm.rank(), comm.size()}});
    run(trainer, batcher);
  } else {
    mpx::Trainer trainer(model, loss, optimizer);
    mpx::data::Batcher batcher(
        data, {.batch_size = batch * comm.size(), .seed = 3, .last_batch = mpx::data::LastBatch::Drop});
    run(trainer, batcher);
  }
  result.hash = gpu_state_hash(model);
  std::uint64_t buffers = 0xcbf29ce484222325ull;  // the running statistics: every rank's own, not broadcast
  mpx::nn::for_each_buffer(model, [&](std::string_view, auto& tensor) {
    const auto host = mpx::to<mpx::Host>(tensor);
    mpx::dist::detail::fnv1a(buffers, host.data(), host.size_bytes());
  });
  result.hash ^= buffers * 0x100000001b3ull;
  return result;
}

template <class P>
void run_sync_batch_norm_case(const mpx::dist::Communicator& comm, const char* name) {
  const Result distributed = train_batch_norm<P>(comm, true, 10);
  check(same_on_every_rank(comm, distributed.hash),
        "sync_batch_norm: weights and running statistics the same on every rank", comm.rank());
  const Result whole = train_batch_norm<P>(comm, false, 10);
  check(distributed.losses.size() == whole.losses.size(), "sync_batch_norm: as many steps", comm.rank());
  for (std::size_t s = 0; s < distributed.losses.size() && s < whole.losses.size(); ++s) {
    check(std::fabs(distributed.losses[s] - whole.losses[s]) <= 1e-4 * std::fabs(whole.losses[s]) + 1e-6,
          "sync_batch_norm: losses match one process on the whole global batch", comm.rank());
  }
  if (comm.rank() == 0) {
    std::printf("nccl_gpu_test: sync_batch_norm %s on %d rank(s): loss %.6f -> %.6f\n", name, comm.size(),
                distributed.losses.front(), distributed.losses.back());
  }
}

}  // namespace

int main(int argc, char** argv) {
  mpx::dist::Environment environment(&argc, &argv);
  mpx::dist::Communicator comm;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (comm.rank() == 0) std::printf("nccl_gpu_test: no CUDA device present; skipping (exit code 77)\n");
    return 77;
  }
  // One GPU per rank (shared round-robin when there are fewer), chosen before mpx's first CUDA call.
  MPX_CUDA_CHECK(cudaSetDevice(comm.rank() % devices));
  run_case<mpx::fp32>(comm, "fp32");
  run_case<mpx::bf16_mixed>(comm, "bf16_mixed");
  run_sync_batch_norm_case<mpx::fp32>(comm, "fp32");
  int worst = failures;
  MPI_Allreduce(&failures, &worst, 1, MPI_INT, MPI_MAX, comm.native());
  if (comm.rank() == 0) std::printf("nccl_gpu_test: %s\n", worst == 0 ? "passed" : "FAILED");
  return worst == 0 ? 0 : 1;
}
