/*
 * Remembered toolchain identities: a process that finds its toolchain in the record does not
 * open NVRTC or nvJitLink until it compiles, and a record whose fingerprints no longer match
 * the files is not trusted. Each case runs in a forked child, since the toolchain table is
 * process-wide.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"
#include "toolchain.h"

static int nvrtc_mapped(void) {
    char *maps = jt_read_file("/proc/self/maps", NULL);
    int mapped = maps && strstr(maps, "libnvrtc") != NULL;
    free(maps);
    return mapped;
}

/* In a child: identify the automatic toolchain with the record in `dir`. Exit codes: 0 = not
 * loaded and identity as expected, 10 = loaded, 20 = failure. Writes "maj.min" to dir/id. */
static int child(const char *dir, int load_after) {
    pid_t pid = fork();
    if (pid == 0) {
        jit__toolchain_remember_in(dir);
        const jit__toolchain_t *tc;
        jit__diag_t d;
        jit__diag_init(&d);
        if (jit__toolchain_get(NULL, &tc, &d) != JIT_OK)
            _exit(20);
        char path[1024], text[64];
        snprintf(path, sizeof(path), "%s/id", dir);
        snprintf(text, sizeof(text), "%d.%d %d", tc->id.nvrtc_major, tc->id.nvrtc_minor,
                 tc->n_archs);
        jt_write_file(path, text);
        int was_mapped = nvrtc_mapped();
        if (load_after && (jit__toolchain_load(tc, &d) != JIT_OK || !nvrtc_mapped()))
            _exit(20);
        _exit(was_mapped ? 10 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(toolchain_record, a_remembered_toolchain_is_not_loaded_until_used) {
    char *dir = jt_mkdtemp("tcrecord");
    /* First process: nothing remembered, so it loads to identify, and writes the record. */
    cr_assert_eq(child(dir, 0), 10);
    char path[1024];
    snprintf(path, sizeof(path), "%s/toolchains.json", dir);
    char *record = jt_read_file(path, NULL);
    cr_assert_not_null(record, "no record written");
    cr_assert(strstr(record, "libnvrtc"), "%s", record);
    snprintf(path, sizeof(path), "%s/id", dir);
    char *first = jt_read_file(path, NULL);
    /* Second process: same identity, libraries not opened; loading on demand works. */
    cr_assert_eq(child(dir, 1), 0, "the remembered toolchain was loaded anyway");
    char *second = jt_read_file(path, NULL);
    cr_assert_str_eq(first, second);
    free(first);
    free(second);
    free(record);
    jt_rmtree(dir);
    free(dir);
}

Test(toolchain_record, a_stale_fingerprint_is_not_trusted) {
    char *dir = jt_mkdtemp("tcstale");
    cr_assert_eq(child(dir, 0), 10);
    char path[1024];
    snprintf(path, sizeof(path), "%s/toolchains.json", dir);
    char *record = jt_read_file(path, NULL);
    cr_assert_not_null(record);
    /* Make every NVRTC fingerprint unmatched, as a library replaced in place would: the
     * toolchain must be identified again, not believed. */
    cr_assert_not_null(strstr(record, "\"nvrtc_file\": ["), "%s", record);
    char *p;
    while ((p = strstr(record, "\"nvrtc_file\": [")) != NULL)
        memcpy(p, "\"nvrtc_filX\": [", 15);
    cr_assert_eq(jt_write_file(path, record), 0);
    cr_assert_eq(child(dir, 0), 10, "a record that no longer matches was trusted");
    free(record);
    jt_rmtree(dir);
    free(dir);
}
