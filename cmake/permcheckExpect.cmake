# Runs `permcheck audit ...` for permcheck_add_audit(... EXPECT <verdict>) and passes only on that verdict:
#   cmake -DPERMCHECK=<permcheck> -DEXPECT=<verdict> -DREPORT=<dir> -P permcheckExpect.cmake -- audit <args...>
# The verdict is the one report.json records (not inferred from the exit code, which is 1 for three verdicts),
# and the exit code must agree with it.
cmake_minimum_required(VERSION 3.25)
set(args "")
set(seen_separator FALSE)
foreach(i RANGE 1 ${CMAKE_ARGC})
  if(i EQUAL CMAKE_ARGC)
    break()
  endif()
  if(seen_separator)
    list(APPEND args "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(seen_separator TRUE)
  endif()
endforeach()

# A report left by an earlier run must not answer for this one.
file(REMOVE "${REPORT}/report.json")
execute_process(COMMAND "${PERMCHECK}" ${args} RESULT_VARIABLE rc)
if(NOT EXISTS "${REPORT}/report.json")
  message(FATAL_ERROR "permcheck exited with ${rc} and wrote no ${REPORT}/report.json: expected the verdict ${EXPECT}")
endif()
file(READ "${REPORT}/report.json" report)
string(JSON verdict ERROR_VARIABLE json_error GET "${report}" verdict)
if(json_error)
  message(FATAL_ERROR "${REPORT}/report.json has no verdict (${json_error}): expected the verdict ${EXPECT}")
endif()
if(EXPECT STREQUAL "holds")
  set(expected_rc 0)
else()
  set(expected_rc 1)
endif()
if(NOT verdict STREQUAL EXPECT OR NOT rc STREQUAL expected_rc)
  message(FATAL_ERROR "expected the verdict ${EXPECT} (exit ${expected_rc}), got ${verdict} (exit ${rc}); report: "
                      "${REPORT}/report.json")
endif()
message(STATUS "verdict ${verdict}, as expected")
