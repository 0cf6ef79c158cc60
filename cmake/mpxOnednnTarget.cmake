# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# What linking mpx::onednn (the CPU GEMM's fp32 products on oneDNN, include/mpx/backend/cpu/
# gemm_kernel.hpp) means, in one place: mpx's own build (CMakeLists.txt) and the installed
# mpxConfig.cmake (component `onednn`) find oneDNN and apply it with these functions.
include_guard(GLOBAL)

# Looks for oneDNN's C header and library (Debian: libdnnl-dev; the onednn-devel wheel; or under
# MPX_ONEDNN_ROOT / the environment's DNNLROOT) directly: Debian's dnnl-config.cmake asks for the
# OpenCL headers of its GPU runtime, which a CPU GEMM does not use. Sets MPX_ONEDNN_INCLUDE_DIR and
# MPX_ONEDNN_LIBRARY in the cache.
function(mpx_find_onednn)
  set(hints ${MPX_ONEDNN_ROOT} $ENV{DNNLROOT})
  find_path(MPX_ONEDNN_INCLUDE_DIR oneapi/dnnl/dnnl.h HINTS ${hints} PATH_SUFFIXES include
    DOC "Directory holding oneapi/dnnl/dnnl.h")
  find_library(MPX_ONEDNN_LIBRARY dnnl HINTS ${hints} PATH_SUFFIXES lib lib64
    DOC "The oneDNN library (libdnnl.so)")
endfunction()

# Needs mpx::mpx and mpx_find_onednn() to have found oneDNN.
function(mpx_onednn_target_usage target)
  target_link_libraries(${target} INTERFACE mpx::mpx ${MPX_ONEDNN_LIBRARY})
  target_include_directories(${target} SYSTEM INTERFACE ${MPX_ONEDNN_INCLUDE_DIR})
  target_compile_definitions(${target} INTERFACE MPX_HAS_ONEDNN=1)
endfunction()
