// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `dist::MpiGradientSync`: data-parallel training on the CPU over MPI. Plugged into
/// `mpx::Trainer` (its constructor that takes a `GradientSync`), it averages every gradient across ranks in
/// buckets launched during backward (non-blocking MPI collectives), and reduces the step's own flags, so that
/// the finite check, the gradient norm, clipping, the optimizer step and the loss scaler see the
/// same values on every rank and the weights stay bit-identical everywhere.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpx/dist/bucket_schedule.hpp"
#include "mpx/dist/buckets.hpp"
#include "mpx/dist/communicator.hpp"
#include "mpx/dist/model_buffers.hpp"
#include "mpx/dist/model_signature.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/batch_statistics.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/device.hpp"
#include "mpx/tensor/tensor.hpp"
#include "mpx/train/gradient_sync.hpp"
#include "mpx/train/step_scalars.hpp"

namespace mpx::dist {

namespace detail {
template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, float>) {
    return MPI_FLOAT;
  } else {
    static_assert(std::is_same_v<T, double>, "mpx::dist: gradients are fp32 or fp64");
    return MPI_DOUBLE;
  }
}

// What the ranks of one sync must agree on: the model, and the options that decide which
// collectives a step starts (bucket sizes, the reduction, arrival messages or none).
struct SyncAgreement {
  ModelSignature model;
  std::int64_t bucket_bytes = 0;
  std::int32_t reduction = 0;
  std::int32_t timed = 0;
  std::int32_t broadcast_buffers = 0;
  std::int32_t sync_batch_norm = 0;

  friend bool operator==(const SyncAgreement&, const SyncAgreement&) = default;
  friend std::string describe(const SyncAgreement& options) {
    return mpx::detail::concat("bucket_bytes ", options.bucket_bytes, ", reduction ",
                               reduction_name(static_cast<Reduction>(options.reduction)), ", timeout ",
                               options.timed != 0 ? "on" : "0", ", broadcast_buffers ",
                               options.broadcast_buffers != 0 ? "true" : "false", ", sync_batch_norm ",
                               options.sync_batch_norm != 0 ? "true" : "false");
  }
};

// Gathers every rank's model signature and options and compares them with rank 0's: collective.
// Throws `mpx::invalid_argument` naming the ranks whose model (dist::require_same_model) or options
// differ; every rank sees the same list, so all throw or none does.
inline void require_same_model_and_options(const Communicator& comm, const ModelSignature& model,
                                           const SyncOptions& options, std::string_view where) {
  const SyncAgreement mine{.model = model,
                           .bucket_bytes = options.bucket_bytes,
                           .reduction = static_cast<std::int32_t>(options.reduction),
                           .timed = options.timeout.count() > 0 ? 1 : 0,
                           .broadcast_buffers = options.broadcast_buffers ? 1 : 0,
                           .sync_batch_norm = options.sync_batch_norm ? 1 : 0};
  std::vector<SyncAgreement> all(static_cast<std::size_t>(comm.size()));
  comm.check(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm.native()),
             "MPI_Allgather (model signature and options)");
  std::vector<ModelSignature> models;
  for (const SyncAgreement& rank : all) models.push_back(rank.model);
  dist::require_same_model(models, where);
  std::string differing;
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    differing.append(mpx::detail::concat("; rank ", r, " has ", describe(all[r])));
  }
  if (!differing.empty()) {
    throw invalid_argument(mpx::detail::concat(where, ": the ranks' SyncOptions differ: rank 0 has ",
                                               describe(all[0]), differing,
                                               ". Every rank must pass the same bucket_bytes, reduction, "
                                               "broadcast_buffers and sync_batch_norm, and a "
                                               "timeout on all ranks or on none"));
  }
}

