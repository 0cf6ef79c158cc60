// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What every kernel launcher shares: the grid for an elementwise pass, the context's stream,
/// and the launch check that names the kernel.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/launch.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"

namespace mpx::cuda::detail {

/// Threads per block of the elementwise kernels.
inline constexpr int elementwise_threads = 256;

/// Blocks for a grid-stride loop over `count` elements: enough to fill the device several times
/// over, never more than the elements need (and at least one, so an empty launch is still valid).
inline unsigned int elementwise_blocks(std::int64_t count, int threads = elementwise_threads) {
  const std::int64_t needed = (count + threads - 1) / threads;
  const std::int64_t cap = static_cast<std::int64_t>(cuda_context().properties().multiProcessorCount) * 8;
  return static_cast<unsigned int>(std::max<std::int64_t>(1, std::min(needed, cap)));
}

/// A loss seed known on the host, for the losses that take any seed with a device-callable `value()`
/// (the training step's `LossSeed` reads the loss scale from device memory instead).
struct ConstantSeed {
  float seed = 1.0f;
  [[nodiscard]] __host__ __device__ float value() const { return seed; }
};

/// Runs `f(args...)` in one thread (the training step's bookkeeping; see `cuda::single_thread`).
template <class F, class... Args>
__global__ void single_thread_kernel(F f, Args... args) {
  f(args...);
}

/// The stream every mpx kernel is queued on.
inline cudaStream_t stream() {
  return cuda_context().stream();
}

}  // namespace mpx::cuda::detail

/// Checks the launch just queued (bad configuration, missing kernel image) and names the kernel;
/// errors inside the kernel surface at the next synchronising call.
#define MPX_CUDA_CHECK_LAUNCH(kernel_name) \
  ::mpx::detail::check_cuda(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)

namespace mpx::cuda {

/// @brief Queues `f(args...)` in one device thread on the context's stream, in order with the other
/// kernels and without waiting: how a training step's bookkeeping (begin, skip and clip decisions,
/// the scaler update; train/step_scalars.hpp) runs where its scalars live. `f` is a `MPX_HOST_DEVICE`
/// functor; `args` are device pointers or values.
template <class F, class... Args>
void single_thread(const F& f, Args... args) {
  detail::single_thread_kernel<<<1, 1, 0, detail::stream()>>>(f, args...);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::single_thread_kernel");
}

}  // namespace mpx::cuda
