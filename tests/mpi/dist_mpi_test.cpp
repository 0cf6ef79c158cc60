// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Data-parallel training over MPI, run by CTest under mpirun with 2 and 3 ranks (label `mpi`). Every
// rank runs every test case in the same order (their collectives must match), and every check is
// taken on values all ranks share, so the ranks pass or fail together; main() returns the worst
// rank's result.
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <mpx/dist/bucket_schedule.hpp>
#include <mpx/dist/buckets.hpp>
#include <mpx/dist/communicator.hpp>
#include <mpx/dist/environment.hpp>
#include <mpx/dist/mpi_gradient_sync.hpp>
#include <mpx/mpx.hpp>

#include "dist_support.hpp"

namespace {

using namespace mpx_dist_test;
using Catch::Matchers::Contains;

constexpr std::int64_t local_batch = 32;
constexpr int steps = 12;

struct Run {
  std::vector<double> losses;      // the global mean loss of each step, as this rank reports it
  std::vector<double> grad_norms;  // the norm of each step's averaged gradient
  std::vector<bool> stepped;       // whether each step was taken
  std::vector<float> scales;       // the loss scale after each step
  std::uint64_t hash = 0;          // of the weights and optimizer state after the run
};

/// The model of the runs: `make_model`, or `make_dropout_model` when `WithDropout`.
template <class P, bool WithDropout>
auto test_model() {
  if constexpr (WithDropout) {
    return make_dropout_model<P>(7);
  } else {
    return make_model<P>(7);
  }
}

/// Trains `step_count` steps of a model in precision P on this rank's shard of each global batch.
template <class P, bool WithDropout = false>
Run train(const mpx::dist::Communicator& comm, const mpx::dist::SyncOptions& sync_options,
          int step_count = steps) {
  const mpx::data::Dataset data = make_dataset(1024, 5u);
  auto model = test_model<P, WithDropout>();
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2, .weight_decay = 1e-2});
  mpx::dist::MpiGradientSync sync(comm, model, sync_options);
  using Trainer = mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)>;
  Trainer trainer(model, loss, optimizer, sync, {.max_grad_norm = 1.0});
  mpx::data::Batcher batcher(data, {.batch_size = local_batch,
                                    .seed = 3,
                                    .last_batch = mpx::data::LastBatch::Drop,
                                    .shard = {comm.rank(), comm.size()}});
  Run run;
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  for (int s = 0; s < step_count; ++s) {
    if (!batcher.next(x, y)) batcher.start_epoch(batcher.epoch() + 1), batcher.next(x, y);
    const mpx::StepResult result = trainer.step(x, y);
    run.losses.push_back(result.loss);
    run.grad_norms.push_back(result.grad_norm);
    run.stepped.push_back(result.stepped);
    run.scales.push_back(trainer.scaler().scale());
  }
  run.hash = state_hash(model);
  return run;
}

/// One process trains on the same global batches as `world_size` ranks of `train`: as one batch
/// of world_size x 32, or (`accumulate`) as world_size micro-batches of 32, rank r's rows as
/// micro-batch r.
template <class P, bool WithDropout = false>
Run train_alone(int world_size, bool accumulate, int step_count) {
  const mpx::data::Dataset data = make_dataset(1024, 5u);
  auto model = test_model<P, WithDropout>();
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2, .weight_decay = 1e-2});
  mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = 1.0});
  mpx::data::Batcher batcher(
      data, {.batch_size = local_batch * world_size, .seed = 3, .last_batch = mpx::data::LastBatch::Drop});
  Run run;
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  for (int s = 0; s < step_count; ++s) {
    if (!batcher.next(x, y)) batcher.start_epoch(batcher.epoch() + 1), batcher.next(x, y);
    const mpx::StepResult result =
        accumulate ? trainer.step(x, y, mpx::MicroBatches{world_size}) : trainer.step(x, y);
    run.losses.push_back(result.loss);
    run.grad_norms.push_back(result.grad_norm);
    run.stepped.push_back(result.stepped);
    run.scales.push_back(trainer.scaler().scale());
  }
  run.hash = state_hash(model);
  return run;
}

/// Whether every rank has the same `value` (gathered from all).
bool same_on_every_rank(const mpx::dist::Communicator& comm, std::uint64_t value) {
  for (std::uint64_t theirs : comm.all_gather(value))
    if (theirs != value) return false;
  return true;
}

std::uint64_t hash_losses(const std::vector<double>& losses) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  mpx::dist::detail::fnv1a(hash, losses.data(), losses.size() * sizeof(double));
  return hash;
}

}  // namespace

