# permcheck_add_audit(NAME <test> COMMAND <adapter command...> DIM <d>
#                     [OUTPUT sequence|pooled] [DTYPE infer|float32|float64] [CASES <n>] [SEED <s>]
#                     [MIN_LEN <n>] [MAX_LEN <n>] [TIMEOUT <seconds per request>]
#                     [STARTUP_TIMEOUT <seconds for the first answer>] [JOBS <n>] [REPORT <dir>])
#
# Registers `permcheck audit --exec "<command>" --dim <d> ...` as the ctest test <test>. COMMAND is a shell
# command line (its words are joined with spaces; generator expressions such as $<TARGET_FILE:my_adapter> work)
# that speaks permcheck's line protocol. The test passes when the verdict is `holds` (exit 0) and fails on
# violated / nondeterministic / non-finite (exit 1) or error (exit 2). The report (report.json, .md, .html) is
# written to REPORT, by default <current binary dir>/permcheck-reports/<test>.
function(permcheck_add_audit)
  cmake_parse_arguments(PARSE_ARGV 0 arg ""
    "NAME;DIM;OUTPUT;DTYPE;CASES;SEED;MIN_LEN;MAX_LEN;TIMEOUT;STARTUP_TIMEOUT;JOBS;REPORT" "COMMAND")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "permcheck_add_audit: unknown arguments '${arg_UNPARSED_ARGUMENTS}' (expected NAME, COMMAND, "
                        "DIM, OUTPUT, DTYPE, CASES, SEED, MIN_LEN, MAX_LEN, TIMEOUT, STARTUP_TIMEOUT, JOBS, REPORT)")
  endif()
  foreach(required NAME COMMAND DIM)
    if(NOT arg_${required})
      message(FATAL_ERROR "permcheck_add_audit: ${required} is required, e.g. "
                          "permcheck_add_audit(NAME MyLayerIsEquivariant COMMAND python3 adapter.py DIM 8)")
    endif()
  endforeach()
  if(arg_OUTPUT AND NOT arg_OUTPUT MATCHES "^(sequence|pooled)$")
    message(FATAL_ERROR "permcheck_add_audit(${arg_NAME}): OUTPUT must be sequence or pooled, got '${arg_OUTPUT}'")
  endif()
  if(arg_DTYPE AND NOT arg_DTYPE MATCHES "^(infer|float32|float64)$")
    message(FATAL_ERROR "permcheck_add_audit(${arg_NAME}): DTYPE must be infer, float32 or float64, got '${arg_DTYPE}'")
  endif()
  if(TARGET permcheck::cli)
    set(permcheck_command $<TARGET_FILE:permcheck::cli>)
  elseif(TARGET permcheck)  # inside permcheck's own build tree
    set(permcheck_command $<TARGET_FILE:permcheck>)
  else()
    message(FATAL_ERROR "permcheck_add_audit: the permcheck command is not known: call find_package(permcheck) first")
  endif()
  if(NOT arg_REPORT)
    set(arg_REPORT "${CMAKE_CURRENT_BINARY_DIR}/permcheck-reports/${arg_NAME}")
  endif()
  list(JOIN arg_COMMAND " " adapter)
  set(audit_args --exec "${adapter}" --dim ${arg_DIM} --report "${arg_REPORT}")
  foreach(option OUTPUT DTYPE CASES SEED MIN_LEN MAX_LEN TIMEOUT STARTUP_TIMEOUT JOBS)
    if(DEFINED arg_${option})
      string(TOLOWER "${option}" flag)
      string(REPLACE "_" "-" flag "${flag}")
      list(APPEND audit_args --${flag} ${arg_${option}})
    endif()
  endforeach()
  add_test(NAME ${arg_NAME} COMMAND ${permcheck_command} audit ${audit_args})
  set_tests_properties(${arg_NAME} PROPERTIES LABELS permcheck)
endfunction()
