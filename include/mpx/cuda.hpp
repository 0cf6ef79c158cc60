// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The CUDA umbrella: everything in <mpx/mpx.hpp> plus the CUDA backend: the device context,
/// device memory and tensor copies, the cuBLASLt GEMM, the layer, loss and optimizer kernels behind
/// `Backend<Cuda>`, and the device side of the training step (CUDA graphs included). Its kernels are
/// templates your code instantiates, so include it from a CUDA translation unit (a `.cu` file compiled
/// by nvcc) and link `mpx::cuda`. Host-compiled code may include the host-side headers
/// (backend/cuda/context.hpp, memory.hpp, gemm.hpp, device_array.hpp) on their own.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error \
    "<mpx/cuda.hpp> needs the CUDA backend: link the mpx::cuda target (defined when CMake finds the CUDA toolkit), or include <mpx/mpx.hpp> for CPU-only code"
#endif  // !MPX_HAS_CUDA
#if !MPX_CUDA_COMPILER
#error \
    "<mpx/cuda.hpp> holds CUDA kernels: include it from a .cu file compiled by nvcc; host-compiled code can include mpx/backend/cuda/{context,memory,gemm,device_array}.hpp"
#endif  // !MPX_CUDA_COMPILER

#include "mpx/mpx.hpp"

#include "mpx/backend/cuda/backend.cuh"
#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"
#include "mpx/backend/cuda/data_type.hpp"
#include "mpx/backend/cuda/device_array.hpp"
#include "mpx/backend/cuda/gemm.hpp"
#include "mpx/backend/cuda/gemm_block_scaled.cuh"
#include "mpx/backend/cuda/graph.hpp"
#include "mpx/backend/cuda/memory.hpp"
