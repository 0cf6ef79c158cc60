// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `dist::NcclGradientSync`: data-parallel training on GPUs (one rank per GPU), the GPU form
/// of `dist::MpiGradientSync` behind the same `GradientSync` interface. NCCL reduces the gradients
/// on a communication stream of its own, each bucket ordered after the backward kernels that
/// finished it by an event, so that reduction overlaps the rest of backward; the training stream
/// waits for all of it before the gradients are inspected. Nothing in a step waits on the host.
///
/// This header needs no MPI: the ranks join NCCL from a `dist::NcclBootstrap` (NCCL's unique id,
/// shared by the caller, this rank and the number of ranks), as PyTorch's ProcessGroupNCCL joins
/// from its store. With MPI (`mpx::mpi` linked, MPX_HAS_MPI=1) it also brings in
/// mpx/dist/nccl_gradient_sync_mpi.cuh, the constructor from a `dist::Communicator`: MPI launches
/// the ranks, checks that they hold the same model and broadcasts the unique id.
///
/// Every rank gets the same bits: NCCL's ring and tree all-reduces sum each element along one chain
/// and then broadcast that one result (ring: reduce-scatter, then all-gather; tree: reduce up, then
/// broadcast down), so no rank computes its own copy of a sum.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/dist/nccl_gradient_sync.cuh holds CUDA code: compile this translation unit with nvcc (a .cu file) and link mpx::nccl"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/nccl.cuh"
#include "mpx/dist/bucket_schedule.hpp"
#include "mpx/dist/buckets.hpp"
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

class Communicator;  // mpx/dist/communicator.hpp, with MPI

/// @brief What one rank needs to join an NCCL job, as `ncclCommInitRank` takes it: NCCL's unique
/// id, made once by one rank (`ncclGetUniqueId`) and handed to every rank by the caller's own means
/// (a key-value store, a file, a socket, MPI), this rank and the number of ranks.
struct NcclBootstrap {
  ncclUniqueId id{};  ///< the same bytes on every rank
  int rank = 0;       ///< this rank, 0 to `size - 1`
  int size = 1;       ///< the number of ranks (one per GPU)
};

namespace detail {
/// The loss sum over ranks becomes their mean, where the step's scalars live.
struct LossSumMean {
  double world = 1.0;
  MPX_HOST_DEVICE void operator()(StepScalars* s) const { s->loss_sum = s->loss_sum / world; }
};

// BatchNorm2d's synchronised statistics over NCCL (SyncOptions::sync_batch_norm): an ncclAllReduce
// of the values on the sync's communication stream, ordered after the training stream's work and
// before its next, so nothing waits on the host and a captured step replays it. NCCL gives every
// rank the same bits (see the file comment). The row count is not communicated (it is on the host
// and the step does not wait for the device): every rank is taken to hold as many rows as this one,
// as the gradient average presumes too. `detach` makes it refuse work once its sync is gone.
template <class Acc>
class NcclStatisticsReducer final : public nn::StatisticsReducer<Acc, Cuda> {
 public:
  NcclStatisticsReducer(ncclComm_t comm, int rank, int world, cudaStream_t stream)
      : comm_(comm), rank_(rank), world_(world), stream_(stream) {
    MPX_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    MPX_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  }
  NcclStatisticsReducer(const NcclStatisticsReducer&) = delete;
  NcclStatisticsReducer& operator=(const NcclStatisticsReducer&) = delete;
  ~NcclStatisticsReducer() override {
    if (ready_ != nullptr) (void)cudaEventDestroy(ready_);
    if (done_ != nullptr) (void)cudaEventDestroy(done_);
  }

  std::int64_t sum_over_ranks(Tensor<Acc, Cuda>& values, std::int64_t count) override {
    if (comm_ == nullptr) this->throw_without_sync("mpx::dist::NcclGradientSync");
    const cudaStream_t training = cuda::detail::stream();
    MPX_CUDA_CHECK(cudaEventRecord(ready_, training));
    MPX_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
    cuda::check_nccl(ncclAllReduce(values.data(), values.data(), static_cast<std::size_t>(values.numel()),
                                   cuda::nccl_type<Acc>(), ncclSum, comm_, stream_),
                     "ncclAllReduce (BatchNorm2d statistics)", rank_);
    MPX_CUDA_CHECK(cudaEventRecord(done_, stream_));
    MPX_CUDA_CHECK(cudaStreamWaitEvent(training, done_, 0));
    return count * world_;
  }