TEMPLATE_TEST_CASE("Weights, optimizer state and reported losses stay bit-identical on every rank", "[mpi]",
                   mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed) {
  mpx::dist::Communicator comm;
  // Small buckets: the three layers' gradients go in several buckets, launched during backward; with
  // each reduction, with a progress thread advancing them, and without a timeout (no arrival
  // messages). Buckets of 12 bytes hold one gradient each; the output bias's 4 elements split into
  // shards of 1, 1 and 2 over 3 ranks.
  using mpx::dist::Reduction;
  const mpx::dist::SyncOptions configurations[] = {
      {.bucket_bytes = 2048, .reduction = Reduction::fixed_order},
      {.bucket_bytes = 2048, .reduction = Reduction::mpi_allreduce},
      {.bucket_bytes = 2048, .reduction = Reduction::fixed_order, .progress_thread = true},
      {.bucket_bytes = 2048, .reduction = Reduction::fixed_order_sharded},
      {.bucket_bytes = 12, .reduction = Reduction::fixed_order_sharded, .progress_thread = true},
      {.bucket_bytes = 2048, .reduction = Reduction::fixed_order, .timeout = std::chrono::milliseconds(0)}};
  std::vector<std::uint64_t> hashes;
  for (const mpx::dist::SyncOptions& options : configurations) {
    CAPTURE(mpx::dist::reduction_name(options.reduction), options.bucket_bytes, options.progress_thread,
            options.timeout.count(), comm.size());
    const Run run = train<TestType>(comm, options);
    hashes.push_back(run.hash);
    CHECK(same_on_every_rank(comm, run.hash));
    CHECK(same_on_every_rank(comm, hash_losses(run.losses)));
    // Training happened: the global loss fell.
    CHECK(run.losses.back() < 0.8 * run.losses.front());
  }
  CHECK(hashes[2] == hashes[0]);  // the progress thread changes when, not what, is summed
  CHECK(hashes[3] == hashes[0]);  // sharded: the same sums in the same order, on the shard's owner
  CHECK(hashes[4] == hashes[0]);
  CHECK(hashes[5] == hashes[0]);  // the timeout changes how long a rank waits, not what it sums
}

TEMPLATE_TEST_CASE(
    "N ranks x batch 32 equal one process's N micro-batches of 32 bit for bit, dropout included", "[mpi]",
    mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed) {
  // A few hundred steps: fp16's dynamic scale grows and backs off, and a difference of one rounding
  // (a seed of scale / N rounded into fp16 below 2^-14 is not half of scale's) shows in the gradient
  // norm within a few dozen steps. Every micro-batch is seeded with the whole scale and the sum is
  // divided once, as the ranks do; micro-batch r is numbered r, as rank r's is, so dropout matches.
  constexpr int long_run = 300;
  mpx::dist::Communicator comm;
  const Run distributed = train<TestType, true>(comm, {.bucket_bytes = 4096}, long_run);
  CHECK(distributed.losses.back() < 0.8 * distributed.losses.front());  // it trained
  if (comm.rank() != 0) return;
  const Run alone = train_alone<TestType, true>(comm.size(), true, long_run);
  for (int s = 0; s < long_run; ++s) {
    const auto i = static_cast<std::size_t>(s);
    CAPTURE(s, distributed.grad_norms[i], alone.grad_norms[i], distributed.scales[i], alone.scales[i]);
    REQUIRE(alone.grad_norms[i] == distributed.grad_norms[i]);
    REQUIRE(alone.losses[i] == distributed.losses[i]);
    REQUIRE(alone.scales[i] == distributed.scales[i]);
  }
  CHECK(alone.stepped == distributed.stepped);
  CHECK(alone.hash == distributed.hash);
}

TEST_CASE("N ranks x batch 32 track one process's whole batch of N x 32 to fp32 rounding", "[mpi]") {
  mpx::dist::Communicator comm;
  const Run distributed = train<mpx::fp32>(comm, {.bucket_bytes = 4096});
  if (comm.rank() != 0) return;
  // One batch of N x 32: its GEMMs sum over the whole batch in another order, so the runs differ by
  // fp32 rounding (~6e-8 relative per operation), which grows through 12 AdamW steps; 1e-4 relative
  // bounds it with a wide margin while still catching a wrong average (a missing / N is a factor).
  const Run whole = train_alone<mpx::fp32>(comm.size(), false, steps);
  for (int s = 0; s < steps; ++s) {
    const auto i = static_cast<std::size_t>(s);
    CAPTURE(s, distributed.losses[i], whole.losses[i]);
    CHECK(std::fabs(whole.losses[i] - distributed.losses[i]) <= 1e-4 * distributed.losses[i]);
  }
}

