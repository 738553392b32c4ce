# The installed package: the public headers, the static libraries behind them, the permcheck command and two
# export sets, so that a user's find_package(permcheck CONFIG REQUIRED) gives permcheck::permcheck, permcheck::cli
# and permcheck_add_audit(), and find_package(permcheck COMPONENTS cli) gives only the command and the function.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(PERMCHECK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/permcheck)

# Headers: the API at <prefix>/include/permcheck/*.h, reached as <permcheck/audit.h>, and only the internal headers
# it reads (what `g++ -M` lists for <permcheck/gtest.h> and <permcheck/serve.h>; tests/public_headers.sh checks
# that this list is exactly that, and that none of them is RapidCheck's, Boost's or GMP's), in their folders under
# <prefix>/include/permcheck/, where the API's "check/..." includes find them. Test fixtures, the catalog, the
# search and the scalars (exact rationals, symbolic) are the command's business and stay out.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/permcheck DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(header scalars/mat.h scalars/weights_version.h layers/expectation.h cases/permutation.h cases/signature.h
               cases/tolerance_model.h cases/vocabulary.h check/blackbox.h check/check_result.h check/signature_audit.h
               check/taps.h report/text.h)
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/permcheck/${folder})
endforeach()

# The API builds on the black-box audit alone (check/CMakeLists.txt): neither the catalog of reference layers nor
# Z3 is installed for it.
install(TARGETS permcheck_scalars permcheck_layers permcheck_blackbox permcheck_text permcheck_api permcheck_serve
        EXPORT permcheckTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# `cmake --install --strip` strips executables only; the static libraries of a RelWithDebInfo build would keep
# 85 MB of debug information. Strip theirs too (--strip-debug keeps the symbols a linker needs).
if(CMAKE_STRIP)
  foreach(library permcheck_blackbox permcheck_text)
    install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
                  \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:${library}>\")
endif()")
  endforeach()
endif()
install(EXPORT permcheckTargets NAMESPACE permcheck:: DESTINATION ${PERMCHECK_CMAKE_DIR})

# The command, exported on its own: an imported executable needs no headers, so the cli component finds no
# dependency. Installed binaries carry no debug information (`cmake --install --strip` strips them further).
set_target_properties(permcheck PROPERTIES EXPORT_NAME cli)
install(TARGETS permcheck EXPORT permcheckCliTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT permcheckCliTargets NAMESPACE permcheck:: DESTINATION ${PERMCHECK_CMAKE_DIR})
# The ready Python adapter, where the installed command finds it (adapters/python_path.cpp) and puts it on the
# PYTHONPATH of the programs `permcheck audit --exec` runs.
# Beside it the Python package `permcheck` (audits served in process, the pytest plugin): PYTHONPATH=
# <prefix>/share/permcheck/python imports it, and it finds <prefix>/bin/permcheck beside itself.
install(FILES ${PROJECT_SOURCE_DIR}/python/permcheck_adapter.py DESTINATION ${CMAKE_INSTALL_DATADIR}/permcheck/python)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/permcheck DESTINATION ${CMAKE_INSTALL_DATADIR}/permcheck/python
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/permcheckConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/permcheckConfig.cmake INSTALL_DESTINATION ${PERMCHECK_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/permcheckConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/permcheckConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/permcheckConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/permcheckFunctions.cmake ${CMAKE_CURRENT_LIST_DIR}/permcheckExpect.cmake
        DESTINATION ${PERMCHECK_CMAKE_DIR})