  // From here on every call throws.
  void detach() noexcept { comm_ = nullptr; }

 private:
  ncclComm_t comm_;
  int rank_;
  int world_;
  cudaStream_t stream_;  // the sync's communication stream, in order with the gradient buckets
  cudaEvent_t ready_ = nullptr;
  cudaEvent_t done_ = nullptr;
};
}  // namespace detail

/// @brief Averages `mpx::Trainer`'s gradients across ranks on their GPUs with NCCL; see the file
/// comment. Construct it on every rank after the model (collective; it checks that all ranks hold
/// the same model), with the rank's GPU selected, from an MPI `Communicator`:
/// @code
/// mpx::dist::NcclGradientSync sync(comm, model);
/// mpx::Trainer trainer(model, loss, optimizer, sync);
/// @endcode
/// or, without MPI, from an `NcclBootstrap` (see the constructor). After construction only NCCL is
/// used. With `SyncOptions::sync_batch_norm`, every rank's batch must have as many rows as the others
/// (the statistics' count is this rank's times the world size). `SyncOptions::reduction` and
/// `SyncOptions::timeout` do not apply (NCCL always reduces
/// with ncclAllReduce, and after construction nothing here waits on the host; a rank that dies ends
/// the job through its launcher).
/// @tparam Grad the gradients' element type (fp32, or fp64 under fp64).
template <class Grad>
class NcclGradientSync final : public GradientSync<Cuda, Grad> {
 public:
  /// @brief The gradient tensors the trainer hands over.
  using GradientList = typename GradientSync<Cuda, Grad>::GradientList;

  /// @brief Joins the NCCL communicator that `bootstrap` names and plans the buckets; needs no MPI.
  ///
  /// Every rank constructs one (collective: NCCL waits for all `bootstrap.size` ranks), with its GPU
  /// selected and the same model built; the ranks then compare their models over NCCL (one
  /// all-gather of `model_signature`s). How the unique id reaches the ranks is the caller's
  /// business, as with PyTorch's ProcessGroupNCCL and its store. A job of one rank has nothing to
  /// share:
  /// @code
  /// mpx::dist::NcclBootstrap bootstrap{.rank = 0, .size = 1};
  /// ncclGetUniqueId(&bootstrap.id);  // with several ranks: rank 0 does this and sends the bytes
  /// mpx::dist::NcclGradientSync sync(bootstrap, model);
  /// mpx::Trainer trainer(model, loss, optimizer, sync);
  /// @endcode
  /// Throws `mpx::invalid_argument` unless 0 <= `bootstrap.rank` < `bootstrap.size` (before calling
  /// NCCL) or when the ranks hold different models (naming the ranks that differ), and
  /// `cuda::nccl_error` when NCCL fails.
  template <class Model>
  NcclGradientSync(const NcclBootstrap& bootstrap, Model& model, const SyncOptions& options = {})
      : options_(options.validate()),
        nccl_(bootstrap.id, bootstrap.rank, bootstrap.size),
        schedule_(model_gradients<Tensor<Grad, Cuda>>(model), options_.bucket_elements<Grad>(), owner),
        buffers_of_model_([&model] { return model_buffers(model); }) {
    require_same_model_across_ranks(model_signature(model));
    MPX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MPX_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    MPX_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    if (options_.sync_batch_norm) {
      statistics_ = std::make_shared<detail::NcclStatisticsReducer<Grad>>(nccl_.native(), nccl_.rank(),
                                                                          nccl_.size(), stream_);
      nn::synchronise_batch_statistics(model,
                                       std::shared_ptr<nn::StatisticsReducer<Grad, Cuda>>(statistics_));
    }
  }

