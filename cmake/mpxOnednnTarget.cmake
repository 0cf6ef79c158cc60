# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# What linking mpx::onednn (the CPU GEMM's fp32 products on oneDNN, include/mpx/backend/cpu/
# gemm_kernel.hpp) means, in one place: mpx's own build (CMakeLists.txt) and the installed
# mpxConfig.cmake (component `onednn`) find oneDNN and apply it with these functions.
include_guard(GLOBAL)

# Looks for oneDNN's C header and library (Debian 12: libdnnl-dev, oneDNN 2.6; or under
# MPX_ONEDNN_ROOT / the environment's DNNLROOT) directly: Debian's dnnl-config.cmake asks for the
# OpenCL headers of its GPU runtime, which a CPU GEMM does not use. Sets MPX_ONEDNN_INCLUDE_DIR and
# MPX_ONEDNN_LIBRARY in the cache, and MPX_ONEDNN_FOUND_USABLE to TRUE only for the oneDNN mpx is
# written for: version 2.x (3.0 replaced the descriptor API it uses) built with its OpenMP runtime
# (mpx's tiles rely on OpenMP's thread count); MPX_ONEDNN_UNUSABLE says why another one is not.
function(mpx_find_onednn)
  set(hints ${MPX_ONEDNN_ROOT} $ENV{DNNLROOT})
  find_path(MPX_ONEDNN_INCLUDE_DIR oneapi/dnnl/dnnl.h HINTS ${hints} PATH_SUFFIXES include
    DOC "Directory holding oneapi/dnnl/dnnl.h")
  find_library(MPX_ONEDNN_LIBRARY dnnl HINTS ${hints} PATH_SUFFIXES lib lib64
    DOC "The oneDNN library (libdnnl.so)")
  set(MPX_ONEDNN_FOUND_USABLE FALSE PARENT_SCOPE)
  set(MPX_ONEDNN_UNUSABLE "" PARENT_SCOPE)
  if(NOT MPX_ONEDNN_INCLUDE_DIR OR NOT MPX_ONEDNN_LIBRARY)
    return()
  endif()
  set(dir ${MPX_ONEDNN_INCLUDE_DIR}/oneapi/dnnl)
  set(major "")
  set(runtime "")
  if(EXISTS ${dir}/dnnl_version.h AND EXISTS ${dir}/dnnl_config.h)
    file(STRINGS ${dir}/dnnl_version.h major REGEX "^#define DNNL_VERSION_MAJOR ")
    string(REGEX REPLACE ".*DNNL_VERSION_MAJOR +([0-9]+).*" "\\1" major "${major}")
    file(STRINGS ${dir}/dnnl_config.h runtime REGEX "^#define DNNL_CPU_THREADING_RUNTIME ")
    string(REGEX REPLACE ".*DNNL_CPU_THREADING_RUNTIME +([A-Z_]+).*" "\\1" runtime "${runtime}")
  endif()
  if(major STREQUAL "2" AND runtime STREQUAL "DNNL_RUNTIME_OMP")
    set(MPX_ONEDNN_FOUND_USABLE TRUE PARENT_SCOPE)
  else()
    set(MPX_ONEDNN_UNUSABLE "${dir} is oneDNN ${major}.x with threading runtime ${runtime}; mpx needs oneDNN 2.x built with its OpenMP runtime (DNNL_RUNTIME_OMP), as Debian 12's libdnnl-dev" PARENT_SCOPE)
  endif()
endfunction()

# Needs mpx::mpx and mpx_find_onednn() to have found oneDNN.
function(mpx_onednn_target_usage target)
  target_link_libraries(${target} INTERFACE mpx::mpx ${MPX_ONEDNN_LIBRARY})
  target_include_directories(${target} SYSTEM INTERFACE ${MPX_ONEDNN_INCLUDE_DIR})
  target_compile_definitions(${target} INTERFACE MPX_HAS_ONEDNN=1)
endfunction()
