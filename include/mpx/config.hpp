// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The one place that tests the compiler: host/device qualifiers, CUDA availability, version.

/// @brief Major version.
#define MPX_VERSION_MAJOR 0
/// @brief Minor version.
#define MPX_VERSION_MINOR 2
/// @brief Patch version.
#define MPX_VERSION_PATCH 0
/// Single integer for `#if` comparisons: major * 10000 + minor * 100 + patch.
#define MPX_VERSION (MPX_VERSION_MAJOR * 10000 + MPX_VERSION_MINOR * 100 + MPX_VERSION_PATCH)

// MPX_HOST_DEVICE marks functions that run on both sides (as EIGEN_DEVICE_FUNC does for Eigen).
#if defined(__CUDACC__)
#define MPX_HOST_DEVICE __host__ __device__
#define MPX_CUDA_COMPILER 1
#else
/// @brief Marks functions callable from host and device code (`__host__ __device__` under nvcc).
#define MPX_HOST_DEVICE
/// @brief 1 when the compiler is nvcc (or another CUDA compiler), 0 otherwise.
#define MPX_CUDA_COMPILER 0
#endif  // __CUDACC__

// MPX_ALWAYS_INLINE marks small math functions called inside loops that must vectorise: GCC's
// inliner gives up on them in a large enclosing function, and one out-of-line call per element
// keeps the whole loop scalar (GELU inside the CPU GEMM's epilogue ran 4x slower so).
#if defined(__CUDACC__)
#define MPX_ALWAYS_INLINE __forceinline__
#elif defined(__GNUC__)
/// @brief `inline`, and inlined wherever it is called (see the comment above).
#define MPX_ALWAYS_INLINE inline __attribute__((always_inline))
#else
/// @brief `inline`, and inlined wherever it is called where the compiler has a way to say so.
#define MPX_ALWAYS_INLINE inline
#endif

// MPX_HAS_CUDA is 1 when the CUDA runtime is available to link against (the mpx::cuda target defines
// it); CPU-only builds leave it 0 and never see a CUDA header.
#ifndef MPX_HAS_CUDA
#define MPX_HAS_CUDA 0
#endif

// True inside the device pass of nvcc: code that must differ between host and device tests this.
#if defined(__CUDA_ARCH__)
#define MPX_DEVICE_PASS 1
#else
/// @brief 1 in nvcc's device compilation pass, 0 in host passes and host compilers.
#define MPX_DEVICE_PASS 0
#endif

namespace mpx {
/// @brief Library version as written in `MPX_VERSION_*`.
struct Version {
  /// @brief `MPX_VERSION_MAJOR`.
  static constexpr int major = MPX_VERSION_MAJOR;
  /// @brief `MPX_VERSION_MINOR`.
  static constexpr int minor = MPX_VERSION_MINOR;
  /// @brief `MPX_VERSION_PATCH`.
  static constexpr int patch = MPX_VERSION_PATCH;
};
}  // namespace mpx
