# permcheck_add_audit(NAME <test> COMMAND <adapter command words...> DIM <d>
#                     [EXPECT holds|violated|nondeterministic|non-finite|undecided|batch-dependent|history-dependent]
#                     [OUTPUT sequence|pooled] [DTYPE infer|float32|float64] [CASES <n>] [SEED <s>]
#                     [MIN_LEN <n>] [MAX_LEN <n>] [TIMEOUT <seconds per request>]
#                     [STARTUP_TIMEOUT <seconds for the first answer>] [JOBS <n>] [REPORT <dir>]
#                     [PROPERTY equivariance|invariance|shift|padding|causal|packing|incremental|agreement]
#                     [PADDING left|right|any]
#                     [PADDING_AXIS <axis>] [CAUSAL_AXIS <axis>] [SKIP_PADDED]
#                     [REFERENCE <reference implementation's adapter command words...>])
# or, for a layer with several inputs, its signature instead of DIM, MIN_LEN and MAX_LEN:
# permcheck_add_audit(NAME <test> COMMAND <adapter command words...>
#                     AXIS <NAME=MIN..MAX>... INPUT <NAME:DIMS[:KIND]>... OUTPUT <NAME:DIMS>... [other options])
#
# Registers `permcheck audit --exec "<command>" --dim <d> ...` (or `--axis ... --input ... --output ...`, one
# flag per value of AXIS, INPUT and OUTPUT) as the ctest test <test>. COMMAND is the adapter's
# argument list, one word per argument as in add_test(): each word is quoted for the shell, so a path with spaces
# works. A C++ adapter built by the same project (e.g. with <permcheck/serve.h>) is named as add_test() names one:
#   - by its target's name as the first word (COMMAND my_adapter --flag): an executable target defined before this
#     call is replaced by its file, $<TARGET_FILE:my_adapter>;
#   - by a generator expression in any word (COMMAND $<TARGET_FILE:my_adapter>, $<TARGET_FILE_DIR:my_adapter>/w.bin),
#     evaluated when the build system is generated, inside the word's shell quotes: its value may hold spaces,
#     not a single quote.
# ctest runs what the build made: build the adapter target (`cmake --build`) before ctest, as for any test program.
# REFERENCE names a reference implementation's adapter the same way (--reference-exec): PROPERTY is then agreement
# (the default with REFERENCE), the layer and the reference answering every input alike; SKIP_PADDED leaves the
# slots the masks pad out of the comparison.
# The adapter speaks permcheck's line protocol. Without EXPECT the test passes when the verdict is `holds` (exit 0) and fails on anything else. With
# EXPECT it passes only when the audit ends with that verdict: the verdict is read from the report's
# report.json, and the exit code must be that verdict's (exit 1 alone covers three verdicts, and an error is
# never what was expected). The report (report.json, .md, .html) is written to REPORT, by default
# <current binary dir>/permcheck-reports/<test>.
set(_permcheck_expect_script "${CMAKE_CURRENT_LIST_DIR}/permcheckExpect.cmake")

# One shell word: words of the safe characters stay as they are (a readable replay line); anything else is put
# in single quotes, a single quote inside written as '\''.
function(_permcheck_shell_word word out)
  if(word MATCHES "^[A-Za-z0-9_./:=@%+,-]+$")
    set(${out} "${word}" PARENT_SCOPE)
  else()
    string(REPLACE "'" "'\\''" quoted "${word}")
    set(${out} "'${quoted}'" PARENT_SCOPE)
  endif()
endfunction()

# The adapter command's words as one shell command line (a first word naming an executable target is its file).
function(_permcheck_command_line out)
  set(words "")
  set(first TRUE)
  foreach(word IN LISTS ARGN)
    # add_test()'s rule: a first word that names an executable target is its file. The permcheck command is the
    # test's command here, so the adapter's word has to be resolved by hand.
    if(first AND TARGET "${word}")
      get_target_property(type "${word}" TYPE)
      if(type STREQUAL "EXECUTABLE")
        set(word "$<TARGET_FILE:${word}>")
      endif()
    endif()
    set(first FALSE)
    _permcheck_shell_word("${word}" quoted)
    list(APPEND words "${quoted}")
  endforeach()
  list(JOIN words " " line)
  set(${out} "${line}" PARENT_SCOPE)
endfunction()