namespace {
/// Plants +inf in one gradient on one rank at one step, before delegating to the real sync: an
/// overflow in that rank's backward, as far as the reduction can tell.
template <class Grad>
class OverflowOnOneRank final : public mpx::GradientSync<mpx::Host, Grad> {
 public:
  OverflowOnOneRank(mpx::GradientSync<mpx::Host, Grad>& inner, bool inject_here, int at_step)
      : inner_(inner), inject_here_(inject_here), at_step_(at_step) {}
  int rank() const override { return inner_.rank(); }
  void begin_backward() override { inner_.begin_backward(); }
  void gradients_final(typename mpx::GradientSync<mpx::Host, Grad>::GradientList g) override {
    inner_.gradients_final(g);
  }
  void finish(typename mpx::GradientSync<mpx::Host, Grad>::GradientList g, mpx::StepScalars* s,
              std::span<float> amaxes) override {
    if (inject_here_ && ++step_ == at_step_) (*g.front())[0] = std::numeric_limits<Grad>::infinity();
    if (!inject_here_) ++step_;
    inner_.finish(g, s, amaxes);
  }

 private:
  mpx::GradientSync<mpx::Host, Grad>& inner_;
  bool inject_here_;
  int at_step_;
  int step_ = 0;
};
}  // namespace

TEST_CASE("An overflow on one rank skips the step on every rank and backs the scale off everywhere",
          "[mpi]") {
  mpx::dist::Communicator comm;
  const mpx::data::Dataset data = make_dataset(1024, 5u);
  auto model = make_model<mpx::fp16_mixed>(7);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  // Without overlap, so that the planted inf is in the gradient before its bucket is packed.
  mpx::dist::MpiGradientSync sync(comm, model, {.bucket_bytes = 2048, .overlap = false});
  constexpr int fault_step = 4;
  OverflowOnOneRank<float> faulty(sync, comm.rank() == comm.size() - 1, fault_step);
  mpx::Trainer trainer(model, loss, optimizer, faulty);
  mpx::data::Batcher batcher(data, {.batch_size = local_batch,
                                    .seed = 3,
                                    .last_batch = mpx::data::LastBatch::Drop,
                                    .shard = {comm.rank(), comm.size()}});
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  for (int s = 1; s <= 6; ++s) {
    REQUIRE(batcher.next(x, y));
    const std::uint64_t before = state_hash(model);
    const float scale_before = trainer.scaler().scale();
    const mpx::StepResult result = trainer.step(x, y);
    CAPTURE(s, comm.rank());
    CHECK(result.stepped == (s != fault_step));
    CHECK(same_on_every_rank(comm, result.stepped ? 1u : 0u));
    if (s == fault_step) {
      CHECK(state_hash(model) == before);  // nothing the optimizer owns changed
      CHECK(trainer.scaler().scale() == scale_before * 0.5f);
      CHECK(std::isfinite(result.loss));  // the loss was fine; only the gradient overflowed
    }
    CHECK(same_on_every_rank(comm, static_cast<std::uint64_t>(trainer.scaler().state().steps_skipped)));
    CHECK(same_on_every_rank(comm, state_hash(model)));
  }
}

TEST_CASE(
    "The weight average stays bit-identical on every rank, a skip on one rank leaving it unchanged on all",
    "[mpi][weight_average]") {
  mpx::dist::Communicator comm;
  const mpx::data::Dataset data = make_dataset(1024, 5u);
  auto model = make_model<mpx::fp16_mixed>(7);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  mpx::dist::MpiGradientSync sync(comm, model, {.bucket_bytes = 2048, .overlap = false});
  constexpr int fault_step = 3;
  OverflowOnOneRank<float> faulty(sync, comm.rank() == comm.size() - 1, fault_step);
  mpx::Trainer trainer(model, loss, optimizer, faulty);
  // No communication: each rank averages its own weights, which are the same bits everywhere.
  auto& average = trainer.keep_weight_average({.decay = 0.9, .warmup = true});
  mpx::data::Batcher batcher(data, {.batch_size = local_batch,
                                    .seed = 3,
                                    .last_batch = mpx::data::LastBatch::Drop,
                                    .shard = {comm.rank(), comm.size()}});
  const auto average_hash = [&] {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    average.for_each([&](std::string_view, const mpx::Tensor<float>& t) {
      mpx::dist::detail::fnv1a(hash, t.data(), t.size_bytes());
    });
    return hash;
  };
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  for (int s = 1; s <= 5; ++s) {
    REQUIRE(batcher.next(x, y));
    const std::uint64_t before = average_hash();
    const mpx::StepResult result = trainer.step(x, y);
    CAPTURE(s, comm.rank());
    CHECK(result.stepped == (s != fault_step));
    CHECK((average_hash() == before) == (s == fault_step));
    CHECK(same_on_every_rank(comm, average_hash()));
    CHECK(same_on_every_rank(comm, static_cast<std::uint64_t>(average.updates())));
  }
  CHECK(average.updates() == 4);
}

