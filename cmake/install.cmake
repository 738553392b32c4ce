# The installed package: headers, static libraries, the permcheck command and an export set, so that a user's
# find_package(permcheck CONFIG REQUIRED) gives permcheck::permcheck, permcheck::cli and permcheck_add_audit().
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(PERMCHECK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/permcheck)

# Headers keep their folders: <prefix>/include/permcheck/{scalars,layers,check}/ (reached as "check/..." through
# permcheck_scalars' include/permcheck directory) and the API at <prefix>/include/permcheck/*.h (reached as
# <permcheck/audit.h> through permcheck_api's include directory).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/scalars ${PROJECT_SOURCE_DIR}/layers ${PROJECT_SOURCE_DIR}/check
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/permcheck
        FILES_MATCHING PATTERN "*.h"
        PATTERN "symbolic.h" EXCLUDE     # the Z3 prover stays in the command
        PATTERN "make_family.h" EXCLUDE)  # instantiates the symbolic scalar
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/permcheck DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set_target_properties(permcheck PROPERTIES EXPORT_NAME cli)
install(TARGETS permcheck_scalars permcheck_proof_scalars permcheck_layers permcheck_catalog permcheck_check
                permcheck_api permcheck
        EXPORT permcheckTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET permcheck-torch)
  install(TARGETS permcheck-torch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT permcheckTargets NAMESPACE permcheck:: DESTINATION ${PERMCHECK_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/permcheckConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/permcheckConfig.cmake INSTALL_DESTINATION ${PERMCHECK_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/permcheckConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/permcheckConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/permcheckConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/permcheckFunctions.cmake
        DESTINATION ${PERMCHECK_CMAKE_DIR})