function(permcheck_add_audit)
  cmake_parse_arguments(PARSE_ARGV 0 arg "SKIP_PADDED"
    "NAME;DIM;EXPECT;DTYPE;CASES;SEED;MIN_LEN;MAX_LEN;TIMEOUT;STARTUP_TIMEOUT;JOBS;REPORT;PROPERTY;PADDING;PADDING_AXIS;CAUSAL_AXIS"
    "COMMAND;AXIS;INPUT;OUTPUT;REFERENCE")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "permcheck_add_audit: unknown arguments '${arg_UNPARSED_ARGUMENTS}' (expected NAME, COMMAND, "
                        "DIM, EXPECT, OUTPUT, DTYPE, CASES, SEED, MIN_LEN, MAX_LEN, TIMEOUT, STARTUP_TIMEOUT, JOBS, "
                        "REPORT, AXIS, INPUT, PROPERTY, PADDING, PADDING_AXIS, CAUSAL_AXIS, SKIP_PADDED, REFERENCE)")
  endif()
  if(arg_REFERENCE AND NOT DEFINED arg_PROPERTY)
    set(arg_PROPERTY agreement)
  endif()
  if(arg_REFERENCE AND NOT arg_PROPERTY STREQUAL "agreement")
    message(FATAL_ERROR "permcheck_add_audit(${arg_NAME}): REFERENCE goes with PROPERTY agreement, got '${arg_PROPERTY}'")
  endif()
  if(arg_PROPERTY STREQUAL "agreement" AND NOT arg_REFERENCE)
    message(FATAL_ERROR "permcheck_add_audit(${arg_NAME}): PROPERTY agreement needs the REFERENCE implementation's "
                        "adapter command")
  endif()
  set(signature FALSE)
  if(arg_AXIS OR arg_INPUT)
    set(signature TRUE)
  endif()
  set(required NAME COMMAND DIM)
  if(signature)
    set(required NAME COMMAND AXIS INPUT OUTPUT)
    foreach(shorthand DIM MIN_LEN MAX_LEN)
      if(DEFINED arg_${shorthand})
        message(FATAL_ERROR "permcheck_add_audit(${arg_NAME}): ${shorthand} cannot be mixed with AXIS/INPUT (the "
                            "signature's axes carry their ranges: AXIS n=1..8)")
      endif()
    endforeach()
  endif()
  foreach(r IN LISTS required)
    if(NOT arg_${r})
      message(FATAL_ERROR "permcheck_add_audit: ${r} is required, e.g. "
                          "permcheck_add_audit(NAME MyLayerIsEquivariant COMMAND python3 adapter.py DIM 8) or, with a "
                          "signature, ... AXIS n=1..8 INPUT x:n,8 OUTPUT y:n,8")
    endif()
  endforeach()
  if(DEFINED arg_EXPECT AND NOT arg_EXPECT MATCHES "^(holds|violated|nondeterministic|non-finite|undecided|batch-dependent|history-dependent)$")
    message(FATAL_ERROR "permcheck_add_audit(${arg_NAME}): EXPECT must be holds, violated, nondeterministic, "
                        "non-finite, undecided, batch-dependent or history-dependent, got '${arg_EXPECT}'")
  endif()
  if(DEFINED arg_PROPERTY AND NOT arg_PROPERTY MATCHES "^(equivariance|invariance|shift|padding|causal|packing|incremental|agreement)$")
    message(FATAL_ERROR "permcheck_add_audit(${arg_NAME}): PROPERTY must be equivariance, invariance, shift, padding, causal, packing, incremental or agreement "
                        "(reversal and causal-prefix are the reference layers'), got '${arg_PROPERTY}'")
  endif()
  foreach(output IN LISTS arg_OUTPUT)
    if(signature AND NOT output MATCHES ":")
      message(FATAL_ERROR "permcheck_add_audit(${arg_NAME}): with AXIS/INPUT every OUTPUT is NAME:DIMS, got '${output}'")
    elseif(NOT signature AND NOT output MATCHES "^(sequence|pooled)$")
      message(FATAL_ERROR "permcheck_add_audit(${arg_NAME}): OUTPUT must be sequence or pooled (NAME:DIMS with AXIS "
                          "and INPUT), got '${output}'")
    endif()
  endforeach()
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
  _permcheck_command_line(adapter ${arg_COMMAND})
  set(audit_args --exec "${adapter}" --report "${arg_REPORT}")
  if(arg_REFERENCE)
    _permcheck_command_line(reference ${arg_REFERENCE})
    list(APPEND audit_args --reference-exec "${reference}")
  endif()
  if(arg_SKIP_PADDED)
    list(APPEND audit_args --skip-padded)
  endif()
  if(DEFINED arg_DIM)
    list(APPEND audit_args --dim "${arg_DIM}")
  endif()
  foreach(option AXIS INPUT OUTPUT)
    string(TOLOWER "${option}" flag)
    foreach(value IN LISTS arg_${option})
      list(APPEND audit_args --${flag} "${value}")
    endforeach()
  endforeach()
  foreach(option DTYPE CASES SEED MIN_LEN MAX_LEN TIMEOUT STARTUP_TIMEOUT JOBS PROPERTY PADDING PADDING_AXIS CAUSAL_AXIS)
    if(DEFINED arg_${option})
      string(TOLOWER "${option}" flag)
      string(REPLACE "_" "-" flag "${flag}")
      list(APPEND audit_args --${flag} "${arg_${option}}")
    endif()
  endforeach()
  if(DEFINED arg_EXPECT)
    add_test(NAME ${arg_NAME}
             COMMAND ${CMAKE_COMMAND} "-DPERMCHECK=${permcheck_command}" "-DEXPECT=${arg_EXPECT}"
                     "-DREPORT=${arg_REPORT}" -P "${_permcheck_expect_script}" -- audit ${audit_args})
  else()
    add_test(NAME ${arg_NAME} COMMAND ${permcheck_command} audit ${audit_args})
  endif()
  set_tests_properties(${arg_NAME} PROPERTIES LABELS permcheck)
endfunction()