// BatchNorm2d's synchronised statistics over MPI (SyncOptions::sync_batch_norm): each call gathers
// every rank's values and row count (MPI_Iallgather on a communicator of its own, apart from the
// gradient buckets in flight) and adds them in rank order, so every rank gets the same bits. Waits
// at most the sync's timeout. Outlives its sync when a layer still holds it: `detach` makes it
// refuse work from then on.
template <class Acc>
class MpiStatisticsReducer final : public nn::StatisticsReducer<Acc, Host> {
 public:
  // `comm` is the sync's (for rank, size and error reports), `own` a duplicate this reducer frees,
  // `mpi_mutex` the sync's lock when a progress thread shares MPI (else null).
  MpiStatisticsReducer(const Communicator& comm, MPI_Comm own, std::mutex* mpi_mutex,
                       std::chrono::milliseconds timeout)
      : comm_(&comm), own_(own), mpi_mutex_(mpi_mutex), timeout_(timeout) {}
  MpiStatisticsReducer(const MpiStatisticsReducer&) = delete;
  MpiStatisticsReducer& operator=(const MpiStatisticsReducer&) = delete;
  ~MpiStatisticsReducer() override { detach(); }

  std::int64_t sum_over_ranks(Tensor<Acc, Host>& values, std::int64_t count) override {
    if (comm_ == nullptr) this->throw_without_sync("mpx::dist::MpiGradientSync");
    const auto n = static_cast<std::size_t>(values.numel());
    const std::size_t bytes = sizeof(std::int64_t) + n * sizeof(Acc);
    const int world = comm_->size();
    send_.resize(bytes);
    std::memcpy(send_.data(), &count, sizeof count);
    std::memcpy(send_.data() + sizeof count, values.data(), n * sizeof(Acc));
    receive_.resize(bytes * static_cast<std::size_t>(world));
    std::unique_lock<std::mutex> lock;  // with a progress thread, one thread at a time in MPI
    if (mpi_mutex_ != nullptr) lock = std::unique_lock(*mpi_mutex_);
    MPI_Request request = MPI_REQUEST_NULL;
    comm_->check(MPI_Iallgather(send_.data(), static_cast<int>(bytes), MPI_BYTE, receive_.data(),
                                static_cast<int>(bytes), MPI_BYTE, own_, &request),
                 "MPI_Iallgather (BatchNorm2d statistics)");
    wait(request);
    // values = rank 0's + rank 1's + ..., element by element in rank order: the same bits everywhere.
    std::int64_t total = 0;
    std::vector<Acc> theirs(n);
    for (int r = 0; r < world; ++r) {
      const std::byte* block = receive_.data() + static_cast<std::size_t>(r) * bytes;
      std::int64_t rows = 0;
      std::memcpy(&rows, block, sizeof rows);
      total += rows;
      std::memcpy(theirs.data(), block + sizeof rows, n * sizeof(Acc));
      for (std::size_t i = 0; i < n; ++i)
        values.data()[i] = r == 0 ? theirs[i] : values.data()[i] + theirs[i];
    }
    return total;
  }

  // From here on every call throws; frees the communicator unless MPI has ended.
  void detach() noexcept {
    comm_ = nullptr;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0 && own_ != MPI_COMM_NULL) MPI_Comm_free(&own_);
  }

 private:
  // Polls `request` until it completes; past the timeout, leaves the buffers to MPI (never freed) and
  // throws `timeout_error`.
  void wait(MPI_Request& request) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      int done = 0;
      comm_->check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test (BatchNorm2d statistics)");
      if (done != 0) return;
      if (timeout_.count() > 0 && std::chrono::steady_clock::now() >= deadline) {
        new std::vector<std::byte>(std::move(send_));  // deliberately never freed: MPI may still use them
        new std::vector<std::byte>(std::move(receive_));
        const int rank = comm_->rank(), world = comm_->size();
        comm_ = nullptr;  // the ranks no longer agree on their collectives
        throw timeout_error(mpx::detail::concat(
            "mpx::dist::MpiGradientSync: rank ", rank, " of ", world, " waited ",
            std::chrono::duration<double>(timeout_).count(),
            " s (SyncOptions::timeout) for the other ranks' BatchNorm2d statistics: a rank did not reach "
            "this layer (hung, or far slower than this rank); a job whose ranks no longer meet cannot go "
            "on"));
      }
    }
  }

  const Communicator* comm_;
  MPI_Comm own_;
  std::mutex* mpi_mutex_;
  std::chrono::milliseconds timeout_;
  std::vector<std::byte> send_, receive_;
};
}  // namespace detail

