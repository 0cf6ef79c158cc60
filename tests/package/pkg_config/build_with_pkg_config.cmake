# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Builds and runs one C++ file the way a user without CMake would: with the flags
# `pkg-config --cflags --libs <module>` prints for a module mpx installed (mpx.pc, mpx-mpi.pc).
#   cmake -DPREFIX=<install prefix> -DSOURCE=<file.cpp> -DOUTPUT=<program> -DCXX=<compiler>
#         [-DMODULE=mpx] [-DLAUNCHER=ccache] -P build_with_pkg_config.cmake
if(NOT DEFINED MODULE)
  set(MODULE mpx)
endif()
foreach(var PREFIX SOURCE OUTPUT CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build_with_pkg_config.cmake: -D${var}=... is required")
  endif()
endforeach()
get_filename_component(output_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${output_dir}")
find_program(PKG_CONFIG NAMES pkg-config pkgconf REQUIRED)

file(GLOB pc_files "${PREFIX}/*/pkgconfig/${MODULE}.pc" "${PREFIX}/*/*/pkgconfig/${MODULE}.pc")
if(NOT pc_files)
  message(FATAL_ERROR "no ${MODULE}.pc under ${PREFIX}: was mpx installed there?")
endif()
list(GET pc_files 0 pc_file)
get_filename_component(pc_dir "${pc_file}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${pc_dir}:$ENV{PKG_CONFIG_PATH}")

execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ${MODULE}
  OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs ${MODULE} failed (PKG_CONFIG_PATH=$ENV{PKG_CONFIG_PATH})")
endif()
message(STATUS "pkg-config --cflags --libs ${MODULE}: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")

# The same flags for compiling and linking, as a one-line Makefile rule would pass them; two
# commands so that a compiler launcher (ccache) can cache the compile.
execute_process(COMMAND ${LAUNCHER} ${CXX} -O2 ${flags} -c ${SOURCE} -o ${OUTPUT}.o COMMAND_ECHO STDOUT
  RESULT_VARIABLE status)
if(status EQUAL 0)
  execute_process(COMMAND ${CXX} ${OUTPUT}.o -o ${OUTPUT} ${flags} COMMAND_ECHO STDOUT RESULT_VARIABLE status)
endif()
if(NOT status EQUAL 0)
  message(FATAL_ERROR "building ${SOURCE} with the pkg-config flags of ${MODULE} failed")
endif()
execute_process(COMMAND ${OUTPUT} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${OUTPUT} exited with ${status}")
endif()
