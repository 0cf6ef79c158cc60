// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Status checks for every CUDA runtime and cuBLAS(Lt) call: a failure throws `mpx::error`
/// naming the call's text, the status name and the source location.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error "mpx/backend/cuda/check.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "mpx/error.hpp"

namespace mpx {

/// @brief A failed CUDA runtime or cuBLAS call.
class cuda_error : public error {
 public:
  using error::error;
};

namespace detail {

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) {
    throw cuda_error(concat(call, " failed with ", cudaGetErrorName(status), " (", cudaGetErrorString(status),
                            ") at ", file, ":", line));
  }
}

inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw cuda_error(concat(call, " failed with ", cublasLtGetStatusName(status), " (",
                            cublasLtGetStatusString(status), ") at ", file, ":", line));
  }
}

}  // namespace detail
}  // namespace mpx

/// @brief Evaluates a CUDA runtime call and throws `mpx::cuda_error` unless it returns cudaSuccess.
#define MPX_CUDA_CHECK(call) ::mpx::detail::check_cuda((call), #call, __FILE__, __LINE__)
/// @brief Evaluates a cuBLAS/cuBLASLt call and throws `mpx::cuda_error` unless it succeeds.
#define MPX_CUBLAS_CHECK(call) ::mpx::detail::check_cublas((call), #call, __FILE__, __LINE__)