/// @brief Averages `mpx::Trainer`'s gradients across the ranks of a `Communicator` on the CPU; see
/// the file comment. Build one per trainer, after the model and before the first step (collective:
/// every rank constructs it, and it checks that all ranks hold the same model):
/// @code
/// mpx::dist::MpiGradientSync sync(comm, model);
/// mpx::Trainer trainer(model, loss, optimizer, sync);
/// @endcode
/// The bucket plan follows the model's parameters at construction: the model must not be moved or
/// rebuilt afterwards (`finish` checks that the gradients are the same tensors).
/// @tparam Grad the gradients' element type (fp32, or fp64 under fp64).
template <class Grad>
class MpiGradientSync final : public GradientSync<Host, Grad> {
 public:
  /// @brief The gradient tensors the trainer hands over.
  using GradientList = typename GradientSync<Host, Grad>::GradientList;

  /// @brief Plans the buckets of `model`'s gradients and checks that every rank of `comm` holds the
  /// same model and passed the same `bucket_bytes`, `reduction` and timeout on/off (throws
  /// `mpx::invalid_argument` naming the ranks that differ).
  template <class Model>
  MpiGradientSync(const Communicator& comm, Model& model, const SyncOptions& options = {})
      : comm_(comm),
        options_(options.validate()),
        schedule_(model_gradients<Tensor<Grad, Host>>(model), options_.bucket_elements<Grad>(), owner),
        buffers_of_model_([&model] { return model_buffers(model); }) {
    detail::require_same_model_and_options(comm_, model_signature(model), options_, owner);
    if (const std::size_t bytes = total_bytes(buffers_of_model_());
        bytes > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw invalid_argument(mpx::detail::concat(owner, ": the model's buffers hold ", bytes,
                                                 " bytes, more than one MPI message (2^31 - 1)"));
    }
    for (const Bucket& plan : schedule_.buckets()) {
      if (plan.elements > std::int64_t{0x7fffffff}) {
        throw invalid_argument(mpx::detail::concat(owner, ": a gradient of ", plan.elements,
                                                   " elements is larger than one MPI message (2^31 - 1)"));
      }
    }
    buckets_.resize(schedule_.buckets().size());
    if (options_.reduction == Reduction::fixed_order_sharded) {
      for (std::size_t b = 0; b < buckets_.size(); ++b)
        plan_shards(buckets_[b], schedule_.buckets()[b].elements);
    }
    if (options_.progress_thread) {
      int level = MPI_THREAD_SINGLE;
      comm_.check(MPI_Query_thread(&level), "MPI_Query_thread");
      if (level < MPI_THREAD_SERIALIZED) {
        throw invalid_argument(mpx::detail::concat(
            "mpx::dist::MpiGradientSync: progress_thread needs MPI initialised at MPI_THREAD_SERIALIZED or "
            "more (mpx::dist::Environment does so); this process has thread level ",
            level));
      }
    }
    if (options_.sync_batch_norm) {  // after the ranks agreed on it: MPI_Comm_dup is collective
      statistics_ = std::make_shared<detail::MpiStatisticsReducer<Grad>>(
          comm_, duplicate("MPI_Comm_dup (BatchNorm2d statistics)"),
          options_.progress_thread ? &mpi_mutex_ : nullptr, options_.timeout);
      nn::synchronise_batch_statistics(model,
                                       std::shared_ptr<nn::StatisticsReducer<Grad, Host>>(statistics_));
    }
    arrivals_comm_ = duplicate("MPI_Comm_dup (arrivals)");
    gathers_comm_ = duplicate("MPI_Comm_dup (gathers of averaged shards)");
    arrivals_.resize(2 * static_cast<std::size_t>(comm_.size()), MPI_REQUEST_NULL);
    if (options_.progress_thread) progress_thread_ = std::thread([this] { keep_progressing(); });
  }

  /// @brief Frees the buckets, unless a reduction is still in flight (a step threw half-way or timed
  /// out): the job cannot go on then (its ranks no longer agree on the order of collectives), and
  /// waiting could hang, so the buffers MPI may still read or write (the buckets' and the step
  /// flags') are left allocated until the process ends.
  ~MpiGradientSync() override {
    if (statistics_) statistics_->detach();  // layers that still hold it get an error, not this dead sync
    if (progress_thread_.joinable()) {
      {
        const std::lock_guard lock(mpi_mutex_);
        stop_ = true;
      }
      wake_.notify_one();
      progress_thread_.join();
    }
    if (in_flight()) {  // deliberately never freed; a move keeps each vector's heap block in place
      new std::vector<BucketState>(std::move(buckets_));
      new std::vector<double>(std::move(flags_));
      new std::vector<std::byte>(std::move(buffer_bytes_));
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) return;
    for (MPI_Comm* comm : {&arrivals_comm_, &gathers_comm_})
      if (*comm != MPI_COMM_NULL) MPI_Comm_free(comm);
  }

