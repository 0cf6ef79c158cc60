# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# What linking mpx::cuda means, in one place: mpx's own build (CMakeLists.txt), the installed
# mpxConfig.cmake and the Conan package all apply it to their mpx::cuda target.
# Needs the CUDA::cudart and CUDA::cublasLt targets (find_package(CUDAToolkit)) and mpx::mpx.
include_guard(GLOBAL)

function(mpx_cuda_target_usage target)
  target_link_libraries(${target} INTERFACE mpx::mpx CUDA::cudart CUDA::cublasLt)
  target_compile_definitions(${target} INTERFACE MPX_HAS_CUDA=1)
  # Eigen's headers call constexpr host functions from device code and trip nvcc's warning 20012
  # ("__host__ annotation is ignored on a function that is explicitly defaulted").
  # CMake 3.25 predates nvcc 13 and does not know its `cuda_std_20` feature, so the flag is explicit.
  target_compile_options(${target} INTERFACE
    $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 --expt-relaxed-constexpr -Xcudafe=--diag_suppress=20012>)
  # OpenMP::OpenMP_CXX gives -fopenmp to C++ files only; .cu files run CPU code too (the CPU fallback,
  # CPU references), so their host compiler gets it as well.
  if(TARGET OpenMP::OpenMP_CXX AND OpenMP_CXX_FLAGS)
    target_compile_options(${target} INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${OpenMP_CXX_FLAGS}>)
  endif()
endfunction()
