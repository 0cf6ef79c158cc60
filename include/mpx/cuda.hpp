// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The CUDA umbrella: everything in <mpx/mpx.hpp> plus what exists of the CUDA backend so far
/// (status checks, data and compute types per precision, the device context, device memory and
/// tensor copies, and the cuBLASLt GEMM). Link `mpx::cuda`.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error \
    "<mpx/cuda.hpp> needs the CUDA backend: link the mpx::cuda target (defined when CMake finds the CUDA toolkit), or include <mpx/mpx.hpp> for CPU-only code"
#endif  // !MPX_HAS_CUDA

#include "mpx/mpx.hpp"

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"
#include "mpx/backend/cuda/data_type.hpp"
#include "mpx/backend/cuda/gemm.hpp"
#include "mpx/backend/cuda/memory.hpp"
