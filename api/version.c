/*
 * jit_version(): the string CMake's project(VERSION) gives, compiled in by cmake/packaging.cmake.
 */
#include "jitgemm.h"

#if !defined(JITGEMM_VERSION_STRING) || !defined(JITGEMM_PROJECT_VERSION_MAJOR)
#error "JITGEMM_VERSION_STRING and JITGEMM_PROJECT_VERSION_* come from cmake/packaging.cmake"
#endif

/* The header's macros are what a consumer compiles against; a release that bumps one version
 * and not the other would lie to every caller comparing them. */
#if JITGEMM_VERSION_MAJOR != JITGEMM_PROJECT_VERSION_MAJOR ||                                      \
    JITGEMM_VERSION_MINOR != JITGEMM_PROJECT_VERSION_MINOR ||                                      \
    JITGEMM_VERSION_PATCH != JITGEMM_PROJECT_VERSION_PATCH
#error "include/jitgemm.h's JITGEMM_VERSION_* disagree with project(VERSION) in CMakeLists.txt"
#endif

const char *jit_version(void) {
    return JITGEMM_VERSION_STRING;
}
