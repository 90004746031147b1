/*
 * `jitgemm cache export FILE` and `jitgemm cache import FILE`: a cache as one file, to carry
 * kernels prewarmed on a build host to the hosts that serve them (cache/archive.h). Import checks
 * the whole archive before it opens (and so creates) the cache, and publishes nothing from a bad
 * one; --shared then makes the cache readable by every user, for a read-only layer other users
 * search (docs/cache.md, "Layered caches").
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "arch.h"
#include "archive.h"
#include "cli.h"

static int make_shared(const char *path, const struct stat *st, int type, struct FTW *f) {
    (void)f;
    if (type == FTW_SL || type == FTW_SLN)
        return 0; /* a link is never followed, nor its target's mode changed */
    mode_t want = (type == FTW_D || type == FTW_DP) ? 0755 : 0644;
    if ((st->st_mode & 07777) != want && chmod(path, want) != 0) {
        jit__cli_error("cache import --shared: cannot chmod %s: %s", path, strerror(errno));
        return 1;
    }
    return 0;
}

int jit__cli_cache_archive(const char *action, const char *file, const char *cache_dir,
                           const char *arch, int shared, int json) {
    int is_export = !strcmp(action, "export");
    if (!file)
        return jit__cli_usage("cache", "missing archive FILE: jitgemm cache %s FILE", action);
    if (arch && !is_export)
        return jit__cli_usage("cache", "--arch applies to 'cache export' only");
    if (shared && is_export)
        return jit__cli_usage("cache", "--shared applies to 'cache import' only");
    int rc = arch ? jit__cli_arch("cache", arch) : 0;
    if (rc)
        return rc;
    const jit__arch_profile_t *profile = arch ? jit__arch_find(arch) : NULL;
    jit__cache_t *c = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    jit__archive_counts_t n;
    memset(&n, 0, sizeof(n));
    /* The archive is read and checked before the cache is opened: opening creates the cache
     * directory, which a refused import must not leave behind. */
    jit__archive_t *archive = NULL;
    jit_status_t st = is_export ? JIT_OK : jit__archive_load(file, &archive, &d);
    if (st == JIT_OK)
        st = jit__cache_open(cache_dir, 0, JIT_LOG_WARN, &c, &d);
    if (st == JIT_OK && !jit__cache_readable(c))
        st = jit__fail(&d, JIT_CACHE_ERROR, "%s cannot be used (see the warning above)",
                       jit__cache_dir(c));
    if (st == JIT_OK)
        st = is_export ? jit__cache_export(c, file, profile ? profile->name : NULL, &n, &d)
                       : jit__cache_import_archive(c, archive, &n, &d);
    jit__archive_free(archive);
    if (st == JIT_OK && shared && nftw(jit__cache_dir(c), make_shared, 16, FTW_PHYS) != 0)
        st = jit__fail(&d, JIT_IO_ERROR, "making %s readable by every user failed",
                       jit__cache_dir(c));
    if (st != JIT_OK) {
        /* An import refusal quotes the archive's own arch and target. */
        char msg[4 * JIT__MSG_MAX];
        jit__cli_error("cache %s: %s", action, jit__cli_escape(d.msg, msg, sizeof(msg)));
        rc = JIT_CLI_FAILED;
    } else if (json && is_export) {
        printf("{\"exported\": %zu, \"skipped\": %zu}\n", n.written, n.skipped);
    } else if (json) {
        printf("{\"imported\": %zu, \"present\": %zu, \"other_format\": %zu}\n", n.imported,
               n.present, n.other_format);
    } else if (is_export) {
        printf("exported %zu %s from %s to %s", n.written, n.written == 1 ? "entry" : "entries",
               jit__cache_dir(c), file);
        if (n.skipped)
            printf(" (%zu left out: %s)", n.skipped,
                   arch ? "of another arch, or damaged" : "damaged");
        printf("\n");
    } else {
        printf("imported %zu %s into %s (%zu already there", n.imported,
               n.imported == 1 ? "entry" : "entries", jit__cache_dir(c), n.present);
        if (n.other_format)
            printf(", %zu of another key format left out: this build would never serve them",
                   n.other_format);
        printf(")\n");
    }
    jit__diag_clear(&d);
    jit__cache_close(c);
    return rc;
}
