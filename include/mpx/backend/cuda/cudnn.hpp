// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The cuDNN side of a `CudaContext`: `cudnn_handle(context)`, one cuDNN handle per host thread
/// and context (device and stream), and the status checks of cuDNN (`MPX_CUDNN_CHECK`) and of its
/// C++ frontend (`MPX_CUDNN_FRONTEND_CHECK`), whose messages name the call, the status and the place,
/// as check.hpp's do for CUDA and cuBLASLt.
///
/// Only cuDNN's C API (<cudnn.h>, cheap to parse) is included here. The frontend's C++ headers add
/// about 45 s to the compile of each translation unit, so only the opt-in headers
/// backend/cuda/conv2d.cuh and backend/cuda/fused_attention.cuh include them,
/// and `MPX_CUDNN_FRONTEND_CHECK` takes the frontend's status type without naming it.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error "mpx/backend/cuda/cudnn.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA
#if !__has_include(<cudnn.h>)
#error \
    "mpx/backend/cuda/cudnn.hpp needs cuDNN 9 (cudnn.h and libcudnn): install it beside the CUDA toolkit (NVIDIA's cudnn9-cuda-13 packages) and link mpx::cuda, which adds it where CMake finds it"
#endif  // !__has_include(<cudnn.h>)

#include <cstddef>
#include <map>
#include <utility>

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"
#include "mpx/error.hpp"

#if CUDNN_MAJOR < 9
#error "mpx/backend/cuda/cudnn.hpp needs cuDNN 9 or later (its graph API through the cuDNN frontend)"
#endif  // CUDNN_MAJOR < 9

namespace mpx {
namespace detail {

inline void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS) {
    char reason[512] = {};  // cuDNN's own account of this thread's last failure, if it kept one
    cudnnGetLastErrorString(reason, sizeof reason);
    throw cuda_error(concat(call, " failed with ", cudnnGetErrorString(status), " at ", file, ":", line,
                            reason[0] != '\0' ? ": " : "", reason));
  }
}

// A status of the cuDNN frontend (`cudnn_frontend::error_t`: is_good(), get_code(), get_message()),
// taken by its members so that this header need not parse the frontend.
template <class FrontendStatus>
void check_cudnn_frontend(FrontendStatus status, const char* call, const char* file, int line) {
  if (!status.is_good()) {
    throw cuda_error(concat(call, " failed with cudnn_frontend error ", static_cast<int>(status.get_code()),
                            " at ", file, ":", line, ": ", status.get_message()));
  }
}

}  // namespace detail
}  // namespace mpx

/// @brief Evaluates a cuDNN call and throws `mpx::cuda_error` unless it returns CUDNN_STATUS_SUCCESS.
#define MPX_CUDNN_CHECK(call) ::mpx::detail::check_cudnn((call), #call, __FILE__, __LINE__)
/// @brief Evaluates a cuDNN frontend call and throws `mpx::cuda_error`, with the frontend's message,
/// unless its `cudnn_frontend::error_t` is good.
#define MPX_CUDNN_FRONTEND_CHECK(call) ::mpx::detail::check_cudnn_frontend((call), #call, __FILE__, __LINE__)

namespace mpx::cuda {

namespace detail {
// Whether work queued on `stream` now goes into a CUDA graph instead of running: a cuDNN plan cannot
// be built then (its heuristics may compile kernels, allocate and synchronise).
inline bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  MPX_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  return capture != cudaStreamCaptureStatusNone;
}
}  // namespace detail

/// @brief An owned cuDNN handle bound to one stream; move-only. Destroying it waits for the device
/// (cudnnDestroy does).
class CudnnHandle {
 public:
  /// @brief Creates a handle on `context`'s device, bound to its stream; throws `mpx::cuda_error`
  /// when cuDNN fails (no usable libcudnn, say) and `mpx::error` while the stream is being captured
  /// into a CUDA graph (cudnnCreate allocates).
  explicit CudnnHandle(const CudaContext& context) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    MPX_CUDA_CHECK(cudaStreamIsCapturing(context.stream(), &capture));
    if (capture != cudaStreamCaptureStatusNone) {
      throw error(mpx::detail::concat(
          "mpx: first cuDNN call of this thread on device ", context.device(),
          " while the stream is being captured into a CUDA graph; run one eager step first, so that "
          "the cuDNN handle and the convolutions' plans exist"));
    }
    int current = 0;
    MPX_CUDA_CHECK(cudaGetDevice(&current));
    if (current != context.device()) MPX_CUDA_CHECK(cudaSetDevice(context.device()));
    const cudnnStatus_t created = cudnnCreate(&handle_);
    if (current != context.device()) (void)cudaSetDevice(current);
    MPX_CUDNN_CHECK(created);
    try {
      MPX_CUDNN_CHECK(cudnnSetStream(handle_, context.stream()));
    } catch (...) {
      (void)cudnnDestroy(handle_);
      throw;
    }
  }
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  /// @brief Takes `other`'s handle; `other` is left empty.
  CudnnHandle(CudnnHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  /// @brief Destroys this handle and takes `other`'s.
  CudnnHandle& operator=(CudnnHandle&& other) noexcept {
    if (this != &other) {
      if (handle_ != nullptr) (void)cudnnDestroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~CudnnHandle() {
    if (handle_ != nullptr) (void)cudnnDestroy(handle_);
  }

  /// @brief The raw handle.
  [[nodiscard]] cudnnHandle_t get() const noexcept { return handle_; }

 private:
  cudnnHandle_t handle_ = nullptr;
};

/// @brief The cuDNN handle of `context` on the calling thread: created on the thread's first call for
/// the context's device and stream (cudnnCreate is slow: it loads cuDNN's kernels), bound to that
/// stream, kept until the thread exits. One per thread, as cuDNN advises, and per stream, so that a
/// handle's work is ordered with the context's other work without a cudnnSetStream per call.
[[nodiscard]] inline cudnnHandle_t cudnn_handle(const CudaContext& context = cuda_context()) {
  thread_local std::map<std::pair<int, cudaStream_t>, CudnnHandle> handles;
  const std::pair<int, cudaStream_t> key{context.device(), context.stream()};
  auto found = handles.find(key);
  if (found == handles.end()) found = handles.emplace(key, CudnnHandle(context)).first;
  return found->second.get();
}

}  // namespace mpx::cuda
