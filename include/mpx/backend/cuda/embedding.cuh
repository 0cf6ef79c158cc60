// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Token embedding on the GPU with mpx::cpu::embedding_*'s contracts: forward gathers rows,
/// backward accumulates the fp32 weight gradient in position order, bit for bit the CPU's.
///
/// Backward is deterministic without float atomics: the (id, position) pairs are sorted by id with
/// CUB's radix sort, which is stable, so each id's positions stay in increasing order; then the
/// thread block that meets the first position of a run of equal ids adds the run's rows of dy, in
/// order, onto that id's gradient row (one thread per column). The sort is O(tokens) over
/// bit_width(num_embeddings) key bits (two passes for a 50k vocabulary), and the sums touch each
/// element of dy once, so the cost does not depend on how often ids repeat beyond the length of the
/// longest run, which one block walks.
///
/// Ids outside [0, num_embeddings) cannot throw in a kernel: forward writes NaN into their rows (the
/// loss and gradients become NaN and the training step is skipped as non-finite); backward sorts them
/// last and leaves the gradient untouched for them.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/embedding.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

#include <cub/device/device_radix_sort.cuh>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/device_array.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/reduce.cuh"
#include "mpx/backend/embedding_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

/// @brief The device buffers of `embedding_backward`'s sort: two key and two position arrays of one
/// 32-bit word per token (16 bytes per token in all) and CUB's scratch. Grown by a call that needs
/// more and kept, so that calls of the same size allocate nothing (and may be captured in a CUDA
/// graph after the first); owned by the layer, freed with it, counted in `memory_stats<Cuda>()`.
class EmbeddingWorkspace {
 public:
  /// @brief Makes room for sorting `tokens` keys of `key_bits` bits (allocates only when growing).
  void reserve(std::int64_t tokens, int key_bits) {
    const auto count = static_cast<std::size_t>(tokens);
    if (keys_[0].size() < count) {
      for (int k = 0; k < 2; ++k) {
        keys_[k] = DeviceArray<std::uint32_t>(count);
        positions_[k] = DeviceArray<std::uint32_t>(count);
      }
    }
    if (tokens != sized_tokens_ || key_bits != sized_bits_) {
      cub::DoubleBuffer<std::uint32_t> keys(keys_[0].data(), keys_[1].data());
      cub::DoubleBuffer<std::uint32_t> positions(positions_[0].data(), positions_[1].data());
      std::size_t bytes = 0;
      MPX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, positions, tokens, 0, key_bits,
                                                     detail::stream()));
      if (scratch_.size() < bytes) scratch_ = DeviceArray<std::byte>(bytes);
      scratch_bytes_ = bytes;
      sized_tokens_ = tokens;
      sized_bits_ = key_bits;
    }
  }

  /// @brief Key buffer `k` (0 or 1) of the double buffer.
  [[nodiscard]] std::uint32_t* keys(int k) noexcept { return keys_[k].data(); }
  /// @brief Position buffer `k` (0 or 1) of the double buffer.
  [[nodiscard]] std::uint32_t* positions(int k) noexcept { return positions_[k].data(); }
  /// @brief CUB's scratch memory.
  [[nodiscard]] void* scratch() noexcept { return scratch_.data(); }
  /// @brief Bytes of scratch the last `reserve`'s sort needs.
  [[nodiscard]] std::size_t scratch_bytes() const noexcept { return scratch_bytes_; }

 private:
  DeviceArray<std::uint32_t> keys_[2];
  DeviceArray<std::uint32_t> positions_[2];
  DeviceArray<std::byte> scratch_;
  std::size_t scratch_bytes_ = 0;
  std::int64_t sized_tokens_ = -1;
  int sized_bits_ = -1;
};

namespace detail {

// out[n, :] = weight[ids[n], :], or `nan` in every column when ids[n] is outside [0, num_embeddings);
// one block per token (grid-stride over tokens), one thread per column.
template <class T>
__global__ void embedding_forward_kernel(const std::int32_t* ids, const T* weight, std::int64_t tokens,
                                         std::int64_t dim, std::int64_t num_embeddings, T nan, T* out) {
  for (std::int64_t n = blockIdx.x; n < tokens; n += gridDim.x) {
    const std::int64_t id = ids[n];
    const bool valid = id >= 0 && id < num_embeddings;
    T* row = out + n * dim;
    const T* source = weight + (valid ? id : 0) * dim;
    for (std::int64_t c = threadIdx.x; c < dim; c += blockDim.x) row[c] = valid ? source[c] : nan;
  }
}

// keys[n] = ids[n] when valid, else num_embeddings (which sorts after every valid id); positions[n] = n.
// (A template, as every kernel in these headers, so that each translation unit may hold its copy.)
template <class Key>
__global__ void embedding_keys_kernel(const std::int32_t* ids, std::int64_t tokens,
                                      std::int64_t num_embeddings, Key* keys, Key* positions) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; n < tokens;
       n += stride) {
    const std::int64_t id = ids[n];
    keys[n] = static_cast<Key>(id >= 0 && id < num_embeddings ? id : num_embeddings);
    positions[n] = static_cast<Key>(n);
  }
}