  /// @brief Joins NCCL from the ranks of an MPI communicator (collective over `comm`).
  ///
  /// Broadcasts rank 0's NCCL unique id over `comm`, then does what the `NcclBootstrap`
  /// constructor does (the model comparison included); `comm` is not used afterwards. Defined in
  /// mpx/dist/nccl_gradient_sync_mpi.cuh, which this header includes when MPX_HAS_MPI is 1: link
  /// `mpx::mpi` beside `mpx::nccl`.
  template <class Model>
  NcclGradientSync(const Communicator& comm, Model& model, const SyncOptions& options = {});

  /// @brief Releases the stream and events (after the work queued on them).
  ~NcclGradientSync() override {
    if (statistics_) statistics_->detach();  // layers that still hold it get an error, not this dead sync
    if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
    if (ready_ != nullptr) (void)cudaEventDestroy(ready_);
    if (done_ != nullptr) (void)cudaEventDestroy(done_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }

  /// @brief This process's rank in the NCCL communicator.
  [[nodiscard]] int rank() const override { return nccl_.rank(); }

  /// @brief Forgets the last step's reports.
  void begin_backward() override { schedule_.begin(); }

  /// @brief Marks `gradients` final and queues, in bucket order, the reduction of every bucket whose
  /// gradients are all final, ordered after the kernels queued so far on the training stream.
  void gradients_final(GradientList gradients) override {
    schedule_.report(gradients);
    if (!options_.overlap || !schedule_.next_ready()) return;
    follow_training_stream();
    while (schedule_.next_ready()) launch(schedule_.take_next());
  }

  /// @brief Queues the remaining buckets, the step's flags and FP8 amaxes, then makes the training
  /// stream wait for all of it and divides the sums by the world size there.
  void finish(GradientList gradients, StepScalars* scalars, std::span<float> amaxes) override {
    schedule_.require_same_gradients(gradients);
    follow_training_stream();
    while (!schedule_.all_taken()) launch(schedule_.take_next());
    const int rank = nccl_.rank();
    cuda::check_nccl(ncclGroupStart(), "ncclGroupStart", rank);
    cuda::check_nccl(ncclAllReduce(&scalars->loss_sum, &scalars->loss_sum, 1, ncclFloat64, ncclSum,
                                   nccl_.native(), stream_),
                     "ncclAllReduce (loss sum)", rank);
    cuda::check_nccl(ncclAllReduce(&scalars->inputs_nonfinite, &scalars->inputs_nonfinite, 1, ncclInt32,
                                   ncclMax, nccl_.native(), stream_),
                     "ncclAllReduce (non-finite inputs)", rank);
    if (!amaxes.empty()) {
      cuda::check_nccl(ncclAllReduce(amaxes.data(), amaxes.data(), amaxes.size(), ncclFloat32, ncclMax,
                                     nccl_.native(), stream_),
                       "ncclAllReduce (FP8 amaxes)", rank);
    }
    if (options_.broadcast_buffers && nccl_.size() > 1) {  // rank 0's, after this step's forward
      for (const BufferBytes& buffer : buffers_of_model_()) {
        cuda::check_nccl(
            ncclBroadcast(buffer.data, buffer.data, buffer.bytes, ncclUint8, 0, nccl_.native(), stream_),
            "ncclBroadcast (buffer)", rank);
      }
    }
    cuda::check_nccl(ncclGroupEnd(), "ncclGroupEnd", rank);
    MPX_CUDA_CHECK(cudaEventRecord(done_, stream_));
    const cudaStream_t training = cuda::detail::stream();
    MPX_CUDA_CHECK(cudaStreamWaitEvent(training, done_, 0));
    const auto world = static_cast<Grad>(nccl_.size());
    for (Tensor<Grad, Cuda>* gradient : schedule_.gradients())
      cuda::divide(gradient->data(), gradient->numel(), world, training);
    cuda::single_thread(detail::LossSumMean{static_cast<double>(nccl_.size())}, scalars);
    schedule_.begin();  // ready for the next step, whether or not the trainer calls begin_backward first
  }

  /// @brief The buckets, in launch order.
  [[nodiscard]] const std::vector<Bucket>& buckets() const noexcept { return schedule_.buckets(); }

 private:
  static constexpr std::string_view owner = "mpx::dist::NcclGradientSync";

  // Every rank's signature, all-gathered over NCCL on the training stream, compared on the host
  // (dist::require_same_model): every rank sees the same list, so all throw or none does.
  void require_same_model_across_ranks(const ModelSignature& mine) {
    const auto world = static_cast<std::size_t>(nccl_.size());
    const std::size_t bytes = sizeof(ModelSignature) * (world + 1);
    struct Release {
      std::size_t bytes;
      void operator()(unsigned char* pointer) const noexcept {
        DeviceMemory<Cuda>::deallocate(pointer, bytes);
      }
    };
    auto* device = static_cast<unsigned char*>(DeviceMemory<Cuda>::allocate(bytes));
    const std::unique_ptr<unsigned char, Release> hold(device, Release{bytes});
    DeviceMemory<Cuda>::copy_from_host(device, &mine, sizeof mine);
    cuda::check_nccl(ncclAllGather(device, device + sizeof mine, sizeof mine, ncclUint8, nccl_.native(),
                                   cuda::detail::stream()),
                     "ncclAllGather (model signature)", nccl_.rank());
    std::vector<ModelSignature> all(world);
    DeviceMemory<Cuda>::copy_to_host(all.data(), device + sizeof mine, sizeof(ModelSignature) * world);
    require_same_model(all, owner);
  }

  // The communication stream waits for what the training stream has queued so far.
  void follow_training_stream() {
    MPX_CUDA_CHECK(cudaEventRecord(ready_, cuda::detail::stream()));
    MPX_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
  }

  void launch(std::size_t b) {
    const int rank = nccl_.rank();
    cuda::check_nccl(ncclGroupStart(), "ncclGroupStart", rank);
    for (std::size_t t : schedule_.buckets()[b].tensors) {
      Tensor<Grad, Cuda>& gradient = *schedule_.gradients()[t];
      cuda::check_nccl(
          ncclAllReduce(gradient.data(), gradient.data(), static_cast<std::size_t>(gradient.numel()),
                        cuda::nccl_type<Grad>(), ncclSum, nccl_.native(), stream_),
          "ncclAllReduce (gradient bucket)", rank);
    }
    cuda::check_nccl(ncclGroupEnd(), "ncclGroupEnd", rank);
  }

  SyncOptions options_;
  cuda::NcclCommunicator nccl_;
  BucketSchedule<Tensor<Grad, Cuda>> schedule_;
  std::function<std::vector<BufferBytes>()> buffers_of_model_;  // the model's buffers, asked at each step
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  cudaEvent_t done_ = nullptr;
  std::shared_ptr<detail::NcclStatisticsReducer<Grad>> statistics_;  // sync_batch_norm: the layers' reducer
};

/// @brief Deduces the gradient type from the model, as `mpx::Trainer` does.
template <class Model>
NcclGradientSync(const NcclBootstrap&, Model&) -> NcclGradientSync<accumulate_t<typename Model::precision>>;
/// @brief Deduces the gradient type from the model, as `mpx::Trainer` does.
template <class Model>
NcclGradientSync(const NcclBootstrap&, Model&, const SyncOptions&)
    -> NcclGradientSync<accumulate_t<typename Model::precision>>;
/// @brief Deduces the gradient type from the model, as `mpx::Trainer` does.
template <class Model>
NcclGradientSync(const Communicator&, Model&) -> NcclGradientSync<accumulate_t<typename Model::precision>>;
/// @brief Deduces the gradient type from the model, as `mpx::Trainer` does.
template <class Model>
NcclGradientSync(const Communicator&, Model&, const SyncOptions&)
    -> NcclGradientSync<accumulate_t<typename Model::precision>>;

}  // namespace mpx::dist

// With MPI, the constructor from a Communicator (declared above) is defined there.
#if MPX_HAS_MPI
#include "mpx/dist/nccl_gradient_sync_mpi.cuh"
#endif  // MPX_HAS_MPI
