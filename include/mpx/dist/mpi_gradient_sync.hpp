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
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "mpx/dist/buckets.hpp"
#include "mpx/dist/communicator.hpp"
#include "mpx/dist/model_signature.hpp"
#include "mpx/error.hpp"
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

// Compares every rank's model signature with rank 0's; throws naming the ranks that differ.
inline void require_same_model(const Communicator& comm, const ModelSignature& mine, const char* where) {
  const std::uint64_t local[3] = {mine.hash, static_cast<std::uint64_t>(mine.parameters),
                                  static_cast<std::uint64_t>(mine.scalars)};
  std::vector<std::uint64_t> all(3 * static_cast<std::size_t>(comm.size()));
  comm.check(MPI_Allgather(local, 3, MPI_UINT64_T, all.data(), 3, MPI_UINT64_T, comm.native()),
             "MPI_Allgather (model signature)");
  std::string differing;
  for (int r = 1; r < comm.size(); ++r) {
    const std::uint64_t* theirs = all.data() + 3 * r;
    if (theirs[0] != all[0] || theirs[1] != all[1] || theirs[2] != all[2]) {
      differing.append(mpx::detail::concat(differing.empty() ? "" : "; ", "rank ", r, " has ", theirs[1],
                                           " parameter tensors of ", theirs[2], " scalars (signature ",
                                           theirs[0], ")"));
    }
  }
  if (!differing.empty()) {
    throw invalid_argument(mpx::detail::concat(
        where, ": the ranks hold different models: rank 0 has ", all[1], " parameter tensors of ", all[2],
        " scalars (signature ", all[0], "); ", differing,
        ". Every rank must build the same model (same layers, sizes and precisions)"));
  }
}
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
  /// same model (throws `mpx::invalid_argument` naming the ranks that differ).
  template <class Model>
  MpiGradientSync(const Communicator& comm, Model& model, const SyncOptions& options = {})
      : comm_(comm), options_(options) {
    options_.validate();
    detail::require_same_model(comm_, model_signature(model), "mpx::dist::MpiGradientSync");
    std::vector<std::int64_t> sizes;
    model.for_each_parameter([&](std::string_view, auto& parameter) {
      auto& gradient = parameter.grad();
      static_assert(std::is_same_v<std::remove_cvref_t<decltype(gradient)>, Tensor<Grad, Host>>,
                    "mpx::dist::MpiGradientSync<Grad>: Grad must be the model's gradient type");
      index_.emplace(&gradient, gradients_.size());
      gradients_.push_back(&gradient);
      sizes.push_back(gradient.numel());
    });
    const auto bucket_elements =
        std::max<std::int64_t>(1, options_.bucket_bytes / std::int64_t{sizeof(Grad)});
    for (Bucket& plan : plan_buckets(sizes, bucket_elements)) {
      if (plan.elements > std::int64_t{0x7fffffff}) {
        throw invalid_argument(mpx::detail::concat("mpx::dist::MpiGradientSync: a gradient of ",
                                                   plan.elements,
                                                   " elements is larger than one MPI message (2^31 - 1)"));
      }
      BucketState state;
      state.plan = std::move(plan);
      buckets_.push_back(std::move(state));
    }
    bucket_of_.resize(gradients_.size());
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      for (std::size_t t : buckets_[b].plan.tensors) bucket_of_[t] = b;
    reported_.assign(gradients_.size(), 0);
    if (options_.progress_thread) {
      int level = MPI_THREAD_SINGLE;
      comm_.check(MPI_Query_thread(&level), "MPI_Query_thread");
      if (level < MPI_THREAD_SERIALIZED) {
        throw invalid_argument(mpx::detail::concat(
            "mpx::dist::MpiGradientSync: progress_thread needs MPI initialised at MPI_THREAD_SERIALIZED or "
            "more (mpx::dist::Environment does so); this process has thread level ",
            level));
      }
      progress_thread_ = std::thread([this] { keep_progressing(); });
    }
  }

  /// @brief Frees the buckets, unless a reduction is still in flight (a step threw half-way): the
  /// job cannot go on then (its ranks no longer agree on the order of collectives), and waiting
  /// could hang, so the buffers MPI may still write are left allocated until the process ends.
  ~MpiGradientSync() override {
    if (progress_thread_.joinable()) {
      {
        const std::lock_guard lock(mpi_mutex_);
        stop_ = true;
      }
      wake_.notify_one();
      progress_thread_.join();
    }
    const bool in_flight = std::any_of(buckets_.begin(), buckets_.end(), [](const BucketState& bucket) {
      return bucket.request != MPI_REQUEST_NULL;
    });
    if (in_flight) new std::vector<BucketState>(std::move(buckets_));  // deliberately never freed
  }

  /// @brief Forgets the last step's reports: every bucket waits for its gradients again.
  void begin_backward() override {
    for (BucketState& bucket : buckets_) {
      if (bucket.request != MPI_REQUEST_NULL) {
        throw error(
            "mpx::dist::MpiGradientSync: a bucket's reduction is still in flight at the start of a "
            "backward; the previous step did not finish");
      }
      bucket.pending = bucket.plan.tensors.size();
    }
    std::fill(reported_.begin(), reported_.end(), 0);
    next_launch_ = 0;
  }

  /// @brief Marks `gradients` final and starts the reduction of every bucket, in bucket order, whose
  /// gradients are all final (the order is the same on every rank, as MPI's collectives need).
  void gradients_final(GradientList gradients) override {
    for (Tensor<Grad, Host>* gradient : gradients) {
      const std::size_t t = index_of(gradient);
      if (reported_[t] != 0) {
        throw error(mpx::detail::concat("mpx::dist::MpiGradientSync: gradient ", t,
                                        " was reported final twice in one backward"));
      }
      reported_[t] = 1;
      --buckets_[bucket_of_[t]].pending;
    }
    if (!options_.overlap) return;
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) launch(next_launch_++);
    if (!options_.progress_thread) progress();
  }

  /// @brief Starts the buckets not started yet, reduces the step's flags, waits for everything and
  /// writes the averaged gradients back.
  void finish(GradientList gradients, StepScalars* scalars) override {
    if (gradients.size() != gradients_.size() ||
        !std::equal(gradients.begin(), gradients.end(), gradients_.begin())) {
      throw error(
          mpx::detail::concat("mpx::dist::MpiGradientSync: the trainer's ", gradients.size(),
                              " gradients are not the ", gradients_.size(),
                              " this sync was built for; build the sync from the model the trainer trains, "
                              "after the model is in place (it must not move afterwards)"));
    }
    while (next_launch_ < buckets_.size()) launch(next_launch_++);
    // From here the training thread makes the MPI calls; the progress thread waits for the next step.
    std::unique_lock lock(mpi_mutex_, std::defer_lock);
    if (options_.progress_thread) {
      lock.lock();
      communicating_ = false;
    }
    // The step's own flags: each rank's loss sum and its non-finite-input flag. Gathered, then combined
    // in rank order, so the loss every rank reports is the same global mean.
    const double local[2] = {scalars->loss_sum, static_cast<double>(scalars->inputs_nonfinite)};
    flags_.resize(2 * static_cast<std::size_t>(comm_.size()));
    MPI_Request flags_request = MPI_REQUEST_NULL;
    comm_.check(
        MPI_Iallgather(local, 2, MPI_DOUBLE, flags_.data(), 2, MPI_DOUBLE, comm_.native(), &flags_request),
        "MPI_Iallgather (step flags)");
    const auto start = std::chrono::steady_clock::now();
    comm_.check(MPI_Wait(&flags_request, MPI_STATUS_IGNORE), "MPI_Wait (step flags)");
    for (BucketState& bucket : buckets_)
      comm_.check(MPI_Wait(&bucket.request, MPI_STATUS_IGNORE), "MPI_Wait");
    last_wait_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (BucketState& bucket : buckets_) unpack(bucket);
    double loss_sum = flags_[0];
    int inputs_nonfinite = flags_[1] != 0.0 ? 1 : 0;
    for (int r = 1; r < comm_.size(); ++r) {
      loss_sum += flags_[2 * static_cast<std::size_t>(r)];
      if (flags_[2 * static_cast<std::size_t>(r) + 1] != 0.0) inputs_nonfinite = 1;
    }
    scalars->loss_sum = loss_sum / static_cast<double>(comm_.size());
    scalars->inputs_nonfinite = inputs_nonfinite;
  }

  /// @brief The buckets, in launch order.
  [[nodiscard]] std::vector<Bucket> buckets() const {
    std::vector<Bucket> plans;
    for (const BucketState& bucket : buckets_) plans.push_back(bucket.plan);
    return plans;
  }
  /// @brief Seconds the last `finish` waited for communication after backward: what overlap did not
  /// hide.
  [[nodiscard]] double last_wait_seconds() const noexcept { return last_wait_seconds_; }
  /// @brief The options in use.
  [[nodiscard]] const SyncOptions& options() const noexcept { return options_; }

 private:
  struct BucketState {
    Bucket plan;
    std::vector<Grad> send;     // this rank's gradients, packed (fixed_order only)
    std::vector<Grad> receive;  // every rank's (fixed_order) or the sum (mpi_allreduce)
    MPI_Request request = MPI_REQUEST_NULL;
    std::size_t pending = 0;  // gradients not yet final in this backward
  };

  std::size_t index_of(const Tensor<Grad, Host>* gradient) const {
    const auto found = index_.find(gradient);
    if (found == index_.end()) {
      throw error(
          "mpx::dist::MpiGradientSync: a gradient reported final is not one of the model's this sync "
          "was built for");
    }
    return found->second;
  }

  void launch(std::size_t b) {
    std::unique_lock lock(mpi_mutex_, std::defer_lock);
    if (options_.progress_thread) lock.lock();
    BucketState& bucket = buckets_[b];
    const auto n = static_cast<std::size_t>(bucket.plan.elements);
    const bool gather = options_.reduction == Reduction::fixed_order;
    std::vector<Grad>& packed = gather ? bucket.send : bucket.receive;
    packed.resize(n);
    std::size_t offset = 0;
    for (std::size_t t : bucket.plan.tensors) {
      const Tensor<Grad, Host>& gradient = *gradients_[t];
      const auto size = static_cast<std::size_t>(gradient.numel());
      std::memcpy(packed.data() + offset, gradient.data(), size * sizeof(Grad));
      offset += size;
    }
    if (offset != n) {
      throw error(mpx::detail::concat("mpx::dist::MpiGradientSync: bucket ", b, " holds ", offset,
                                      " gradient elements; its plan has ", n));
    }
    const int count = static_cast<int>(n);
    if (gather) {
      bucket.receive.resize(n * static_cast<std::size_t>(comm_.size()));
      comm_.check(MPI_Iallgather(bucket.send.data(), count, detail::mpi_type<Grad>(), bucket.receive.data(),
                                 count, detail::mpi_type<Grad>(), comm_.native(), &bucket.request),
                  "MPI_Iallgather (gradient bucket)");
    } else {
      comm_.check(MPI_Iallreduce(MPI_IN_PLACE, bucket.receive.data(), count, detail::mpi_type<Grad>(),
                                 MPI_SUM, comm_.native(), &bucket.request),
                  "MPI_Iallreduce (gradient bucket)");
    }
    if (options_.progress_thread) {
      communicating_ = true;
      lock.unlock();
      wake_.notify_one();
    }
  }

  // The progress thread: while a step's reductions are in flight, tests them every few tens of
  // microseconds (each test lets Open MPI advance them), taking turns with the training thread's MPI
  // calls through `mpi_mutex_`. Between steps it sleeps and makes no MPI call. An error a test
  // reports is left for `finish`'s wait on the same request to report.
  void keep_progressing() {
    std::unique_lock lock(mpi_mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || communicating_; });
      if (stop_) return;
      for (BucketState& bucket : buckets_) {
        if (bucket.request == MPI_REQUEST_NULL) continue;
        int done = 0;
        (void)MPI_Test(&bucket.request, &done, MPI_STATUS_IGNORE);
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      lock.lock();
    }
  }

  // Open MPI advances non-blocking collectives only inside MPI calls: a test per layer keeps the
  // launched buckets moving while backward computes.
  void progress() {
    for (BucketState& bucket : buckets_) {
      if (bucket.request == MPI_REQUEST_NULL) continue;
      int done = 0;
      comm_.check(MPI_Test(&bucket.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    }
  }

  void unpack(BucketState& bucket) {
    const auto n = static_cast<std::size_t>(bucket.plan.elements);
    if (options_.reduction == Reduction::fixed_order) {
      bucket.send.resize(n);  // reused as the average
      average_in_rank_order<Grad>(bucket.receive, comm_.size(), bucket.send);
    }
    const std::vector<Grad>& averaged =
        options_.reduction == Reduction::fixed_order ? bucket.send : bucket.receive;
    const Grad divisor = static_cast<Grad>(comm_.size());
    std::size_t offset = 0;
    for (std::size_t t : bucket.plan.tensors) {
      Tensor<Grad, Host>& gradient = *gradients_[t];
      const auto size = static_cast<std::size_t>(gradient.numel());
      Grad* out = gradient.data();
      if (options_.reduction == Reduction::fixed_order) {
        std::memcpy(out, averaged.data() + offset, size * sizeof(Grad));
      } else {
        for (std::size_t i = 0; i < size; ++i) out[i] = averaged[offset + i] / divisor;
      }
      offset += size;
    }
  }

  const Communicator& comm_;
  SyncOptions options_;
  std::vector<Tensor<Grad, Host>*> gradients_;  // the model's, in for_each_parameter order
  std::unordered_map<const Tensor<Grad, Host>*, std::size_t> index_;
  std::vector<std::size_t> bucket_of_;
  std::vector<char> reported_;
  std::vector<BucketState> buckets_;
  std::vector<double> flags_;
  std::size_t next_launch_ = 0;
  double last_wait_seconds_ = 0.0;
  std::mutex mpi_mutex_;          // with a progress thread: one thread at a time in MPI
  std::condition_variable wake_;  // a step started communicating, or the sync is going away
  bool communicating_ = false;    // reductions in flight for the progress thread to advance
  bool stop_ = false;             // the progress thread must end
  std::thread progress_thread_;   // started last, so everything it reads exists
};

/// @brief Deduces the gradient type from the model, as `mpx::Trainer` does.
template <class Model>
MpiGradientSync(const Communicator&, Model&) -> MpiGradientSync<accumulate_t<typename Model::precision>>;
/// @brief Deduces the gradient type from the model, as `mpx::Trainer` does.
template <class Model>
MpiGradientSync(const Communicator&, Model&, const SyncOptions&)
    -> MpiGradientSync<accumulate_t<typename Model::precision>>;

}  // namespace mpx::dist
