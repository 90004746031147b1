#include "fuzz_cache_dir.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static jit__cache_t *g_cache;
static char g_dir[256];

static void remove_dir(void) {
    /* A shell keeps this short; the harness process is about to end anyway. */
    char cmd[300];
    jit__cache_close(g_cache);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: could not remove %s\n", g_dir);
}

jit__cache_t *fuzz_cache(void) {
    if (g_cache)
        return g_cache;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof(g_dir), "%s/jitgemm-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir) || jit__cache_open(g_dir, 0, JIT_LOG_SILENT, &g_cache, NULL) != JIT_OK) {
        fprintf(stderr, "fuzz: cannot set up a cache in %s\n", g_dir);
        abort();
    }
    atexit(remove_dir);
    return g_cache;
}

void fuzz_cache_put(const char *name, const uint8_t *data, size_t size) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", jit__cache_dir(fuzz_cache()), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size)) {
        perror(path);
        abort();
    }
    close(fd);
}
