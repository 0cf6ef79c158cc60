# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
include_guard(GLOBAL)

# Sets `out` to $PATH without any directory that holds nvcc: a machine view without CUDA.
function(mpx_path_without_cuda out)
  set(path_entries "$ENV{PATH}")
  string(REPLACE ":" ";" path_entries "${path_entries}")
  set(kept "")
  foreach(entry IN LISTS path_entries)
    if(NOT EXISTS "${entry}/nvcc")
      list(APPEND kept "${entry}")
    endif()
  endforeach()
  string(REPLACE ";" ":" kept "${kept}")
  set(${out} "${kept}" PARENT_SCOPE)
endfunction()