  /// @brief This process's rank in the communicator.
  [[nodiscard]] int rank() const override { return comm_.rank(); }

  /// @brief Forgets the last step's reports: every bucket waits for its gradients again.
  void begin_backward() override {
    std::unique_lock lock(mpi_mutex_, std::defer_lock);
    if (options_.progress_thread) lock.lock();
    if (in_flight()) {
      throw error(
          mpx::detail::concat(owner, ": exchange ", exchanges_,
                              " is still in flight at the start of a backward (the step threw or timed "
                              "out half-way); the ranks no longer agree on their collectives"));
    }
    schedule_.begin();
    next_gather_ = 0;
  }

  /// @brief Marks `gradients` final and starts the reduction of every bucket, in bucket order, whose
  /// gradients are all final (the order is the same on every rank, as MPI's collectives need).
  void gradients_final(GradientList gradients) override {
    schedule_.report(gradients);
    if (!options_.overlap) return;
    while (schedule_.next_ready()) launch(schedule_.take_next());
    // Open MPI advances non-blocking collectives only inside MPI calls: without the progress
    // thread, a test per reported layer keeps the launched buckets moving while backward computes.
    if (!options_.progress_thread) advance();
  }

  /// @brief Starts the buckets not started yet, reduces the step's flags and FP8 amaxes, waits for
  /// everything and writes the averaged gradients back.
  void finish(GradientList gradients, StepScalars* scalars, std::span<float> amaxes) override {
    schedule_.require_same_gradients(gradients);
    ++exchanges_;
    while (!schedule_.all_taken()) launch(schedule_.take_next());
    // From here the training thread makes the MPI calls; the progress thread waits for the next step.
    std::unique_lock lock(mpi_mutex_, std::defer_lock);
    if (options_.progress_thread) {
      lock.lock();
      communicating_ = false;
      if (progress_error_) std::rethrow_exception(std::exchange(progress_error_, nullptr));
    }
    if (options_.timeout.count() > 0) announce_arrival();
    // The step's own flags: each rank's loss sum, its non-finite-input flag and its FP8 amaxes (exact
    // in double). Gathered, then combined in rank order, so the loss every rank reports is the same
    // global mean. flags_ = [this rank's block, then rank 0's, rank 1's, ...]: one allocation, which a
    // timed-out step leaves to MPI.
    const std::size_t block = 2 + amaxes.size();
    flags_.resize(block * (1 + static_cast<std::size_t>(comm_.size())));
    flags_[0] = scalars->loss_sum;
    flags_[1] = static_cast<double>(scalars->inputs_nonfinite);
    std::copy(amaxes.begin(), amaxes.end(), flags_.begin() + 2);
    comm_.check(MPI_Iallgather(flags_.data(), static_cast<int>(block), MPI_DOUBLE, flags_.data() + block,
                               static_cast<int>(block), MPI_DOUBLE, comm_.native(), &flags_request_),
                "MPI_Iallgather (step flags)");
    if (options_.broadcast_buffers && comm_.size() > 1) start_buffer_broadcast();
    const auto start = std::chrono::steady_clock::now();
    wait_for_everything(start);
    last_wait_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (std::size_t b = 0; b < buckets_.size(); ++b) unpack(b);
    if (options_.broadcast_buffers && comm_.size() > 1 && comm_.rank() != 0) unpack_buffers();
    const double* gathered = flags_.data() + block;
    double loss_sum = gathered[0];
    int inputs_nonfinite = gathered[1] != 0.0 ? 1 : 0;
    for (std::size_t i = 0; i < amaxes.size(); ++i) amaxes[i] = static_cast<float>(gathered[2 + i]);
    for (int r = 1; r < comm_.size(); ++r) {
      const double* theirs = gathered + block * static_cast<std::size_t>(r);
      loss_sum += theirs[0];
      if (theirs[1] != 0.0) inputs_nonfinite = 1;
      // A cast's amax passes over NaN (cpu::accumulate_amax), so these are numbers or +infinity.
      for (std::size_t i = 0; i < amaxes.size(); ++i)
        amaxes[i] = std::max(amaxes[i], static_cast<float>(theirs[2 + i]));
    }
    scalars->loss_sum = loss_sum / static_cast<double>(comm_.size());
    scalars->inputs_nonfinite = inputs_nonfinite;
    // Ready for the next step, whether or not the trainer calls begin_backward first.
    schedule_.begin();
    next_gather_ = 0;
  }