TEST_CASE("A non-finite input on one rank skips the step on every rank", "[mpi]") {
  mpx::dist::Communicator comm;
  const mpx::data::Dataset data = make_dataset(256, 5u);
  auto model = make_model<mpx::bf16_mixed>(7);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.05, .momentum = 0.9});
  mpx::dist::MpiGradientSync sync(comm, model);
  mpx::Trainer trainer(model, loss, optimizer, sync);
  mpx::data::Batcher batcher(data, {.batch_size = 16,
                                    .seed = 3,
                                    .last_batch = mpx::data::LastBatch::Drop,
                                    .shard = {comm.rank(), comm.size()}});
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  REQUIRE(batcher.next(x, y));
  if (comm.rank() == 0) x[3] = std::numeric_limits<float>::quiet_NaN();
  const std::uint64_t before = state_hash(model);
  const mpx::StepResult result = trainer.step(x, y);
  CHECK_FALSE(result.stepped);
  CHECK_FALSE(result.inputs_finite);  // every rank reports it, not only rank 0
  CHECK(state_hash(model) == before);
  CHECK(same_on_every_rank(comm, state_hash(model)));
}

TEST_CASE("Ranks holding different models are refused at construction, naming the ranks", "[mpi]") {
  mpx::dist::Communicator comm;
  auto model = make_model<mpx::fp32>(7, comm.rank() == 1 ? 33 : 32);
  REQUIRE_THROWS_AS(mpx::dist::MpiGradientSync(comm, model), mpx::invalid_argument);
  REQUIRE_THROWS_WITH(
      mpx::dist::MpiGradientSync(comm, model),
      Contains("the ranks hold different models") && Contains("rank 1 has 6 parameter tensors"));
}

TEST_CASE("Ranks with different SyncOptions are refused at construction, naming the ranks", "[mpi]") {
  mpx::dist::Communicator comm;
  auto model = make_model<mpx::fp32>(7);
  const bool odd = comm.rank() == 1;
  REQUIRE_THROWS_WITH(
      mpx::dist::MpiGradientSync(comm, model, {.bucket_bytes = odd ? 4096 : 2048}),
      Contains("the ranks' SyncOptions differ: rank 0 has bucket_bytes 2048, reduction "
               "fixed_order, timeout on, broadcast_buffers true, sync_batch_norm false; rank 1 has "
               "bucket_bytes 4096"));
  REQUIRE_THROWS_WITH(mpx::dist::MpiGradientSync(comm, model,
                                                 {.reduction = odd ? mpx::dist::Reduction::mpi_allreduce
                                                                   : mpx::dist::Reduction::fixed_order}),
                      Contains("rank 1 has bucket_bytes 4194304, reduction mpi_allreduce"));
  REQUIRE_THROWS_WITH(
      mpx::dist::MpiGradientSync(comm, model, {.timeout = std::chrono::milliseconds(odd ? 0 : 1000)}),
      Contains("rank 1 has bucket_bytes 4194304, reduction fixed_order, timeout 0"));
  REQUIRE_THROWS_WITH(mpx::dist::MpiGradientSync(comm, model, {.broadcast_buffers = !odd}),
                      Contains("rank 1 has bucket_bytes 4194304, reduction fixed_order, timeout on, "
                               "broadcast_buffers false"));
  REQUIRE_THROWS_WITH(mpx::dist::MpiGradientSync(comm, model, {.sync_batch_norm = odd}),
                      Contains("rank 1 has bucket_bytes 4194304, reduction fixed_order, timeout on, "
                               "broadcast_buffers true, sync_batch_norm true"));
  // How each rank overlaps or progresses its reductions is its own business.
  REQUIRE_NOTHROW(mpx::dist::MpiGradientSync(comm, model, {.overlap = odd, .progress_thread = odd}));
}

