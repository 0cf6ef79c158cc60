// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Multi-tensor launches, as PyTorch's `multi_tensor_apply`: many tensors in one kernel, their
/// pointers in the kernel's parameters (no host-to-device copy precedes the launch, so it can be
/// captured in a CUDA graph), each tensor cut into fixed chunks and one block per chunk. The gradient
/// pass (gradient.cuh) and the optimizers (optimizer.cuh) share it.
///
/// And the "last block done" pattern of the CUDA programming guide (memory fence functions): every
/// block counts itself once its results are written, and the block that arrives last (it sees all the
/// others' results) runs what follows a reduction, a fixed-order final sum or the training step's
/// decisions, in the same kernel instead of a one-block kernel after it.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/multi_tensor.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstddef>
#include <cstdint>

namespace mpx::cuda::detail {

/// The kernel parameter space every device takes: 4 KB (CUDA 12.1 and later raise it to 32 764 bytes
/// on Volta and newer; the lists stay within the portable limit, so they work on every device and
/// every driver the toolkit supports).
inline constexpr std::size_t portable_kernel_parameter_bytes = 4096;

/// The tensors of one multi-tensor launch: `Entry` holds one tensor's pointers (and anything else
/// per tensor), `numel` its length. Kernels take it as a `__grid_constant__ const` parameter, so that
/// the block's dynamic index into it reads the parameter space in place, never a local copy. Block b works on
/// chunk b - first_chunk[t] of tensor t, where first_chunk[t] <= b < first_chunk[t + 1]; a chunk is `Chunk`
/// elements (the last one of a tensor may be shorter).
template <class Entry, int Capacity, std::int64_t Chunk>
struct TensorChunks {
  static constexpr int capacity = Capacity;     ///< tensors one launch takes
  static constexpr std::int64_t chunk = Chunk;  ///< elements a block works on
  Entry entries[Capacity];                      ///< per tensor: its pointers
  std::int64_t numel[Capacity];                 ///< per tensor: its length
  std::int64_t first_chunk[Capacity + 1];       ///< per tensor: its first block; then the total
  int count;                                    ///< tensors in the list

  /// The elements block `block` works on: tensor `tensor`, [begin, end).
  struct Range {
    int tensor;
    std::int64_t begin;
    std::int64_t end;
  };

  /// The tensor and elements of block `block` (a binary search over first_chunk, the same in every
  /// thread of the block).
  __device__ Range range(std::int64_t block) const {
    int low = 0;  // the last tensor whose first chunk is <= block
    int high = count - 1;
    while (low < high) {
      const int middle = (low + high + 1) / 2;
      if (first_chunk[middle] <= block) {
        low = middle;
      } else {
        high = middle - 1;
      }
    }
    const std::int64_t begin = (block - first_chunk[low]) * Chunk;
    const std::int64_t end = begin + Chunk < numel[low] ? begin + Chunk : numel[low];
    return {low, begin, end};
  }
};

/// Fills `TensorChunks` lists and launches each when it is full, and the last one on `finish()`.
/// `launch(list, first_block, last)` queues one kernel of `list.first_chunk[list.count]` blocks,
/// whose blocks are numbered from `first_block` over all the launches of this pass; `last` is true
/// for the final launch of the pass (the one whose last block may finish it).
template <class List>
class ChunkedLaunches {
 public:
  /// @brief Chunks of `numel` elements.
  [[nodiscard]] static constexpr std::int64_t chunks(std::int64_t numel) noexcept {
    return (numel + List::chunk - 1) / List::chunk;
  }

  /// Adds one tensor (nothing for an empty one), launching the list first when it is full. (A
  /// launch of `capacity` tensors stays far below a grid's 2^31 - 1 blocks: that would take 2^45
  /// elements.)
  template <class Entry, class Launch>
  void add(const Entry& entry, std::int64_t numel, Launch&& launch) {
    if (numel == 0) return;
    if (list_.count == List::capacity) flush(launch, false);
    list_.entries[list_.count] = entry;
    list_.numel[list_.count] = numel;
    list_.first_chunk[list_.count + 1] = list_.first_chunk[list_.count] + chunks(numel);
    ++list_.count;
  }

  /// Launches what is left as the last launch (nothing when no tensor was added: a full list is
  /// launched only when the next tensor comes, so after any `add` one is left for this).
  template <class Launch>
  void finish(Launch&& launch) {
    if (list_.count > 0) flush(launch, true);
  }

  /// Blocks of all launches so far.
  [[nodiscard]] std::int64_t launched_blocks() const noexcept { return done_; }
  /// Whether a tensor waits in the list.
  [[nodiscard]] bool pending() const noexcept { return list_.count > 0; }

 private:
  template <class Launch>
  void flush(Launch& launch, bool last) {
    launch(static_cast<const List&>(list_), done_, last);
    done_ += list_.first_chunk[list_.count];
    list_.count = 0;  // first_chunk[0] stays 0
  }

  List list_{};
  std::int64_t done_ = 0;
};

/// "Last block done": called by every thread of every block once the block's results are written,
/// returns true in every thread of the one block that arrives last, and resets `*counter` (device
/// memory, 0 before the launch) to 0 for the next launch or graph replay. Every block's writes
/// before the call are visible to the last block's reads after it, provided those reads bypass L1
/// (`__ldcg`, or an atomic): L1 is not coherent between SMs. Every thread of the block must call it
/// (it synchronises the block).
__device__ inline bool last_block_done(unsigned int* counter) {
  __shared__ bool last;
  __threadfence();  // this thread's results reach the device before the block is counted
  __syncthreads();  // ... for every thread of the block
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1u) == gridDim.x - 1;
    if (last) *counter = 0;  // every other block has counted itself: nobody else touches it now
  }
  __syncthreads();
  if (last) __threadfence();  // no read of the last block moves above the count it saw
  return last;
}

}  // namespace mpx::cuda::detail