  /// @brief The buckets, in launch order.
  [[nodiscard]] const std::vector<Bucket>& buckets() const noexcept { return schedule_.buckets(); }
  /// @brief Seconds the last `finish` waited for communication after backward: what overlap did not
  /// hide.
  [[nodiscard]] double last_wait_seconds() const noexcept { return last_wait_seconds_; }
  /// @brief The options in use.
  [[nodiscard]] const SyncOptions& options() const noexcept { return options_; }

 private:
  static constexpr std::string_view owner = "mpx::dist::MpiGradientSync";

  // Where a bucket's reduction stands in this step.
  enum class Phase {
    idle,        // not started, or complete
    reducing,    // its one collective in flight: the gather (fixed_order), the all-reduce, or the
                 // gather of the averaged shards (fixed_order_sharded's second half)
    scattering,  // fixed_order_sharded: the all-to-all of the shards in flight
    scattered,   // fixed_order_sharded: this rank's shard arrived; its gather starts in bucket order
  };

  struct BucketState {
    // This rank's gradients, packed (the fixed orders); fixed_order_sharded then averages its
    // shard in place and gathers the others' around it: the averaged bucket.
    std::vector<Grad> send;
    // Every rank's bucket (fixed_order), every rank's copy of this rank's shard
    // (fixed_order_sharded), or the sum (mpi_allreduce).
    std::vector<Grad> receive;
    // fixed_order_sharded: rank r's shard is [shard_offsets[r], + shard_counts[r]) of the bucket;
    // rank r's copy of this rank's shard lands at copy_offsets[r] of `receive`. MPI reads these
    // until the collective completes, so they live here.
    std::vector<int> shard_counts, shard_offsets, copy_counts, copy_offsets;
    MPI_Request request = MPI_REQUEST_NULL;
    Phase phase = Phase::idle;
  };

  // Whether MPI may still use this sync's buffers: a bucket, the step flags or an arrival message in
  // flight (a step that threw or timed out half-way).
  [[nodiscard]] bool in_flight() const {
    const auto pending = [](MPI_Request request) { return request != MPI_REQUEST_NULL; };
    return pending(flags_request_) || pending(buffers_request_) ||
           std::any_of(arrivals_.begin(), arrivals_.end(), pending) ||
           std::any_of(buckets_.begin(), buckets_.end(),
                       [](const BucketState& bucket) { return bucket.phase != Phase::idle; });
  }

