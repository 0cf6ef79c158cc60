# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# cmake -DCOMMAND=<arguments separated by |> -DEXPECT=<regex> [-DSECONDS=30] -P expect_job_failure.cmake
# Passes when COMMAND (an mpirun of a job with a failing rank) ends within SECONDS with a non-zero
# status and its output matches EXPECT: a failed rank must end the whole job, not leave it hanging.
if(NOT DEFINED SECONDS)
  set(SECONDS 30)
endif()
string(REPLACE "|" ";" COMMAND "${COMMAND}")
string(TIMESTAMP start "%s")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err
  TIMEOUT ${SECONDS})
string(TIMESTAMP end "%s")
math(EXPR elapsed "${end} - ${start}")
message("exit status: ${status}; ${elapsed} s\n--- stdout\n${out}--- stderr\n${err}")
if(status MATCHES "timeout")
  message(FATAL_ERROR "the job did not end within ${SECONDS} s after a rank failed")
endif()
if(status EQUAL 0)
  message(FATAL_ERROR "the job exited 0 although a rank failed")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not say which rank failed (expected /${EXPECT}/)")
endif()
