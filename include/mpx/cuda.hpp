// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The CUDA umbrella: everything in <mpx/mpx.hpp> plus the CUDA backend. Link `mpx::cuda`.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error \
    "<mpx/cuda.hpp> needs the CUDA backend: link mpx::cuda (find_package(mpx COMPONENTS cuda)), or include <mpx/mpx.hpp> for CPU-only code"
#endif  // !MPX_HAS_CUDA

#include "mpx/mpx.hpp"

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/data_type.hpp"
