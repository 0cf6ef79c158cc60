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

# GPU convolutions and fused attention (mpx/backend/cuda/conv2d.cuh, fused_attention.cuh) run on cuDNN 9
# through its C++ frontend, header-only,
# from PyPI's nvidia-cudnn-frontend wheel. The frontend calls NVRTC (its runtime-compiled engines),
# linked as the library alone: CUDA::nvrtc would add the driver's stub libcuda, and a program that
# needs libcuda.so.1 does not even start on a machine without a driver, where the CUDA tests must
# skip. The frontend is used without its JSON serialisation (CUDNN_FRONTEND_SKIP_JSON_LIB: most of its
# parse time). Only translation units that include conv2d.cuh or fused_attention.cuh parse it.
# Attaches all of it to `target` when everything is found; otherwise sets `missing_variable` in the
# caller to what is missing, in words (empty when nothing is). `frontend_hints`: directories to search
# for cudnn_frontend.h besides the cache variable MPX_CUDNN_FRONTEND_INCLUDE_DIR.
function(mpx_cuda_attach_cudnn target missing_variable)
  find_library(MPX_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} DOC "cuDNN 9 (libcudnn.so)")
  find_library(MPX_NVRTC_LIBRARY nvrtc HINTS ${CUDAToolkit_LIBRARY_DIR} DOC "NVRTC (libnvrtc.so)")
  find_path(MPX_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} DOC "Directory holding cudnn.h (cuDNN 9)")
  find_path(MPX_CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h HINTS ${ARGN}
    DOC "Directory holding cudnn_frontend.h (the site-packages/include of PyPI's nvidia-cudnn-frontend)")
  set(missing "")
  if(NOT MPX_CUDNN_LIBRARY OR NOT MPX_CUDNN_INCLUDE_DIR)
    string(APPEND missing " cuDNN 9 (cudnn.h and libcudnn beside the CUDA toolkit, ${CUDAToolkit_LIBRARY_DIR}: "
                          "NVIDIA's cudnn9-cuda-13 packages; or set MPX_CUDNN_LIBRARY and MPX_CUDNN_INCLUDE_DIR);")
  endif()
  if(NOT MPX_CUDNN_FRONTEND_INCLUDE_DIR OR NOT EXISTS "${MPX_CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend.h")
    string(APPEND missing " the cuDNN frontend's headers (cudnn_frontend.h: mpx's scripts/install-deps.sh installs "
                          "PyPI's nvidia-cudnn-frontend into build/tools/python; elsewhere pip install "
                          "nvidia-cudnn-frontend and set MPX_CUDNN_FRONTEND_INCLUDE_DIR to its site-packages/include);")
  endif()
  if(NOT MPX_NVRTC_LIBRARY)
    string(APPEND missing " NVRTC (libnvrtc, part of the CUDA toolkit);")
  endif()
  if(missing STREQUAL "")
    target_link_libraries(${target} INTERFACE "${MPX_CUDNN_LIBRARY}" "${MPX_NVRTC_LIBRARY}")
    target_include_directories(${target} SYSTEM INTERFACE "${MPX_CUDNN_INCLUDE_DIR}" "${MPX_CUDNN_FRONTEND_INCLUDE_DIR}")
    target_compile_definitions(${target} INTERFACE CUDNN_FRONTEND_SKIP_JSON_LIB)
  endif()
  set(${missing_variable} "${missing}" PARENT_SCOPE)
endfunction()
