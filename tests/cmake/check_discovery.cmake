# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Every Catch2 test case must be its own CTest test. A name that CMake's list syntax cannot carry
# (an unbalanced '[' or ']') makes catch_discover_tests fold the cases after it into one entry, and
# failures there would be hard to see. Usage:
#   cmake -DEXECUTABLE=<unit test binary> -DCTEST=<ctest> -DBUILD_DIR=<dir> -DLABEL=unit -P check_discovery.cmake
# Catch2 2.x exits with the number of test cases listed, so the output is what counts.
execute_process(COMMAND ${EXECUTABLE} --list-test-names-only OUTPUT_VARIABLE listed)
string(REGEX MATCHALL "[^\n]+" cases "${listed}")
list(LENGTH cases case_count)
if(case_count EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} --list-test-names-only listed no test cases")
endif()
execute_process(COMMAND ${CTEST} -N -L "^${LABEL}$" WORKING_DIRECTORY ${BUILD_DIR} OUTPUT_VARIABLE registered)
string(REGEX MATCHALL "Test +#[0-9]+:" entries "${registered}")
list(LENGTH entries entry_count)
if(NOT case_count EQUAL entry_count)
  message(FATAL_ERROR "${case_count} Catch2 test cases but ${entry_count} CTest tests labelled '${LABEL}': a "
                      "test name with '[' or ']' (or another character CMake lists cannot hold) folded cases")
endif()
message(STATUS "${case_count} test cases, each registered with CTest")