  // A private duplicate of the job's communicator, which orders its own collectives.
  MPI_Comm duplicate(const char* what) const {
    MPI_Comm copy = MPI_COMM_NULL;
    comm_.check(MPI_Comm_dup(comm_.native(), &copy), what);
    comm_.check(MPI_Comm_set_errhandler(copy, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    return copy;
  }

  // fixed_order_sharded: rank r owns elements [n r / world, n (r + 1) / world) of a bucket of n.
  void plan_shards(BucketState& bucket, std::int64_t n) const {
    const int world = comm_.size();
    for (int r = 0; r < world; ++r) {
      const std::int64_t begin = n * r / world;
      bucket.shard_offsets.push_back(static_cast<int>(begin));
      bucket.shard_counts.push_back(static_cast<int>(n * (r + 1) / world - begin));
    }
    const int mine = bucket.shard_counts[static_cast<std::size_t>(comm_.rank())];
    for (int r = 0; r < world; ++r) {
      bucket.copy_counts.push_back(mine);
      bucket.copy_offsets.push_back(r * mine);
    }
  }

  void launch(std::size_t b) {
    std::unique_lock lock(mpi_mutex_, std::defer_lock);
    if (options_.progress_thread) lock.lock();
    BucketState& bucket = buckets_[b];
    const Bucket& plan = schedule_.buckets()[b];
    const auto n = static_cast<std::size_t>(plan.elements);
    const Reduction reduction = options_.reduction;
    std::vector<Grad>& packed = reduction == Reduction::mpi_allreduce ? bucket.receive : bucket.send;
    packed.resize(n);
    std::size_t offset = 0;
    for (std::size_t t : plan.tensors) {
      const Tensor<Grad, Host>& gradient = *schedule_.gradients()[t];
      const auto size = static_cast<std::size_t>(gradient.numel());
      std::memcpy(packed.data() + offset, gradient.data(), size * sizeof(Grad));
      offset += size;
    }
    if (offset != n) {
      throw error(mpx::detail::concat(owner, ": bucket ", b, " holds ", offset,
                                      " gradient elements; its plan has ", n));
    }
    const int count = static_cast<int>(n);
    const MPI_Datatype type = detail::mpi_type<Grad>();
    if (reduction == Reduction::fixed_order) {
      bucket.receive.resize(n * static_cast<std::size_t>(comm_.size()));
      comm_.check(MPI_Iallgather(bucket.send.data(), count, type, bucket.receive.data(), count, type,
                                 comm_.native(), &bucket.request),
                  "MPI_Iallgather (gradient bucket)");
      bucket.phase = Phase::reducing;
    } else if (reduction == Reduction::fixed_order_sharded) {
      bucket.receive.resize(static_cast<std::size_t>(bucket.copy_counts[0]) *
                            static_cast<std::size_t>(comm_.size()));
      comm_.check(MPI_Ialltoallv(bucket.send.data(), bucket.shard_counts.data(), bucket.shard_offsets.data(),
                                 type, bucket.receive.data(), bucket.copy_counts.data(),
                                 bucket.copy_offsets.data(), type, comm_.native(), &bucket.request),
                  "MPI_Ialltoallv (gradient bucket shards)");
      bucket.phase = Phase::scattering;
    } else {
      comm_.check(MPI_Iallreduce(MPI_IN_PLACE, bucket.receive.data(), count, type, MPI_SUM, comm_.native(),
                                 &bucket.request),
                  "MPI_Iallreduce (gradient bucket)");
      bucket.phase = Phase::reducing;
    }
    if (options_.progress_thread) {
      communicating_ = true;
      lock.unlock();
      wake_.notify_one();
    }
  }

  // Moves every launched reduction on without blocking (each test lets Open MPI progress it); a
  // sharded bucket whose shard copies have arrived averages them and starts its gather.
  void advance() {
    for (BucketState& bucket : buckets_) {
      if (bucket.phase != Phase::reducing && bucket.phase != Phase::scattering) continue;
      int done = 0;
      comm_.check(MPI_Test(&bucket.request, &done, MPI_STATUS_IGNORE), "MPI_Test (gradient bucket)");
      if (done != 0) bucket.phase = bucket.phase == Phase::scattering ? Phase::scattered : Phase::idle;
    }
    // In bucket order, as every rank starts them: on `gathers_comm_`, whose order is its own, since
    // the ranks start gathers and the next buckets' all-to-alls in different interleavings.
    while (next_gather_ < buckets_.size() && buckets_[next_gather_].phase == Phase::scattered) {
      BucketState& bucket = buckets_[next_gather_++];
      const auto me = static_cast<std::size_t>(comm_.rank());
      const auto mine = static_cast<std::size_t>(bucket.shard_counts[me]);
      average_in_rank_order<Grad>(bucket.receive, comm_.size(),
                                  std::span<Grad>(bucket.send.data() + bucket.shard_offsets[me], mine));
      comm_.check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, bucket.send.data(),
                                  bucket.shard_counts.data(), bucket.shard_offsets.data(),
                                  detail::mpi_type<Grad>(), gathers_comm_, &bucket.request),
                  "MPI_Iallgatherv (averaged shards)");
      bucket.phase = Phase::reducing;
    }
  }

