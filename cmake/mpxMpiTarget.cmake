# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# What linking mpx::mpi (data parallel over MPI, include/mpx/dist/) means, in one place: mpx's own
# build (CMakeLists.txt) and the installed mpxConfig.cmake apply it to their targets. Its GPU form
# over NCCL is mpx::nccl (cmake/mpxNcclTarget.cmake), which needs no MPI.
include_guard(GLOBAL)

# Needs MPI::MPI_CXX (find_package(MPI COMPONENTS CXX)) and mpx::mpx.
function(mpx_mpi_target_usage target)
  target_link_libraries(${target} INTERFACE mpx::mpx MPI::MPI_CXX)
  target_compile_definitions(${target} INTERFACE MPX_HAS_MPI=1)
endfunction()
