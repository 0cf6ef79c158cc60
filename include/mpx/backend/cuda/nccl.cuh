// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief NCCL, the GPU's collectives: `cuda::NcclCommunicator` (ncclCommInitRank as an object),
/// `cuda::check_nccl`, and `cuda::divide`, the kernel that turns a sum over ranks into a mean.
/// Bootstrapping (sharing the unique id) is the caller's: mpx::dist takes it from the caller
/// (`dist::NcclBootstrap`) or broadcasts it over MPI.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/nccl.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::nccl"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <nccl.h>

#include <cstdint>
#include <type_traits>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/error.hpp"

namespace mpx::cuda {

/// @brief A failed NCCL call; the message names the call, the rank and NCCL's own text.
class nccl_error : public error {
 public:
  using error::error;
};

/// @brief Throws `nccl_error` naming `call` and `rank` unless `status` is `ncclSuccess`.
inline void check_nccl(ncclResult_t status, const char* call, int rank) {
  if (status == ncclSuccess) return;
  throw nccl_error(mpx::detail::concat(call, " failed on rank ", rank, ": ", ncclGetErrorString(status), " (",
                                       ncclGetLastError(nullptr), ")"));
}

/// @brief NCCL's name for the element type T (fp32, fp64, int32).
template <class T>
ncclDataType_t nccl_type() {
  if constexpr (std::is_same_v<T, float>) {
    return ncclFloat32;
  } else if constexpr (std::is_same_v<T, double>) {
    return ncclFloat64;
  } else {
    static_assert(std::is_same_v<T, int>, "mpx::cuda::nccl_type: fp32, fp64 or int32");
    return ncclInt32;
  }
}

/// @brief One rank's NCCL communicator on the current device, made from a unique id every rank
/// shares (collective: every rank constructs its own with the same id).
class NcclCommunicator {
 public:
  /// @brief Joins the communicator of `size` ranks identified by `id` as rank `rank`; throws
  /// `mpx::invalid_argument` (before any NCCL or CUDA call) unless 0 <= rank < size.
  NcclCommunicator(const ncclUniqueId& id, int rank, int size) : rank_(rank), size_(size) {
    if (size < 1 || rank < 0 || rank >= size) {
      throw invalid_argument(mpx::detail::concat("mpx::cuda::NcclCommunicator: rank ", rank, " of ", size,
                                                 " ranks; expected size >= 1 and 0 <= rank < size"));
    }
    check_nccl(ncclCommInitRank(&comm_, size, id, rank), "ncclCommInitRank", rank);
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  /// @brief Destroys the communicator.
  ~NcclCommunicator() {
    if (comm_ != nullptr) (void)ncclCommDestroy(comm_);
  }
  /// @brief The NCCL handle.
  [[nodiscard]] ncclComm_t native() const noexcept { return comm_; }
  /// @brief This rank.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// @brief Number of ranks.
  [[nodiscard]] int size() const noexcept { return size_; }

 private:
  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
};

namespace detail {
template <class T>
__global__ void divide_kernel(T* data, std::int64_t count, T divisor) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    data[i] = data[i] / divisor;
  }
}
}  // namespace detail

/// @brief `data[i] /= divisor` for `count` elements on `stream`: a sum over ranks becomes their
/// mean, rounded once, as the CPU path (dist/buckets.hpp) does.
template <class T>
void divide(T* data, std::int64_t count, T divisor, cudaStream_t stream) {
  if (count == 0) return;
  detail::divide_kernel<T>
      <<<detail::elementwise_blocks(count), detail::elementwise_threads, 0, stream>>>(data, count, divisor);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::divide_kernel");
}

}  // namespace mpx::cuda