TEST_CASE("Every reduction averages buckets smaller than the world, with empty shards", "[mpi]") {
  // Gradients of 2, 2, 2 and 1 elements, one per bucket (4-byte buckets): over 3 ranks the sharded
  // reduction gives ranks shards of 0, 1 and 1 elements, or 0, 0 and 1. Each rank writes
  // rank-dependent values into the gradients and calls the sync as the trainer does; every rank
  // must end with the fixed-order average, computed here from the same values.
  mpx::dist::Communicator comm;
  mpx::nn::Sequential model{mpx::nn::Linear<mpx::fp32>(1, 2), mpx::nn::Linear<mpx::fp32>(2, 1)};
  model.initialize(1);
  const auto value = [](int rank, std::size_t tensor, std::int64_t i) {
    return 0.1f * static_cast<float>(rank + 1) + 0.37f * static_cast<float>(tensor) +
           0.011f * static_cast<float>(i);
  };
  using mpx::dist::Reduction;
  for (const Reduction reduction :
       {Reduction::fixed_order, Reduction::fixed_order_sharded, Reduction::mpi_allreduce}) {
    CAPTURE(mpx::dist::reduction_name(reduction), comm.size());
    mpx::dist::MpiGradientSync sync(comm, model, {.bucket_bytes = 4, .reduction = reduction});
    REQUIRE(sync.buckets().size() == 4);
    const std::vector<mpx::Tensor<float>*> gradients = mpx::dist::model_gradients<mpx::Tensor<float>>(model);
    for (int step = 0; step < 2; ++step) {  // the second step reuses the buckets
      for (std::size_t t = 0; t < gradients.size(); ++t)
        for (std::int64_t i = 0; i < gradients[t]->numel(); ++i)
          (*gradients[t])[i] = value(comm.rank() + step, t, i);
      mpx::StepScalars scalars;
      scalars.loss_sum = 1.0 + comm.rank();
      sync.begin_backward();
      sync.gradients_final(std::span(gradients).last(2));  // the last layer's, as backward reports
      sync.finish(gradients, &scalars, {});
      for (std::size_t t = 0; t < gradients.size(); ++t) {
        for (std::int64_t i = 0; i < gradients[t]->numel(); ++i) {
          std::vector<float> copies;
          for (int r = 0; r < comm.size(); ++r) copies.push_back(value(r + step, t, i));
          float expected = 0;
          mpx::dist::average_in_rank_order<float>(copies, comm.size(), std::span(&expected, 1));
          CAPTURE(step, t, i);
          if (reduction == Reduction::mpi_allreduce) {
            CHECK((*gradients[t])[i] == Approx(expected).epsilon(1e-6));  // MPI's order of the sum
          } else {
            CHECK((*gradients[t])[i] == expected);
          }
        }
      }
      CHECK(scalars.loss_sum == Approx(1.0 + (comm.size() - 1) / 2.0));
    }
  }
}

TEST_CASE("A sync refuses the gradients of a model it was not built for", "[mpi]") {
  mpx::dist::Communicator comm;
  auto model = make_model<mpx::fp32>(7);
  auto other = make_model<mpx::fp32>(7);  // the same layers, but other tensors
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::SGD optimizer(other, {.lr = 0.1});
  mpx::dist::MpiGradientSync sync(comm, model);
  mpx::Trainer trainer(other, loss, optimizer, sync);
  const mpx::data::Dataset data = make_dataset(64, 5u);
  mpx::data::Batcher batcher(
      data, {.batch_size = 8, .last_batch = mpx::data::LastBatch::Drop, .shard = {comm.rank(), comm.size()}});
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  REQUIRE(batcher.next(x, y));
  // Every rank throws at its first reported layer, before any collective starts.
  REQUIRE_THROWS_WITH(trainer.step(x, y), Contains("this sync was built for"));
}

TEST_CASE("A world of one process trains as a trainer without a sync does, bit for bit", "[mpi]") {
  // MPI_COMM_SELF: each rank is a world of one (average over one = the gradient itself).
  mpx::dist::Communicator self(MPI_COMM_SELF);
  const Run alone = train<mpx::bf16_mixed>(self, {});
  const mpx::data::Dataset data = make_dataset(1024, 5u);
  auto model = make_model<mpx::bf16_mixed>(7);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2, .weight_decay = 1e-2});
  mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = 1.0});
  mpx::data::Batcher batcher(
      data, {.batch_size = local_batch, .seed = 3, .last_batch = mpx::data::LastBatch::Drop});
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    REQUIRE(batcher.next(x, y));
    losses.push_back(trainer.step(x, y).loss);
  }
  CHECK(losses == alone.losses);
  CHECK(state_hash(model) == alone.hash);
}

namespace {
/// A model with BatchNorm: its running statistics are buffers, which each rank updates from its
/// own batches in forward.
auto make_batch_norm_model() {
  mpx::nn::Sequential model{mpx::nn::Linear<mpx::fp32>(features, 32), mpx::nn::BatchNorm2d<mpx::fp32>(32),
                            mpx::nn::Linear<mpx::fp32>(32, classes)};
  model.initialize(7);
  return model;
}

/// FNV-1a of the model's buffers (the running statistics), read through the layers.
template <class Model>
std::uint64_t buffer_hash(Model& model) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  mpx::nn::for_each_buffer(model, [&](std::string_view, auto& tensor) {
    mpx::dist::detail::fnv1a(hash, tensor.data(), static_cast<std::size_t>(tensor.numel()) * sizeof(float));
  });
  return hash;
}

