# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# cmake -DCOMMAND=<compiler and arguments separated by |> -DEXPECT=<regex> -P expect_compile_failure.cmake
# Passes when COMMAND (a compile of a tests/compile_fail/ file) fails and its diagnostics match EXPECT:
# one compile checks both that the misuse is rejected and that the message says why.
string(REPLACE "|" ";" COMMAND "${COMMAND}")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(status EQUAL 0)
  message(FATAL_ERROR "the misuse compiled (exit status 0); it must be rejected\n${out}${err}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the compile failed (exit status ${status}) without the expected message "
                      "/${EXPECT}/:\n${out}${err}")
endif()
message("rejected (exit status ${status}) with the expected message /${EXPECT}/")
