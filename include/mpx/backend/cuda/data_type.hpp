// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The CUDA side of the number formats, derived from their `numeric_traits`: the cuBLASLt data
/// type (from the traits' `cuda_data_type` name), the cuBLAS compute type (from the accumulate type
/// and whether operands are rounded from fp32 storage, as TF32's are) and the device element type
/// (the CUDA twin of the host storage type).

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error "mpx/backend/cuda/data_type.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA

#include <string_view>
#include <type_traits>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>
#include <Eigen/Core>

#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

namespace detail {
// CUDA's real data types by their names in library_types.h (the names numeric_traits use).
struct CudaDataTypeName {
  std::string_view name;
  cudaDataType_t value;
};
inline constexpr CudaDataTypeName cuda_real_data_types[] = {
    {"CUDA_R_64F", CUDA_R_64F},   {"CUDA_R_32F", CUDA_R_32F},         {"CUDA_R_16F", CUDA_R_16F},
    {"CUDA_R_16BF", CUDA_R_16BF}, {"CUDA_R_8F_E4M3", CUDA_R_8F_E4M3}, {"CUDA_R_8F_E5M2", CUDA_R_8F_E5M2},
};
// The entry of `cuda_real_data_types` with this name, or null.
inline constexpr const CudaDataTypeName* find_cuda_data_type(std::string_view name) {
  for (const auto& type : cuda_real_data_types) {
    if (type.name == name) return &type;
  }
  return nullptr;
}

// The CUDA element type that is bit-compatible with a host storage type.
template <class Storage>
struct device_type_of {
  using type = Storage;  // double, float
};
template <>
struct device_type_of<Eigen::half> {
  using type = __half;
};
template <>
struct device_type_of<Eigen::bfloat16> {
  using type = __nv_bfloat16;
};

// Whether mpx's CUDA code runs format `Tag`: it names a CUDA data type, its storage is a C++ scalar
// (kernels for formats kept as bit patterns, FP8 and smaller, are not written yet), and a format kept
// in fp32's storage has TF32's layout (the only operand rounding the device code does).
template <class Tag>
consteval bool runs_on_cuda() {
  if constexpr (NumericTag<Tag>) {
    using traits = numeric_traits<Tag>;
    return find_cuda_data_type(traits::cuda_data_type) != nullptr && !is_encoded_v<storage_t<Tag>> &&
           (owns_storage_v<Tag> || (traits::exponent_bits == 8 && traits::mantissa_bits == 10));
  } else {
    return false;
  }
}
}  // namespace detail

/// @brief The formats mpx's CUDA backend runs: those with a CUDA data type, stored as a C++ scalar
/// (every built-in format). The others run on the CPU only.
template <class Tag>
concept CudaFormat = detail::runs_on_cuda<Tag>();

/// @brief CUDA facts of a precision tag, derived from its `numeric_traits`: `data_type` (how cuBLASLt
/// stores it), `compute_type` (the cuBLAS compute type a matmul with these operands uses) and
/// `device_type` (the CUDA element type, bit-compatible with `storage_t<Tag>`).
template <class Tag>
struct cuda_traits {
  static_assert(CudaFormat<Tag>,
                "mpx::cuda_traits<Tag>: this format runs on the CPU only (mpx::Host): either it has no CUDA "
                "data type (numeric_traits<Tag>::cuda_data_type is empty or not a name in CUDA's "
                "library_types.h), or it is kept as bit patterns (mpx::Encoded), which mpx's CUDA kernels "
                "do not decode yet");

  /// @brief The CUDA element type of the storage (`__half` for `Eigen::half`).
  using device_type = typename detail::device_type_of<storage_t<Tag>>::type;
  /// @brief How cuBLASLt stores it (`CUDA_R_16BF`).
  static constexpr cudaDataType_t data_type =
      detail::find_cuda_data_type(numeric_traits<Tag>::cuda_data_type)->value;
  /// @brief The compute type of a matmul with these operands: fp64 sums for fp64, TF32 operand
  /// rounding for a format kept in fp32's storage, fp32 sums otherwise (cuBLASLt has no math mode:
  /// COMPUTE_32F with fp32 operands never drops to TF32).
  static constexpr cublasComputeType_t compute_type = std::is_same_v<accumulate_t<Tag>, double>
                                                          ? CUBLAS_COMPUTE_64F
                                                      : owns_storage_v<Tag> ? CUBLAS_COMPUTE_32F
                                                                            : CUBLAS_COMPUTE_32F_FAST_TF32;
};

// The derivation gives the built-in formats the types they have always had.
static_assert(cuda_traits<Double>::data_type == CUDA_R_64F &&
              cuda_traits<Double>::compute_type == CUBLAS_COMPUTE_64F &&
              std::is_same_v<cuda_traits<Double>::device_type, double>);
static_assert(cuda_traits<Float>::data_type == CUDA_R_32F &&
              cuda_traits<Float>::compute_type == CUBLAS_COMPUTE_32F &&
              std::is_same_v<cuda_traits<Float>::device_type, float>);
static_assert(cuda_traits<TF32>::data_type == CUDA_R_32F &&
              cuda_traits<TF32>::compute_type == CUBLAS_COMPUTE_32F_FAST_TF32 &&
              std::is_same_v<cuda_traits<TF32>::device_type, float>);
static_assert(cuda_traits<Half>::data_type == CUDA_R_16F &&
              cuda_traits<Half>::compute_type == CUBLAS_COMPUTE_32F &&
              std::is_same_v<cuda_traits<Half>::device_type, __half>);
static_assert(cuda_traits<BFloat16>::data_type == CUDA_R_16BF &&
              cuda_traits<BFloat16>::compute_type == CUBLAS_COMPUTE_32F &&
              std::is_same_v<cuda_traits<BFloat16>::device_type, __nv_bfloat16>);

// The host storage types are reinterpreted as the device types; that is only sound if they match.
static_assert(sizeof(storage_t<Half>) == sizeof(__half) && alignof(storage_t<Half>) == alignof(__half),
              "Eigen::half must be layout-compatible with __half");
static_assert(sizeof(storage_t<BFloat16>) == sizeof(__nv_bfloat16) &&
                  alignof(storage_t<BFloat16>) == alignof(__nv_bfloat16),
              "Eigen::bfloat16 must be layout-compatible with __nv_bfloat16");

}  // namespace mpx