struct BatchNormRun {
  std::vector<std::uint64_t> buffers;  // buffer_hash after each step
  std::vector<double> losses;          // each step's reported loss
  std::vector<float> running;          // the running statistics after the run
  std::uint64_t weights = 0;           // state_hash after the run
};

/// Four SGD steps of the BatchNorm model on this rank's shard of each global batch, with `options`;
/// with no communicator, one process on the whole global batches of `world` ranks.
BatchNormRun train_batch_norm(const mpx::dist::Communicator* comm, const mpx::dist::SyncOptions& options,
                              int world = 1) {
  const mpx::data::Dataset data = make_dataset(1024, 5u);
  auto model = make_batch_norm_model();
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1, .momentum = 0.9});
  std::optional<mpx::dist::MpiGradientSync<float>> sync;
  if (comm != nullptr) sync.emplace(*comm, model, options);
  using Trainer = mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)>;
  std::optional<Trainer> trainer;
  if (sync) {
    trainer.emplace(model, loss, optimizer, *sync);
  } else {
    trainer.emplace(model, loss, optimizer);
  }
  mpx::data::Batcher batcher(
      data, {.batch_size = comm != nullptr ? local_batch : local_batch * world,
             .seed = 3,
             .last_batch = mpx::data::LastBatch::Drop,
             .shard = {comm != nullptr ? comm->rank() : 0, comm != nullptr ? comm->size() : 1}});
  BatchNormRun run;
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  for (int s = 0; s < 4; ++s) {
    REQUIRE(batcher.next(x, y));
    run.losses.push_back(trainer->step(x, y).loss);
    run.buffers.push_back(buffer_hash(model));
  }
  mpx::nn::for_each_buffer(model, [&](std::string_view, auto& tensor) {
    run.running.insert(run.running.end(), tensor.data(), tensor.data() + tensor.numel());
  });
  run.weights = state_hash(model);
  return run;
}
}  // namespace

TEST_CASE("After every step each rank holds rank 0's BatchNorm running statistics (broadcast_buffers)",
          "[mpi]") {
  mpx::dist::Communicator comm;
  const BatchNormRun broadcast = train_batch_norm(&comm, {.broadcast_buffers = true});
  const BatchNormRun own = train_batch_norm(&comm, {.broadcast_buffers = false});
  for (std::size_t s = 0; s < broadcast.buffers.size(); ++s) {
    CAPTURE(s);
    CHECK(same_on_every_rank(comm, broadcast.buffers[s]));
  }
  // Rank 0's statistics are those of its own batches either way (the weights, which its forward
  // reads, agree on every rank in both runs); the other ranks' batches give other statistics.
  const std::vector<std::uint64_t> broadcast_last = comm.all_gather(broadcast.buffers.back());
  const std::vector<std::uint64_t> own_last = comm.all_gather(own.buffers.back());
  CHECK(broadcast_last[0] == own_last[0]);
  CHECK(own_last[1] != own_last[0]);
  CHECK(same_on_every_rank(comm, broadcast.weights));
  CHECK(same_on_every_rank(comm, own.weights));
  CHECK(broadcast.weights == own.weights);  // training normalises with each batch's own statistics
}

