# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# What linking mpx::nccl (data parallel on GPUs over NCCL, include/mpx/dist/nccl_gradient_sync.cuh)
# means, in one place: mpx's own build (CMakeLists.txt) and the installed mpxConfig.cmake (component
# `nccl`) find NCCL and apply it with these functions. It needs no MPI: ranks join NCCL from a
# unique id the program shares itself (dist::NcclBootstrap). The constructor from an MPI
# communicator needs mpx::mpi linked as well.
include_guard(GLOBAL)

# Looks for NCCL beside the CUDA toolkit found by find_package(CUDAToolkit) (it ships there with
# CUDA 13 on mpx's machines), where MPX_NCCL_ROOT / NCCL_ROOT point, or in the system's paths; sets
# MPX_NCCL_INCLUDE_DIR and MPX_NCCL_LIBRARY in the cache.
function(mpx_find_nccl)
  set(hints ${MPX_NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT})
  find_path(MPX_NCCL_INCLUDE_DIR nccl.h HINTS ${hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include
    DOC "Directory holding nccl.h")
  find_library(MPX_NCCL_LIBRARY nccl HINTS ${hints} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64
    DOC "The NCCL library (libnccl.so)")
endfunction()

# Needs mpx::cuda and mpx_find_nccl() to have found NCCL.
function(mpx_nccl_target_usage target)
  target_link_libraries(${target} INTERFACE mpx::cuda ${MPX_NCCL_LIBRARY})
  target_include_directories(${target} SYSTEM INTERFACE ${MPX_NCCL_INCLUDE_DIR})
  target_compile_definitions(${target} INTERFACE MPX_HAS_NCCL=1)
endfunction()
