/*
 * Where the project-local toolkits (the NVRTC/nvJitLink folders scripts/setup.sh unpacks) are
 * looked for: beside the code that is running, never at a path fixed when it was built, so an
 * installed or relocated copy finds its own toolkits and never a build machine's.
 */
#ifndef JIT_TOOLKIT_DIRS_H
#define JIT_TOOLKIT_DIRS_H

#include <stddef.h>

/* Name of the folder holding one cuda-<major.minor> sub-folder per toolkit. */
#define JIT__TOOLKITS_FOLDER "jitgemm-toolkits"

enum { JIT__TOOLKIT_ROOTS_MAX = 2, JIT__TOOLKIT_ROOT_LEN = 4096 };

/* Fill roots with the candidate folders, most specific first: <module dir>/jitgemm-toolkits, then
 * <module dir>/<bindir-to-libdir>/jitgemm-toolkits, where the module is the shared library or
 * executable this code was linked into. Returns how many were written (0 when the module's
 * location cannot be found). The folders need not exist. */
int jit__toolkit_roots(char roots[][JIT__TOOLKIT_ROOT_LEN], int max);

#endif
