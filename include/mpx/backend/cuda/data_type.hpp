// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The CUDA side of the precision tags: cuBLASLt data types, compute types and device
/// element types for each tag.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error "mpx/backend/cuda/data_type.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>

#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

/// @brief CUDA facts of a precision tag: `data_type` (how cuBLASLt stores it), `compute_type` (the
/// cuBLAS compute type a matmul with these operands uses) and `device_type` (the CUDA element type,
/// bit-compatible with `storage_t<Tag>`).
template <class Tag>
struct cuda_traits;

template <>
struct cuda_traits<Double> {
  using device_type = double;
  static constexpr cudaDataType_t data_type = CUDA_R_64F;
  static constexpr cublasComputeType_t compute_type = CUBLAS_COMPUTE_64F;
};

template <>
struct cuda_traits<Float> {
  using device_type = float;
  static constexpr cudaDataType_t data_type = CUDA_R_32F;
  // cuBLASLt has no math mode: COMPUTE_32F with fp32 operands never drops to TF32.
  static constexpr cublasComputeType_t compute_type = CUBLAS_COMPUTE_32F;
};

template <>
struct cuda_traits<TF32> {
  using device_type = float;
  static constexpr cudaDataType_t data_type = CUDA_R_32F;
  static constexpr cublasComputeType_t compute_type = CUBLAS_COMPUTE_32F_FAST_TF32;
};

template <>
struct cuda_traits<Half> {
  using device_type = __half;
  static constexpr cudaDataType_t data_type = CUDA_R_16F;
  static constexpr cublasComputeType_t compute_type = CUBLAS_COMPUTE_32F;
};

template <>
struct cuda_traits<BFloat16> {
  using device_type = __nv_bfloat16;
  static constexpr cudaDataType_t data_type = CUDA_R_16BF;
  static constexpr cublasComputeType_t compute_type = CUBLAS_COMPUTE_32F;
};

// The host storage types are reinterpreted as the device types; that is only sound if they match.
static_assert(sizeof(storage_t<Half>) == sizeof(__half) && alignof(storage_t<Half>) == alignof(__half),
              "Eigen::half must be layout-compatible with __half");
static_assert(sizeof(storage_t<BFloat16>) == sizeof(__nv_bfloat16) &&
                  alignof(storage_t<BFloat16>) == alignof(__nv_bfloat16),
              "Eigen::bfloat16 must be layout-compatible with __nv_bfloat16");

}  // namespace mpx