TEST_CASE("FP8 amaxes are reduced to their maximum over ranks, so every rank computes the same scales",
          "[mpi][fp8]") {
  // Each rank's inputs are its own batch times (1 + rank): different amaxes on every rank. After each
  // step the newest history entry of every FP8 tensor must be the largest of the ranks' own amaxes,
  // and scales, histories and weights the same on every rank, with and without broadcast_buffers.
  using P = mpx::fp8_hybrid<mpx::DelayedScaling<4>>;
  mpx::dist::Communicator comm;
  const mpx::data::Dataset data = make_dataset(local_batch * comm.size(), 11);
  for (const bool broadcast : {true, false}) {
    CAPTURE(broadcast);
    mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(features, 32),
                              mpx::nn::Linear<P>(32, classes)};
    model.initialize(7);
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    mpx::optim::AdamW optimizer(model, {.lr = 0.01f});
    mpx::dist::MpiGradientSync<float> sync(comm, model, {.broadcast_buffers = broadcast});
    mpx::Trainer trainer(model, loss, optimizer, sync);
    mpx::Tensor<float> x(mpx::Shape{local_batch, features});
    mpx::Tensor<std::int32_t> y(mpx::Shape{local_batch});
    for (std::int64_t i = 0; i < local_batch; ++i) {
      y[i] = data.labels()[comm.rank() * local_batch + i];
      for (std::int64_t f = 0; f < features; ++f)
        x[i * features + f] = data.images()[(comm.rank() * local_batch + i) * features + f] *
                              static_cast<float>(1 + comm.rank());
    }
    for (int step = 0; step < 3; ++step) {
      (void)trainer.step(x, y);
      // The first layer's input amax, as its cast measured it (of the bf16 input): this rank's own,
      // and the largest over ranks.
      float own = 0.0f;
      const auto rounded = mpx::convert<mpx::BFloat16>(x);  // a named tensor: values() would dangle
      for (const auto v : rounded.values()) own = std::max(own, std::fabs(static_cast<float>(v)));
      float largest = 0.0f;
      for (const std::uint64_t bits : comm.all_gather(std::bit_cast<std::uint32_t>(own)))
        largest = std::max(largest, std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
      const auto& first = model.template layer<0>().fp8_scales();
      // After the roll, the step's amax is the last history row's (row 3 of 4), column 0 (input).
      CHECK(first.amaxes()[3 * 3 + 0] == largest);
      CHECK(first.scales()[0] == 448.0f / largest);
      std::uint64_t state = 0;
      mpx::nn::for_each_buffer(model, [&](std::string_view, auto& t) {
        for (const float v : t.values()) state = state * 1099511628211ull + std::bit_cast<std::uint32_t>(v);
      });
      CHECK(same_on_every_rank(comm, state));
      CHECK(same_on_every_rank(comm, state_hash(model)));
    }
  }
}

TEST_CASE("With sync_batch_norm, N ranks normalise as one process does the whole batch of N x 32", "[mpi]") {
  mpx::dist::Communicator comm;
  // No broadcast: every rank must reach the same running statistics by itself.
  const BatchNormRun synchronised =
      train_batch_norm(&comm, {.broadcast_buffers = false, .sync_batch_norm = true});
  const BatchNormRun own = train_batch_norm(&comm, {.broadcast_buffers = false});
  for (std::size_t s = 0; s < synchronised.buffers.size(); ++s) {
    CAPTURE(s);
    CHECK(same_on_every_rank(comm, synchronised.buffers[s]));
  }
  CHECK(same_on_every_rank(comm, synchronised.weights));
  {  // A layer that outlives the sync that synchronised it refuses to train, before any collective.
    auto model = make_batch_norm_model();
    { mpx::dist::MpiGradientSync sync(comm, model, {.sync_batch_norm = true}); }
    const mpx::Tensor<float> x(mpx::Shape{4, features});
    REQUIRE_THROWS_WITH(model.forward(x),
                        Contains("mpx::dist::MpiGradientSync: a BatchNorm2d whose statistics "
                                 "this gradient sync synchronised") &&
                            Contains("trained after the sync was destroyed"));
  }
  if (comm.rank() != 0) return;
  // One process on the same global batches: the sums differ in order only (fp32 rounding, grown by
  // four SGD steps), so 1e-4 relative; each rank's own statistics miss by far more (the control).
  const BatchNormRun whole = train_batch_norm(nullptr, {}, comm.size());
  double own_miss = 0.0;
  for (std::size_t s = 0; s < whole.losses.size(); ++s) {
    CAPTURE(s, synchronised.losses[s], whole.losses[s], own.losses[s]);
    CHECK(std::fabs(synchronised.losses[s] - whole.losses[s]) <= 1e-4 * whole.losses[s]);
    own_miss = std::max(own_miss, std::fabs(own.losses[s] - whole.losses[s]) / whole.losses[s]);
  }
  CHECK(own_miss > 1e-3);
  REQUIRE(synchronised.running.size() == whole.running.size());
  for (std::size_t i = 0; i < whole.running.size(); ++i) {
    CAPTURE(i);
    CHECK(synchronised.running[i] == Approx(whole.running[i]).epsilon(1e-4).margin(1e-5));
  }
}

namespace {
/// One data-parallel run over `comm` that can start from a checkpoint and save one: the state of a
/// rank's training that a checkpoint must carry (weights, optimizer, scaler, step, batcher position).
struct Resumable {
  const mpx::data::Dataset& data;
  decltype(make_model<mpx::fp16_mixed>(7)) model = make_model<mpx::fp16_mixed>(7);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::AdamW<decltype(model)> optimizer{model, {.lr = 1e-2}};
  mpx::dist::MpiGradientSync<float> sync;
  mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)> trainer{model, loss, optimizer, sync};
  mpx::data::Batcher batcher;

