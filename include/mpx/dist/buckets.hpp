// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Gradient buckets: which gradients are reduced together (`plan_buckets`), and the one
/// reduction mpx trusts to give every rank the same bits (`average_in_rank_order`). Plain functions,
/// no MPI: the MPI and NCCL gradient syncs use them, and the unit tests check them alone.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mpx/error.hpp"

namespace mpx::dist {

/// @brief How a bucket's gradients are summed across ranks.
enum class Reduction {
  /// Every rank gathers every rank's bucket (MPI_Iallgather) and sums them in rank order 0, 1, ...,
  /// then divides by the world size: the same operations on the same data, so the same bits on every
  /// rank, whatever the MPI library's algorithm, and the same bits as one process accumulating the
  /// ranks' batches as micro-batches. Receives world-size times the bucket: meant for the handful of
  /// ranks of one or a few nodes.
  fixed_order,
  /// The same sums as `fixed_order`, so the same bits, at the cost of about twice the bucket
  /// instead of world-size times it: each rank owns one shard of every bucket, receives every
  /// rank's copy of that shard (MPI_Ialltoallv), averages it in rank order, and the ranks then
  /// gather the averaged shards (MPI_Iallgatherv). Two collectives per bucket instead of one: for
  /// more ranks than a node or two holds, or for buckets too large to receive world-size times.
  fixed_order_sharded,
  /// MPI_Iallreduce(MPI_SUM), then division by the world size: bandwidth-optimal, but the order of
  /// the sum is the library's. The MPI standard only "strongly recommends" that a reduction give the
  /// same result whenever applied to the same arguments in the same order; Open MPI's algorithms (recursive
  /// doubling, ring, reduce-scatter + allgather) give
  /// every rank the same bits, since each element is either summed once and broadcast or summed by
  /// operands paired commutatively, and the weight-hash tests check that they do.
  mpi_allreduce,
};

/// @brief The enumerator's name ("fixed_order", ...), as messages and benchmark records write it.
[[nodiscard]] constexpr std::string_view reduction_name(Reduction reduction) noexcept {
  switch (reduction) {
    case Reduction::fixed_order: return "fixed_order";
    case Reduction::fixed_order_sharded: return "fixed_order_sharded";
    case Reduction::mpi_allreduce: return "mpi_allreduce";
  }
  return "unknown";
}

/// @brief How a gradient sync (MPI or NCCL) groups and reduces gradients; the same on every rank.
struct SyncOptions {
  /// @brief Bytes of gradient per bucket (PyTorch DDP uses 25 MiB; smaller buckets start
  /// communicating earlier in backward, larger ones pay less per-call overhead).
  std::int64_t bucket_bytes = std::int64_t{4} << 20;
  /// @brief How buckets are summed (MPI only; NCCL always uses ncclAllReduce).
  Reduction reduction = Reduction::fixed_order;
  /// @brief Launch each bucket as soon as backward has finished its gradients; false: launch them
  /// all after backward (for measuring what overlap hides).
  bool overlap = true;
  /// @brief MPI only: a helper thread keeps the launched reductions moving while backward computes.
  /// Open MPI advances a non-blocking collective only inside MPI calls, so without it a bucket
  /// progresses only when backward reports a layer. Needs MPI at MPI_THREAD_SERIALIZED or more
  /// (what `dist::Environment` asks for); costs some of a core while a step communicates.
  bool progress_thread = false;
  /// @brief MPI only: how long a rank waits in a step's gradient exchange for the other ranks
  /// before it throws `dist::timeout_error` naming the ranks that never reached it (a rank that
  /// hangs without dying: a dead one ends the job through mpirun at once). The default is PyTorch's
  /// for NCCL process groups, ten minutes. Zero waits forever and saves the arrival messages that
  /// name the late ranks (two empty messages per pair of ranks per step).
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  /// @brief After each step, every rank's buffers (BatchNorm's running statistics: state saved with
  /// the weights but not trained) become rank 0's, as PyTorch DDP's `broadcast_buffers` (default
  /// true) makes them. DDP broadcasts before each forward; mpx broadcasts after each step, so that
  /// every rank also evaluates and checkpoints with rank 0's statistics. False: each rank keeps the
  /// running statistics of its own batches. Either way each rank normalises a training batch with
  /// that batch's own statistics (DDP's default; not SyncBatchNorm).
  bool broadcast_buffers = true;
  /// @brief Every `BatchNorm2d` of the model normalises a training batch with the statistics of all
  /// the ranks' batches together (PyTorch's SyncBatchNorm): per layer, two sums over the ranks in
  /// forward (of x, then of its squared deviations: two-pass, as one process computes them) and one
  /// in backward (of dy and dy xhat), in rank order, so every rank gets the same bits. False (the
  /// default, as DDP's): each rank's own batch. The gradient sync hands its reducer to the model's
  /// layers at construction and takes it back when it is destroyed.
  bool sync_batch_norm = false;

