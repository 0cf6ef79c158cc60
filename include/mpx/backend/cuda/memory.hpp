// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `DeviceMemory<Cuda>` (stream-ordered allocation from the device's memory pool, counted in
/// `memory_stats<Cuda>()`) and `DeviceTransfer` between the host and the GPU, behind `mpx::to<Device>`
/// and `mpx::copy`.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error "mpx/backend/cuda/memory.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/device.hpp"
#include "mpx/tensor/host_memory.hpp"
#include "mpx/tensor/memory_stats.hpp"
#include "mpx/tensor/tensor.hpp"
#include "mpx/tensor/transfer.hpp"

namespace mpx {

/// @brief Device memory through `cudaMallocAsync` on `cuda_context()`'s stream, from the device's
/// default pool (which `CudaContext` sets to keep freed memory). All operations are ordered on that
/// stream; `zero` and `copy` do not wait for completion.
template <>
struct DeviceMemory<Cuda> {
  /// cudaMallocAsync returns at least 256-byte aligned memory; cuBLASLt's fastest kernels need 16.
  static constexpr std::size_t alignment = 256;

  /// @brief Uninitialised device bytes; throws `mpx::out_of_memory` naming the requested bytes and
  /// the device's free bytes (`cudaMemGetInfo`), `mpx::error` without a device.
  [[nodiscard]] static void* allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    CudaContext& context = cuda_context();
    // An allocation inside a CUDA graph capture would belong to the graph, and the layer holding it
    // would read freed memory after the graph is destroyed or replayed twice: refuse it.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    MPX_CUDA_CHECK(cudaStreamIsCapturing(context.stream(), &capture));
    if (capture != cudaStreamCaptureStatusNone) {
      throw error(detail::concat("mpx: CUDA allocation of ", bytes,
                                 " bytes while the stream is being captured into a CUDA graph; run one "
                                 "eager step with the same shapes first, so that every buffer exists"));
    }
    void* pointer = nullptr;
    const cudaError_t status = cudaMallocAsync(&pointer, bytes, context.stream());
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: clear it so the next call does not see it
      std::size_t free_bytes = 0;
      std::size_t total_bytes = 0;
      (void)cudaMemGetInfo(&free_bytes, &total_bytes);
      throw out_of_memory(detail::concat(
          "mpx: CUDA allocation of ", bytes, " bytes failed on device ", context.device(), " (", free_bytes,
          " of ", total_bytes, " bytes free, ", memory_stats<Cuda>().live_bytes(), " held by mpx tensors)"));
    }
    detail::check_cuda(status, "cudaMallocAsync(&pointer, bytes, stream)", __FILE__, __LINE__);
    memory_stats<Cuda>().on_allocate(static_cast<std::int64_t>(bytes));
    return pointer;
  }

  /// @brief Returns memory to the pool, ordered after the work already queued on the stream.
  static void deallocate(void* pointer, std::size_t bytes) noexcept {
    if (pointer == nullptr) return;
    (void)cudaFreeAsync(pointer, cuda_context().stream());
    memory_stats<Cuda>().on_free(static_cast<std::int64_t>(bytes));
  }

  /// @brief Sets `bytes` bytes to zero (asynchronously); throws `mpx::cuda_error` when CUDA fails
  /// (after a device fault, say), so no caller of it may be `noexcept`.
  static void zero(void* pointer, std::size_t bytes) {
    if (bytes != 0) MPX_CUDA_CHECK(cudaMemsetAsync(pointer, 0, bytes, cuda_context().stream()));
  }

  /// @brief Device-to-device copy (asynchronously).
  static void copy(void* destination, const void* source, std::size_t bytes) {
    if (bytes != 0) {
      MPX_CUDA_CHECK(
          cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice, cuda_context().stream()));
    }
  }

  /// @brief Copies host bytes to the device, ordered on the stream; returns once `host` may be
  /// reused (a pageable source is staged before the call returns).
  static void copy_from_host(void* device, const void* host, std::size_t bytes) {
    if (bytes != 0) {
      MPX_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, cuda_context().stream()));
    }
  }

  /// @brief Copies device bytes to host memory once the work queued before has run (waits for the
  /// stream: a synchronisation point).
  static void copy_to_host(void* host, const void* device, std::size_t bytes) {
    if (bytes == 0) return;
    CudaContext& context = cuda_context();
    MPX_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, context.stream()));
    context.synchronize();
  }
};

namespace detail {
/// cudaMemcpyAsync of `kind` on the context's stream; waits for the stream when `Wait`.
template <cudaMemcpyKind Kind, bool Wait>
struct CudaTransfer {
  static void copy(void* destination, const void* source, std::size_t bytes) {
    if (bytes == 0) return;
    CudaContext& context = cuda_context();
    MPX_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, Kind, context.stream()));
    if constexpr (Wait) context.synchronize();
  }
};
}  // namespace detail

/// @brief Host -> GPU: queued on the context's stream; returns before the copy has run (pageable
/// host memory is staged first, so the source may be reused at once).
template <>
struct DeviceTransfer<Cuda, Host> : detail::CudaTransfer<cudaMemcpyHostToDevice, false> {};

/// @brief GPU -> host: waits for the stream, so the host copy is complete on return (a
/// synchronisation point).
template <>
struct DeviceTransfer<Host, Cuda> : detail::CudaTransfer<cudaMemcpyDeviceToHost, true> {};

/// @brief GPU -> GPU: queued on the context's stream.
template <>
struct DeviceTransfer<Cuda, Cuda> : detail::CudaTransfer<cudaMemcpyDeviceToDevice, false> {};

/// @brief `mpx::to<Cuda>(host)`: a device copy of a host tensor, queued (see `DeviceTransfer`).
template <Element T>
[[nodiscard]] Tensor<T, Cuda> to_device(const Tensor<T, Host>& host) {
  return to<Cuda>(host);
}

/// @brief `mpx::to<Host>(device)`: a host copy of a device tensor; waits for the stream.
template <Element T>
[[nodiscard]] Tensor<T, Host> to_host(const Tensor<T, Cuda>& device) {
  return to<Host>(device);
}

}  // namespace mpx