  Resumable(const mpx::dist::Communicator& comm, const mpx::data::Dataset& dataset)
      : data(dataset),
        sync(comm, model, {.bucket_bytes = 2048}),
        batcher(dataset, {.batch_size = local_batch,
                          .seed = 3,
                          .last_batch = mpx::data::LastBatch::Drop,
                          .shard = {comm.rank(), comm.size()}}) {}

  std::vector<double> train(int steps) {
    std::vector<double> losses;
    mpx::Tensor<float> x;
    mpx::Tensor<std::int32_t> y;
    for (int s = 0; s < steps; ++s) {
      if (!batcher.next(x, y)) batcher.start_epoch(batcher.epoch() + 1), batcher.next(x, y);
      losses.push_back(trainer.step(x, y).loss);
    }
    return losses;
  }
  void load(const std::filesystem::path& path) {
    const mpx::io::LoadedCheckpoint loaded = mpx::io::load_checkpoint(path, trainer);
    mpx::io::restore_batcher(batcher, loaded.metadata);
  }
};
}  // namespace

TEST_CASE("A checkpoint written by 2 ranks resumes exactly on 2, and continues on 1 and on 3", "[mpi]") {
  mpx::dist::Communicator world;
  // The writers: ranks 0 and 1 (the whole world in a 2-rank run).
  MPI_Comm pair_comm = MPI_COMM_NULL;
  world.check(MPI_Comm_split(world.native(), world.rank() < 2 ? 0 : MPI_UNDEFINED, world.rank(), &pair_comm),
              "MPI_Comm_split");
  // One file every rank can read: rank 0's temp directory, named after rank 0's process id.
  const std::uint64_t id = world.all_gather(static_cast<std::uint64_t>(::getpid()))[0];
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("mpx_dist_checkpoint_" + std::to_string(id) + ".safetensors");
  const mpx::data::Dataset data = make_dataset(1024, 5u);
  std::uint64_t continued_hash = 0;
  std::vector<double> continued;
  if (pair_comm != MPI_COMM_NULL) {
    {
      mpx::dist::Communicator pair(pair_comm);
      Resumable run(pair, data);
      (void)run.train(5);
      // Rank 0 writes (atomically: temp file, fsync, rename); the others wait until it is there.
      if (pair.rank() == 0) mpx::io::save_checkpoint(path, run.trainer, mpx::io::batcher_state(run.batcher));
      pair.barrier();
      continued = run.train(5);
      continued_hash = state_hash(run.model);
      CHECK(run.batcher.position() == 10 * 2 * local_batch);  // global: both ranks' samples
    }
    {
      // Resume with the same world size: exactly the run that did not stop.
      mpx::dist::Communicator pair(pair_comm);
      Resumable resumed(pair, data);
      resumed.load(path);
      CHECK(resumed.batcher.position() == 5 * 2 * local_batch);
      CHECK(resumed.train(5) == continued);
      CHECK(state_hash(resumed.model) == continued_hash);
    }
    MPI_Comm_free(&pair_comm);
  }
  world.barrier();
  {
    // The whole world (3 ranks in a 3-rank run): every rank resumes from the same file and goes on in
    // step, with a global batch of 3 x 32 from the same global position.
    Resumable resumed(world, data);
    resumed.load(path);
    CHECK(resumed.trainer.steps() == 5);
    CHECK(resumed.batcher.position() == 5 * 2 * local_batch);
    const std::vector<double> losses = resumed.train(5);
    CHECK(resumed.batcher.position() == 5 * 2 * local_batch + 5 * world.size() * local_batch);
    CHECK(same_on_every_rank(world, state_hash(resumed.model)));
    CHECK(same_on_every_rank(world, hash_losses(losses)));
    CHECK(std::isfinite(losses.back()));
    if (!continued.empty()) CHECK(losses.back() < 1.5 * continued.front());
  }
  if (world.rank() == 0) {
    // One process alone (a world of one), from the same file.
    mpx::dist::Communicator self(MPI_COMM_SELF);
    Resumable alone(self, data);
    alone.load(path);
    const std::vector<double> losses = alone.train(5);
    CHECK(alone.batcher.position() == 5 * 2 * local_batch + 5 * local_batch);
    CHECK(std::isfinite(losses.back()));
    CHECK(losses.back() < 1.5 * continued.front());
  }
  world.barrier();
  if (world.rank() == 0) std::filesystem::remove(path);
}

int main(int argc, char** argv) {
  mpx::dist::Environment environment(&argc, &argv);
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world < 2) {
    std::fprintf(stderr, "mpx_mpi_tests: needs 2 or more ranks (mpirun -np 2 ...); this world has %d\n",
                 world);
    return 1;
  }
  const int result = Catch::Session().run(argc, argv);
  // The job's exit status is the worst rank's, so mpirun (and CTest) see a failure on any rank.
  int worst = result;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
