# Installing jitgemm: the shared library (versioned SONAME) and the static one, the public header,
# the CLI, a CMake package (find_package(jitgemm) -> jitgemm::jitgemm) and jitgemm.pc.
# Kept out of CMakeLists.txt so the build and the packaging change independently.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# ---- version: project(VERSION) is the one source; api/version.c checks the header agrees -----
set_source_files_properties(${CMAKE_SOURCE_DIR}/api/version.c PROPERTIES COMPILE_DEFINITIONS
  "JITGEMM_VERSION_STRING=\"${PROJECT_VERSION}\";JITGEMM_PROJECT_VERSION_MAJOR=${PROJECT_VERSION_MAJOR};JITGEMM_PROJECT_VERSION_MINOR=${PROJECT_VERSION_MINOR};JITGEMM_PROJECT_VERSION_PATCH=${PROJECT_VERSION_PATCH}")

# ---- the toolkit search (jit/toolkit_dirs.c) ---------------------------------------------------
# Installed, the CLI in <bindir> reaches <libdir>/jitgemm-toolkits through this relative path;
# nothing absolute is compiled in, so a relocated prefix keeps working.
file(RELATIVE_PATH JITGEMM_BINDIR_TO_LIBDIR
  "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
set_source_files_properties(${CMAKE_SOURCE_DIR}/jit/toolkit_dirs.c PROPERTIES COMPILE_DEFINITIONS
  "JITGEMM_BINDIR_TO_LIBDIR=\"${JITGEMM_BINDIR_TO_LIBDIR}\"")
# In the build tree the library, CLI, tests and examples all sit in the build folder, so a link
# there makes them find the source tree's .deps the way an install finds its own toolkits. It is
# never installed.
file(CREATE_LINK "${JITGEMM_DEPS_DIR}" "${CMAKE_BINARY_DIR}/jitgemm-toolkits" SYMBOLIC)

# ---- libraries, header, CLI -----------------------------------------------------------------
set_target_properties(jitgemm PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
set_target_properties(jitgemm_static PROPERTIES OUTPUT_NAME jitgemm)

install(TARGETS jitgemm
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development)
install(TARGETS jitgemm_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS jitgemm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/jitgemm.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# ---- CMake package ----------------------------------------------------------------------------
set(JITGEMM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/jitgemm)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/jitgemmConfig.cmake.in
  ${CMAKE_BINARY_DIR}/packaging/jitgemmConfig.cmake
  INSTALL_DESTINATION ${JITGEMM_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
# Before 1.0 every minor release may break the ABI (the SONAME is the major number, 0).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/packaging/jitgemmConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/packaging/jitgemmConfig.cmake
  ${CMAKE_BINARY_DIR}/packaging/jitgemmConfigVersion.cmake DESTINATION ${JITGEMM_CMAKE_DIR})

# ---- pkg-config ------------------------------------------------------------------------------
# The prefix is found from the .pc file's own place, so `cmake --install --prefix P` and a moved
# prefix both give correct flags.
file(RELATIVE_PATH JITGEMM_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" JITGEMM_PC_TO_PREFIX "${JITGEMM_PC_TO_PREFIX}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/jitgemm.pc.in ${CMAKE_BINARY_DIR}/packaging/jitgemm.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/packaging/jitgemm.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---- the test: install into a temporary prefix and build consumers against it -----------------
# Not in the sanitizer or fuzz builds: a consumer linked without the sanitizer runtime cannot load
# an instrumented library, and those builds check other things.
if(JITGEMM_TESTS AND NOT JITGEMM_SANITIZE AND NOT JITGEMM_FUZZ)
  add_test(NAME install_consumer
    COMMAND ${CMAKE_SOURCE_DIR}/tests/consumer/check_install.sh ${CMAKE_BINARY_DIR}
            ${CMAKE_SOURCE_DIR} ${PROJECT_VERSION} ${CMAKE_INSTALL_LIBDIR} ${JITGEMM_DEPS_DIR})
  set_tests_properties(install_consumer PROPERTIES TIMEOUT 300
    ENVIRONMENT "CC=${CMAKE_C_COMPILER}")
endif()
