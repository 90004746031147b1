/*
 * Locating the project-local toolkit folders relative to the running module.
 *
 * The shared library is installed in <prefix>/<libdir> and the CLI (linked statically) in
 * <prefix>/<bindir>, so both reach <prefix>/<libdir>/jitgemm-toolkits: the first directly, the
 * second through the bindir-to-libdir path CMake computes (a relative path, so nothing absolute
 * is compiled in). In a build tree the library, CLI and tests sit side by side and CMake puts a
 * jitgemm-toolkits link there to the source tree's .deps.
 */
#include "toolkit_dirs.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef JITGEMM_BINDIR_TO_LIBDIR
#define JITGEMM_BINDIR_TO_LIBDIR "../lib"
#endif

/* Directory of the object (shared library or executable) holding this function. */
static int module_dir(char *out, size_t outsz) {
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1((void *)&module_dir, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return 0;
    /* The main program's link map has an empty name, and dli_fname is then whatever argv[0]
     * was; the kernel knows the real file. */
    const char *file = map->l_name && map->l_name[0] ? map->l_name : "/proc/self/exe";
    char real[PATH_MAX];
    if (!realpath(file, real))
        return 0;
    char *slash = strrchr(real, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    return snprintf(out, outsz, "%s", real[0] ? real : "/") < (int)outsz;
}

int jit__toolkit_roots(char roots[][JIT__TOOLKIT_ROOT_LEN], int max) {
    char dir[JIT__TOOLKIT_ROOT_LEN - 64];
    if (max <= 0 || !module_dir(dir, sizeof(dir)))
        return 0;
    int n = 0;
    snprintf(roots[n++], JIT__TOOLKIT_ROOT_LEN, "%s/%s", dir, JIT__TOOLKITS_FOLDER);
    /* Resolved so messages show <prefix>/lib rather than <prefix>/bin/../lib; a missing libdir
     * (a program outside any prefix) is simply no candidate. */
    char up[JIT__TOOLKIT_ROOT_LEN], libdir[PATH_MAX];
    if (n < max &&
        snprintf(up, sizeof(up), "%s/%s", dir, JITGEMM_BINDIR_TO_LIBDIR) < (int)sizeof(up) &&
        realpath(up, libdir) && strcmp(libdir, dir) != 0 &&
        strlen(libdir) + sizeof(JIT__TOOLKITS_FOLDER) + 1 < JIT__TOOLKIT_ROOT_LEN)
        snprintf(roots[n++], JIT__TOOLKIT_ROOT_LEN, "%s/%s", libdir, JIT__TOOLKITS_FOLDER);
    return n;
}
