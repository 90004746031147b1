/*
 * `jitgemm cache stats`: what a cache directory holds, summed up for an operator deciding
 * whether a host is ready (how many kernels, for which archs and toolchains) and whether the
 * size cap fits (bytes against the cap). It reads the index as `cache list` does (rebuilding a
 * damaged one from the sidecars) and the sizes in the kernels folder. The counters of a context's
 * hits and compiles belong to a process that does work; `prewarm` prints them, and programs read
 * them with jit_context_stats.
 */
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "cli.h"

/* One row of a breakdown: a name (an arch, a toolchain), its entries and cubin bytes. */
typedef struct tally {
    char name[48];
    size_t entries, fallback;
    uint64_t bytes;
} tally_t;

static tally_t *tally_for(tally_t *rows, size_t *n, const char *name) {
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(rows[i].name, name))
            return &rows[i];
    tally_t *t = &rows[(*n)++];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", name);
    return t;
}

static int cmp_tally(const void *a, const void *b) {
    return strcmp(((const tally_t *)a)->name, ((const tally_t *)b)->name);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Bytes of every regular file in the kernels folder (cubins, sidecars, sources, PTX): what the
 * cache costs on disk, which the index alone does not say. */
static uint64_t kernels_folder_bytes(const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/kernels", dir) >= (int)sizeof(path))
        return 0;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0;
    }
    uint64_t total = 0;
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (e->d_name[0] != '.' && fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode))
            total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

static json_t *tallies_json(const tally_t *rows, size_t n, int with_fallback) {
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_object();
        json_object_set_new(r, "entries", json_integer((json_int_t)rows[i].entries));
        json_object_set_new(r, "bytes", json_integer((json_int_t)rows[i].bytes));
        if (with_fallback)
            json_object_set_new(r, "fallback", json_integer((json_int_t)rows[i].fallback));
        json_object_set_new(o, rows[i].name, r);
    }
    return o;
}

int jit__cli_cache_stats(jit__cache_t *c, int json) {
    jit__cache_entry_t *e = NULL;
    size_t n = 0;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__cache_list(c, &e, &n, &d) != JIT_OK) {
        jit__cli_error("cache stats: %s", d.msg[0] ? d.msg : jit_status_string(d.status));
        jit__diag_clear(&d);
        return JIT_CLI_FAILED;
    }
    tally_t *archs = calloc(n ? n : 1, sizeof(*archs));
    tally_t *tcs = calloc(n ? n : 1, sizeof(*tcs));
    double *secs = calloc(n ? n : 1, sizeof(*secs));
    if (!archs || !tcs || !secs) {
        free(archs);
        free(tcs);
        free(secs);
        free(e);
        jit__cli_error("cache stats: out of memory");
        return JIT_CLI_FAILED;
    }
    size_t n_archs = 0, n_tcs = 0, fallback = 0;
    uint64_t bytes = 0;
    double total_secs = 0;
    int64_t oldest = 0, newest = 0;
    for (size_t i = 0; i < n; i++) {
        tally_t *a = tally_for(archs, &n_archs, e[i].arch);
        a->entries++;
        a->bytes += e[i].size;
        a->fallback += e[i].fallback != 0;
        char tc[48];
        snprintf(tc, sizeof(tc), "nvrtc %d.%d, nvjitlink %d.%d", e[i].toolchain.nvrtc_major,
                 e[i].toolchain.nvrtc_minor, e[i].toolchain.nvjitlink_major,
                 e[i].toolchain.nvjitlink_minor);
        tally_t *t = tally_for(tcs, &n_tcs, tc);
        t->entries++;
        t->bytes += e[i].size;
        fallback += e[i].fallback != 0;
        bytes += e[i].size;
        secs[i] = e[i].compile_seconds;
        total_secs += e[i].compile_seconds;
        if (e[i].last_used > 0 && (!oldest || e[i].last_used < oldest))
            oldest = e[i].last_used;
        if (e[i].last_used > newest)
            newest = e[i].last_used;
    }
    qsort(archs, n_archs, sizeof(*archs), cmp_tally);
    qsort(tcs, n_tcs, sizeof(*tcs), cmp_tally);
    if (n > 1)
        qsort(secs, n, sizeof(*secs), cmp_double);
    double median = n == 0 ? 0 : n % 2 ? secs[n / 2] : 0.5 * (secs[n / 2 - 1] + secs[n / 2]);
    uint64_t disk = kernels_folder_bytes(jit__cache_dir(c));
    int64_t cap = jit__cache_max_bytes(c);

    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "dir", json_string(jit__cache_dir(c)));
        json_object_set_new(o, "entries", json_integer((json_int_t)n));
        json_object_set_new(o, "cubin_bytes", json_integer((json_int_t)bytes));
        json_object_set_new(o, "disk_bytes", json_integer((json_int_t)disk));
        json_object_set_new(o, "max_bytes", json_integer((json_int_t)cap));
        json_object_set_new(o, "fallback", json_integer((json_int_t)fallback));
        json_object_set_new(o, "archs", tallies_json(archs, n_archs, 1));
        json_object_set_new(o, "toolchains", tallies_json(tcs, n_tcs, 0));
        json_object_set_new(o, "compile_seconds_total", json_real(total_secs));
        json_object_set_new(o, "compile_seconds_median", json_real(median));
        json_object_set_new(o, "oldest_last_used", oldest ? json_integer(oldest) : json_null());
        json_object_set_new(o, "newest_last_used", newest ? json_integer(newest) : json_null());
        char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        if (text)
            puts(text);
        free(text);
        json_decref(o);
    } else {
        char b[32], dk[32], cp[32], old[32], now[32];
        jit__cli_format_bytes(bytes, b, sizeof(b));
        jit__cli_format_bytes(disk, dk, sizeof(dk));
        jit__cli_format_bytes((uint64_t)cap, cp, sizeof(cp));
        jit__cli_format_time(oldest, old, sizeof(old));
        jit__cli_format_time(newest, now, sizeof(now));
        printf("cache %s\n", jit__cache_dir(c));
        printf("  entries         %zu (%zu fallback)\n", n, fallback);
        printf("  cubins          %s\n", b);
        printf("  on disk         %s of a %s cap (%.1f%%)\n", dk, cp,
               cap > 0 ? 100.0 * (double)disk / (double)cap : 0.0);
        printf("  compile time    total %.2f s, median %.2f s per entry\n", total_secs, median);
        printf("  last used       oldest %s, newest %s\n", old, now);
        if (n_archs)
            printf("  by arch:\n");
        for (size_t i = 0; i < n_archs; i++) {
            jit__cli_format_bytes(archs[i].bytes, b, sizeof(b));
            char arch[80];
            printf("    %-10s %6zu %-7s %10s", jit__cli_escape(archs[i].name, arch, sizeof(arch)),
                   archs[i].entries, archs[i].entries == 1 ? "entry" : "entries", b);
            if (archs[i].fallback)
                printf("  (%zu fallback)", archs[i].fallback);
            printf("\n");
        }
        if (n_tcs)
            printf("  by toolchain:\n");
        for (size_t i = 0; i < n_tcs; i++) {
            jit__cli_format_bytes(tcs[i].bytes, b, sizeof(b));
            printf("    %-26s %6zu %-7s %10s\n", tcs[i].name, tcs[i].entries,
                   tcs[i].entries == 1 ? "entry" : "entries", b);
        }
    }
    free(archs);
    free(tcs);
    free(secs);
    free(e);
    return JIT_CLI_OK;
}
