// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Links mpx::cuda from a host translation unit: MPX_HAS_CUDA is defined, the CUDA runtime and
// cuBLASLt headers are found and their libraries link. Runs with or without a GPU.
#include <cstdio>

#include <mpx/backend/cuda/check.hpp>

static_assert(MPX_HAS_CUDA == 1, "mpx::cuda defines MPX_HAS_CUDA=1");

int main() {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  std::printf("cudaGetDeviceCount: %s, %d device(s); cuBLASLt version %zu\n", cudaGetErrorName(status),
              status == cudaSuccess ? devices : 0, cublasLtGetVersion());
  return 0;
}