  // The progress thread: while a step's reductions are in flight, advances them every few tens of
  // microseconds, taking turns with the training thread's MPI calls through `mpi_mutex_`. Between
  // steps it sleeps and makes no MPI call. An error is kept for `finish` to throw.
  void keep_progressing() {
    std::unique_lock lock(mpi_mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || communicating_; });
      if (stop_) return;
      try {
        advance();
      } catch (...) {
        progress_error_ = std::current_exception();
        communicating_ = false;
        continue;
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      lock.lock();
    }
  }

  // With a timeout: tells every other rank that this one has reached this exchange, and listens for
  // theirs (empty messages on a communicator of their own). When the exchange times out, the
  // receives that have not completed name the ranks that never came.
  void announce_arrival() {
    const int world = comm_.size();
    for (int r = 0; r < world; ++r) {
      if (r == comm_.rank()) continue;
      comm_.check(
          MPI_Irecv(nullptr, 0, MPI_BYTE, r, 0, arrivals_comm_, &arrivals_[static_cast<std::size_t>(r)]),
          "MPI_Irecv (arrival)");
      comm_.check(MPI_Isend(nullptr, 0, MPI_BYTE, r, 0, arrivals_comm_,
                            &arrivals_[static_cast<std::size_t>(world + r)]),
                  "MPI_Isend (arrival)");
    }
  }

  // Advances the step flags, every bucket and the arrival messages until all are complete (MPI_Wait
  // polls the same way). With a timeout, throws `timeout_error` naming the ranks that have not
  // reached this exchange once `options_.timeout` has passed since `start`.
  void wait_for_everything(std::chrono::steady_clock::time_point start) {
    const bool timed = options_.timeout.count() > 0;
    const auto deadline = start + options_.timeout;
    for (;;) {
      int flags_done = 0;
      comm_.check(MPI_Test(&flags_request_, &flags_done, MPI_STATUS_IGNORE), "MPI_Test (step flags)");
      int buffers_done = 0;
      comm_.check(MPI_Test(&buffers_request_, &buffers_done, MPI_STATUS_IGNORE), "MPI_Test (buffers)");
      advance();
      int arrived = 0;
      comm_.check(
          MPI_Testall(static_cast<int>(arrivals_.size()), arrivals_.data(), &arrived, MPI_STATUSES_IGNORE),
          "MPI_Testall (arrivals)");
      const bool buckets_done = std::all_of(buckets_.begin(), buckets_.end(), [](const BucketState& bucket) {
        return bucket.phase == Phase::idle;
      });
      if (flags_done != 0 && buffers_done != 0 && arrived != 0 && buckets_done) return;
      if (timed && std::chrono::steady_clock::now() >= deadline) throw_timeout();
    }
  }

  [[noreturn]] void throw_timeout() {
    const int world = comm_.size();
    std::string missing;
    for (int r = 0; r < world; ++r) {
      // MPI_Testall completes none of the requests unless all are complete: test each receive.
      int came = 0;
      (void)MPI_Test(&arrivals_[static_cast<std::size_t>(r)], &came, MPI_STATUS_IGNORE);  // null: this rank
      if (came == 0) missing.append(mpx::detail::concat(missing.empty() ? "" : ", ", r));
    }
    const auto seconds = std::chrono::duration<double>(options_.timeout).count();
    const std::string who =
        missing.empty()
            ? std::string(
                  "every rank reached it, but the reduction did not complete (a rank or the network "
                  "stalled inside MPI)")
            : mpx::detail::concat(missing.find(',') == std::string::npos ? "rank " : "ranks ", missing,
                                  " did not reach it (hung, or far slower than this rank)");
    throw timeout_error(mpx::detail::concat(owner, ": rank ", comm_.rank(), " of ", world, " waited ",
                                            seconds, " s (SyncOptions::timeout) for gradient exchange ",
                                            exchanges_, ": ", who,
                                            "; a job whose ranks no longer meet cannot go on"));
  }

  // Rank 0 packs its buffers (after this step's forward, the last to change them) into one message
  // that every other rank receives (MPI_Ibcast, waited for with the rest of the step).
  void start_buffer_broadcast() {
    const std::vector<BufferBytes> buffers = buffers_of_model_();
    buffer_bytes_.resize(total_bytes(buffers));
    if (buffer_bytes_.empty()) return;
    if (comm_.rank() == 0) {
      std::size_t offset = 0;
      for (const BufferBytes& buffer : buffers) {
        std::memcpy(buffer_bytes_.data() + offset, buffer.data, buffer.bytes);
        offset += buffer.bytes;
      }
    }
    comm_.check(MPI_Ibcast(buffer_bytes_.data(), static_cast<int>(buffer_bytes_.size()), MPI_BYTE, 0,
                           comm_.native(), &buffers_request_),
                "MPI_Ibcast (buffers)");
  }

  // Writes rank 0's buffers, received by `start_buffer_broadcast`, into this rank's model.
  void unpack_buffers() {
    std::size_t offset = 0;
    for (const BufferBytes& buffer : buffers_of_model_()) {
      std::memcpy(buffer.data, buffer_bytes_.data() + offset, buffer.bytes);
      offset += buffer.bytes;
    }
  }

  // Writes bucket b's average back into its gradients.
  void unpack(std::size_t b) {
    BucketState& bucket = buckets_[b];
    const Bucket& plan = schedule_.buckets()[b];
    const Reduction reduction = options_.reduction;
    if (reduction == Reduction::fixed_order) {  // `send` becomes the average
      average_in_rank_order<Grad>(bucket.receive, comm_.size(), bucket.send);
    }
    const std::vector<Grad>& result = reduction == Reduction::mpi_allreduce ? bucket.receive : bucket.send;
    const Grad divisor = static_cast<Grad>(comm_.size());
    std::size_t offset = 0;
    for (std::size_t t : plan.tensors) {
      Tensor<Grad, Host>& gradient = *schedule_.gradients()[t];
      const auto size = static_cast<std::size_t>(gradient.numel());
      Grad* out = gradient.data();
      if (reduction == Reduction::mpi_allreduce) {
        for (std::size_t i = 0; i < size; ++i) out[i] = result[offset + i] / divisor;
      } else {
        std::memcpy(out, result.data() + offset, size * sizeof(Grad));
      }
      offset += size;
    }
  }

  const Communicator& comm_;
  SyncOptions options_;
  BucketSchedule<Tensor<Grad, Host>> schedule_;
  std::vector<BucketState> buckets_;  // MPI's side of `schedule_.buckets()`, index for index
  std::vector<double> flags_;         // this rank's step flags, then every rank's (see `finish`)
  MPI_Request flags_request_ = MPI_REQUEST_NULL;
  std::function<std::vector<BufferBytes>()> buffers_of_model_;  // the model's buffers, asked at each step
  std::vector<std::byte> buffer_bytes_;                         // rank 0's buffers, packed
  MPI_Request buffers_request_ = MPI_REQUEST_NULL;
  std::int64_t exchanges_ = 0;              // `finish` calls so far, this one included
  MPI_Comm arrivals_comm_ = MPI_COMM_NULL;  // arrival messages (with a timeout), apart from the rest
  std::vector<MPI_Request> arrivals_;       // [0, world): receives by source; [world, 2 world): sends
  MPI_Comm gathers_comm_ = MPI_COMM_NULL;   // fixed_order_sharded: the gathers of averaged shards
  std::size_t next_gather_ = 0;             // fixed_order_sharded: the next bucket to start its gather
  std::exception_ptr progress_error_;       // what the progress thread could not do
  double last_wait_seconds_ = 0.0;
  std::mutex mpi_mutex_;          // with a progress thread: one thread at a time in MPI
  std::condition_variable wake_;  // a step started communicating, or the sync is going away
  bool communicating_ = false;    // reductions in flight for the progress thread to advance
  bool stop_ = false;             // the progress thread must end
  std::shared_ptr<detail::MpiStatisticsReducer<Grad>> statistics_;  // sync_batch_norm: the layers' reducer
  std::thread progress_thread_;  // started last, so everything it reads exists
};

/// @brief Deduces the gradient type from the model, as `mpx::Trainer` does.
template <class Model>
MpiGradientSync(const Communicator&, Model&) -> MpiGradientSync<accumulate_t<typename Model::precision>>;
/// @brief Deduces the gradient type from the model, as `mpx::Trainer` does.
template <class Model>
MpiGradientSync(const Communicator&, Model&, const SyncOptions&)
    -> MpiGradientSync<accumulate_t<typename Model::precision>>;

}  // namespace mpx::dist