  /// @brief Elements of `T` per bucket: `bucket_bytes` rounded down, at least one.
  template <class T>
  [[nodiscard]] std::int64_t bucket_elements() const noexcept {
    return std::max<std::int64_t>(1, bucket_bytes / std::int64_t{sizeof(T)});
  }

  /// @brief The longest `timeout` (a year): a longer one would overflow the clock's deadline.
  static constexpr std::chrono::milliseconds max_timeout = std::chrono::hours(24 * 365);

  /// @brief Throws `mpx::invalid_argument` naming the field unless 1 <= `bucket_bytes` < 2^31 and
  /// 0 <= `timeout` <= `max_timeout`; returns these options (for a constructor's member initialiser).
  const SyncOptions& validate() const {
    if (timeout.count() < 0 || timeout > max_timeout) {
      throw invalid_argument(mpx::detail::concat("mpx::dist::SyncOptions: timeout = ", timeout.count(),
                                                 " ms is invalid; expected 0 to ", max_timeout.count(),
                                                 " ms (a year); 0 waits forever"));
    }
    if (bucket_bytes < 1 || bucket_bytes >= (std::int64_t{1} << 31)) {
      throw invalid_argument(mpx::detail::concat("mpx::dist::SyncOptions: bucket_bytes = ", bucket_bytes,
                                                 " is invalid; expected 1 <= bucket_bytes < 2^31"));
    }
    return *this;
  }
};

/// @brief The gradients (indices into the model's parameters, in `for_each_parameter` order) that
/// are reduced together, and their total number of elements.
struct Bucket {
  std::vector<std::size_t> tensors;  ///< parameter indices, in the order backward finishes them
  std::int64_t elements = 0;         ///< total elements of those gradients
};

/// @brief Groups gradients of `sizes[i]` elements into buckets of at most `bucket_elements`
/// (a larger gradient gets a bucket of its own), walking the parameters from the last to the first:
/// backward finishes the last layers first, so the first bucket is ready first (PyTorch DDP's order).
/// Throws `mpx::invalid_argument` unless `bucket_elements >= 1`.
[[nodiscard]] inline std::vector<Bucket> plan_buckets(std::span<const std::int64_t> sizes,
                                                      std::int64_t bucket_elements) {
  if (bucket_elements < 1) {
    throw invalid_argument(mpx::detail::concat("mpx::dist::plan_buckets: bucket_elements = ", bucket_elements,
                                               " is invalid; expected >= 1"));
  }
  std::vector<Bucket> buckets;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (buckets.empty() ||
        (buckets.back().elements > 0 && buckets.back().elements + sizes[i] > bucket_elements)) {
      buckets.emplace_back();
    }
    buckets.back().tensors.push_back(i);
    buckets.back().elements += sizes[i];
  }
  return buckets;
}

/// @brief `out[i] = (((gathered[0][i] + gathered[1][i]) + gathered[2][i]) + ...) / world`, where
/// `gathered` holds `world` consecutive blocks of `out.size()` elements, block r from rank r. Every
/// rank that calls it on the same gathered data gets the same bits. Throws `mpx::shape_error` unless
/// `gathered.size() == world * out.size()`.
template <class T>
void average_in_rank_order(std::span<const T> gathered, int world, std::span<T> out) {
  if (world < 1 || gathered.size() != static_cast<std::size_t>(world) * out.size()) {
    throw shape_error(mpx::detail::concat("mpx::dist::average_in_rank_order: ", gathered.size(),
                                          " gathered elements for ", world, " ranks of ", out.size()));
  }
  // Block by block (streaming through memory); each element still sees the same additions in the
  // same order.
  const std::size_t n = out.size();
  for (std::size_t i = 0; i < n; ++i) out[i] = gathered[i];
  for (std::size_t r = 1; r < static_cast<std::size_t>(world); ++r) {
    const T* block = gathered.data() + r * n;
    for (std::size_t i = 0; i < n; ++i) out[i] += block[i];
  }
  const T divisor = static_cast<T>(world);
  for (std::size_t i = 0; i < n; ++i) out[i] /= divisor;
}

}  // namespace mpx::dist