// For each run of equal keys in the sorted `keys` (positions ascending within it), the block that
// meets the run's first element sums dy's rows at the run's positions, in order, and adds the sum to
// the id's gradient row once: dweight[id, c] += (dy[p1, c] + dy[p2, c]) + ..., the CPU's order.
// Grid: x strides over sorted elements, y over column tiles of blockDim.x columns.
template <class T, class Acc>
__global__ void embedding_backward_kernel(const std::uint32_t* keys, const std::uint32_t* positions,
                                          const T* dy, std::int64_t tokens, std::int64_t dim,
                                          std::uint32_t num_embeddings, Acc* dweight) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= dim) return;
  for (std::int64_t i = blockIdx.x; i < tokens; i += gridDim.x) {
    const std::uint32_t id = keys[i];
    if (id >= num_embeddings) return;          // ids out of range sort last: nothing left to add
    if (i > 0 && keys[i - 1] == id) continue;  // inside a run another block (or this one) handles
    Acc sum = 0;
    for (std::int64_t j = i; j < tokens && keys[j] == id; ++j)
      sum += static_cast<Acc>(dy[static_cast<std::int64_t>(positions[j]) * dim + c]);
    dweight[static_cast<std::int64_t>(id) * dim + c] += sum;
  }
}

}  // namespace detail

/// @brief out[n, :] = weight[ids[n], :] for every position n of `ids` (rows keep their bits).
///
/// @param ids    token ids in device memory, rank 1 to 3.
/// @param weight [num_embeddings, dim] in the compute type.
/// @param out    ids' shape with dim appended, written. The row of an id outside [0, num_embeddings)
///               is NaN (a kernel cannot throw; the training step then skips as non-finite).
template <FloatingElement T>
void embedding_forward(const Tensor<std::int32_t, Cuda>& ids, const Tensor<T, Cuda>& weight,
                       Tensor<T, Cuda>& out) {
  validate_embedding_forward("mpx::cuda::embedding_forward", ids, weight, out);
  const std::int64_t tokens = ids.numel();
  const std::int64_t dim = weight.shape()[1];
  if (tokens == 0) return;
  const T nan = round_to<tag_of_t<T>>(std::numeric_limits<accumulate_t<T>>::quiet_NaN());
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(tokens, std::int64_t{1} << 20));
  detail::embedding_forward_kernel<<<blocks, detail::row_threads(dim), 0, detail::stream()>>>(
      ids.data(), weight.data(), tokens, dim, weight.shape()[0], nan, out.data());
  MPX_CUDA_CHECK_LAUNCH("embedding_forward_kernel");
}

/// @brief dweight[ids[n], :] += dy[n, :] in position order (see the file comment): the bits of
/// mpx::cpu::embedding_backward. Positions whose id is outside [0, num_embeddings) are skipped.
///
/// @param ids       token ids in device memory, as given to forward.
/// @param dy        ids' shape with dim appended, in the compute type.
/// @param dweight   [num_embeddings, dim] in the accumulate type, accumulated (+=).
/// @param workspace the sort's buffers, grown on demand and kept (see `EmbeddingWorkspace`).
template <FloatingElement T, FloatingElement Acc>
void embedding_backward(const Tensor<std::int32_t, Cuda>& ids, const Tensor<T, Cuda>& dy,
                        Tensor<Acc, Cuda>& dweight, EmbeddingWorkspace& workspace) {
  constexpr const char* where = "mpx::cuda::embedding_backward";
  validate_embedding_backward(where, ids, dy, dweight);
  const std::int64_t tokens = ids.numel();
  const std::int64_t num_embeddings = dweight.shape()[0];
  const std::int64_t dim = dweight.shape()[1];
  if (tokens > std::numeric_limits<std::uint32_t>::max() ||
      num_embeddings >= std::numeric_limits<std::int32_t>::max()) {
    throw invalid_argument(mpx::detail::concat(where, ": ", tokens, " tokens of a vocabulary of ",
                                               num_embeddings,
                                               " exceed the sort's 32-bit keys and positions"));
  }
  if (tokens == 0 || dim == 0) return;
  // Keys 0 .. num_embeddings (the last one marks ids out of range).
  const int key_bits = std::bit_width(static_cast<std::uint32_t>(num_embeddings));
  workspace.reserve(tokens, key_bits);

  detail::embedding_keys_kernel<<<detail::elementwise_blocks(tokens), detail::elementwise_threads, 0,
                                  detail::stream()>>>(ids.data(), tokens, num_embeddings, workspace.keys(0),
                                                      workspace.positions(0));
  MPX_CUDA_CHECK_LAUNCH("embedding_keys_kernel");

  cub::DoubleBuffer<std::uint32_t> keys(workspace.keys(0), workspace.keys(1));
  cub::DoubleBuffer<std::uint32_t> positions(workspace.positions(0), workspace.positions(1));
  std::size_t bytes = workspace.scratch_bytes();
  MPX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(workspace.scratch(), bytes, keys, positions, tokens, 0,
                                                 key_bits, detail::stream()));

  const int threads = detail::row_threads(dim);
  const auto column_tiles = static_cast<unsigned>((dim + threads - 1) / threads);
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(tokens, std::int64_t{1} << 16));
  detail::embedding_backward_kernel<<<dim3(blocks, column_tiles), threads, 0, detail::stream()>>>(
      keys.Current(), positions.Current(), dy.data(), tokens, dim, static_cast<std::uint32_t>(num_embeddings),
      dweight.data());
  MPX_CUDA_CHECK_LAUNCH("embedding_backward_kernel");
}

}  // namespace mpx::cuda
