// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `mpx::CudaContext`: the device, stream, cuBLASLt handle and matmul workspace that CUDA
/// tensors and GEMMs use, and `cuda_context()`, the process-wide default one.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error "mpx/backend/cuda/context.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA

#include <cstddef>
#include <cstdint>
#include <limits>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/error.hpp"

namespace mpx {

/// @brief Workspace cuBLASLt may use per matmul: 32 MiB on Hopper (sm_90) and later, as NVIDIA
/// recommends there, 4 MiB otherwise.
[[nodiscard]] constexpr std::size_t default_cublaslt_workspace_bytes(int compute_capability_major) noexcept {
  return compute_capability_major >= 9 ? std::size_t{32} << 20 : std::size_t{4} << 20;
}

/// @brief Whether a GPU of compute capability `major`.`minor` runs FP8 GEMMs (cuBLASLt's FP8
/// matmuls, `cuda::gemm_scaled`): 8.9 (Ada) and newer.
[[nodiscard]] constexpr bool fp8_gemm_capable(int major, int minor) noexcept {
  return major > 8 || (major == 8 && minor >= 9);
}

/// @brief Number of CUDA devices the runtime sees; 0 when there is none or no usable driver (programs
/// that fall back to the CPU test this).
[[nodiscard]] inline int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

/// @brief Throws `mpx::error` with a clear message unless the CUDA runtime sees at least one device.
inline void require_cuda_device(const char* where) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    const char* reason = status != cudaSuccess ? cudaGetErrorName(status) : "no device present";
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    throw error(detail::concat(where, ": no CUDA device is available (cudaGetDeviceCount: ", reason,
                               "); use mpx::Host, or run on a machine with an NVIDIA GPU"));
  }
}

/// @brief Options of a `CudaContext`.
struct CudaContextOptions {
  /// @brief CUDA device ordinal.
  int device = 0;
  /// @brief cuBLASLt workspace in bytes; 0 picks `default_cublaslt_workspace_bytes` for the device.
  std::size_t workspace_bytes = 0;
};

/// @brief Owns a non-blocking stream, a cuBLASLt handle and a matmul workspace on one device, and
/// configures the device's default memory pool to keep freed memory (release threshold = max), so
/// that `cudaMallocAsync` in a training loop reuses memory instead of returning it to the driver.
///
/// Not thread-safe: one context serves one host thread at a time (the GEMM cache in it is a plain map).
class CudaContext {
 public:
  /// @brief Opens the context; throws `mpx::error` when there is no device and `mpx::cuda_error` when a
  /// CUDA or cuBLASLt call fails.
  explicit CudaContext(const CudaContextOptions& options = {}) : device_(options.device) {
    require_cuda_device("mpx::CudaContext");
    MPX_CUDA_CHECK(cudaSetDevice(device_));
    MPX_CUDA_CHECK(cudaGetDeviceProperties(&properties_, device_));
    workspace_bytes_ = options.workspace_bytes != 0 ? options.workspace_bytes
                                                    : default_cublaslt_workspace_bytes(properties_.major);
    cudaMemPool_t pool = nullptr;
    MPX_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device_));
    std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
    MPX_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    MPX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    try {
      MPX_CUBLAS_CHECK(cublasLtCreate(&handle_));
      MPX_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
    } catch (...) {
      destroy();
      throw;
    }
  }
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;
  ~CudaContext() { destroy(); }

  /// @brief Device ordinal.
  [[nodiscard]] int device() const noexcept { return device_; }
  /// @brief The stream every mpx operation of this context is ordered on.
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  /// @brief The cuBLASLt handle.
  [[nodiscard]] cublasLtHandle_t cublaslt() const noexcept { return handle_; }
  /// @brief The matmul workspace (device memory).
  [[nodiscard]] void* workspace() const noexcept { return workspace_; }
  /// @brief Size of `workspace()` in bytes.
  [[nodiscard]] std::size_t workspace_bytes() const noexcept { return workspace_bytes_; }
  /// @brief The device's properties (name, compute capability, memory).
  [[nodiscard]] const cudaDeviceProp& properties() const noexcept { return properties_; }
  /// @brief Waits until all work queued on `stream()` has finished.
  void synchronize() const { MPX_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  void destroy() noexcept {
    if (workspace_ != nullptr) (void)cudaFree(workspace_);
    if (handle_ != nullptr) (void)cublasLtDestroy(handle_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    workspace_ = nullptr;
    handle_ = nullptr;
    stream_ = nullptr;
  }

  int device_ = 0;
  cudaDeviceProp properties_{};
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
};

/// @brief The process-wide default context (default workspace), created on first use on the
/// device current then (device 0 unless the program called `cudaSetDevice` first, as a data-parallel
/// rank does to take its own GPU). Throws `mpx::error` on first use when no device is present.
inline CudaContext& cuda_context() {
  static CudaContext context([] {
    CudaContextOptions options;
    if (cudaGetDevice(&options.device) != cudaSuccess)
      options.device = 0;  // no device: the constructor says so
    return options;
  }());
  return context;
}

}  // namespace mpx
