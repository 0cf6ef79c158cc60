// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Device tags. `Cuda` is only a name here; its memory comes from backend/cuda.

#include <string_view>

namespace mpx {

/// @brief Host memory and the Eigen CPU backend.
struct Host {
  /// @brief Device name used in messages.
  static constexpr std::string_view name = "cpu";
};

/// @brief An NVIDIA GPU through the CUDA runtime and cuBLASLt (<mpx/cuda.hpp>). Its memory and
/// operations (`DeviceMemory<Cuda>`, `Backend<Cuda>`) come with the CUDA backend.
struct Cuda {
  /// @brief Device name used in messages.
  static constexpr std::string_view name = "cuda";
};

}  // namespace mpx
