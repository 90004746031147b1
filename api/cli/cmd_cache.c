/*
 * `jitgemm cache list|verify|gc|clear`: the on-disk cache seen from outside a context (export
 * and import are in cmd_cache_archive.c). These
 * work on the directory alone (cache/cache.h), so they run on machines with no GPU and no
 * compiler, with one exception worth spelling out: `gc` keeps the entries of the toolchain the
 * library would pick now, and when no toolchain can be found it cannot tell which one is
 * current. Rather than delete every kernel (a serving host with a briefly broken library path
 * would lose its whole prewarmed cache), it then keeps every toolchain present, still removes
 * other generator versions, damaged entries and leftovers, and says so.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "cli.h"
#include "device_files.h"
#include "driver.h"
#include "plan.h"
#include "toolchain.h"

const char jit__cli_cache_help[] =
    "Usage: jitgemm cache list   [--cache-dir D] [--json]\n"
    "       jitgemm cache verify [--cache-dir D] [--json]\n"
    "       jitgemm cache gc     [--cache-dir D] [--toolkit-dir T] [--dry-run] [--json]\n"
    "       jitgemm cache clear  [--cache-dir D] [--json]\n"
    "       jitgemm cache stats  [--cache-dir D] [--json]\n"
    "       jitgemm cache export FILE [--arch A] [--cache-dir D] [--json]\n"
    "       jitgemm cache import FILE [--shared] [--cache-dir D] [--json]\n"
    "\n"
    "  list    one line per entry: hash, arch, target (\"(fallback)\" when the cubin is the\n"
    "          arch's fallback target), kernel, size, registers, last used\n"
    "  verify  check every entry (sidecar, cubin size and checksum, owner) and the manifest;\n"
    "          print each problem; exit 1 if there is any. Reads only: it changes nothing,\n"
    "          not even a damaged manifest (gc repairs).\n"
    "  gc      remove entries built by another generator version or another toolchain than\n"
    "          the one the library picks now (as for a context: --toolkit-dir, else\n"
    "          $JITGEMM_TOOLKIT_DIR, else the newest found; on a GPU host also the newest one\n"
    "          its driver accepts), damaged entries, orphaned files and stale temporaries.\n"
    "          With no toolchain found, entries of every toolchain are kept (with a warning)\n"
    "          and only the rest is removed; a named toolkit directory that does not hold\n"
    "          one is an error. With --dry-run it prints what it would remove and why,\n"
    "          and changes nothing (it also works on a read-only cache).\n"
    "  clear   remove every entry and the manifest\n"
    "  stats   entries, cubin bytes, bytes on disk against the size cap, compile time, and\n"
    "          entries and bytes per arch and per toolchain (hit and compile counters belong\n"
    "          to a process: prewarm prints its own)\n"
    "  export  write every intact entry (of arch A only, with --arch) with its manifest data\n"
    "          and source to the archive FILE (docs/cache.md gives the format). FILE must be\n"
    "          new or a regular file of your own; a link, FIFO, device, directory or another\n"
    "          user's file is refused, as is a directory others can write (unless sticky)\n"
    "  import  check the whole archive FILE (every record's hash, each entry's sidecar, key\n"
    "          hash, cubin checksum and ELF header) and only then publish its entries into\n"
    "          the cache; a damaged or truncated archive is refused and nothing is imported.\n"
    "          --shared then makes the cache readable by every user (directories 0755, files\n"
    "          0644), for a read-only layer other users list after their own cache\n"
    "\n"
    "Options:\n"
    "  --cache-dir D   cache directory (default $JITGEMM_CACHE_DIR, $XDG_CACHE_HOME/jitgemm,\n"
    "                  ~/.cache/jitgemm). A colon-separated list adds read-only layers after\n"
    "                  the first directory; every action works on the first one only\n"
    "  --arch A        export only: the entries of arch A\n"
    "  --shared        import only: leave the cache readable by every user\n"
    "  --toolkit-dir T gc only: the NVRTC/nvJitLink directory whose entries to keep\n"
    "  --dry-run       gc only: report, remove nothing\n"
    "  --json          list: one manifest entry (JSON object) per line; verify: one\n"
    "                  {\"hash\",\"problem\"} per line; gc and clear: {\"removed\": N};\n"
    "                  gc --dry-run: {\"name\",\"reason\"} per line, then {\"would_remove\": N};\n"
    "                  stats: one object (fields: docs/cli.md)\n"
    "\n"
    "Exit status: 0 success, 1 failure (or verify found damage), 2 bad command line.\n";

/* One JSON object per line; takes the reference to o. */
static void print_json_line(json_t *o) {
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (line)
        puts(line);
    free(line);
    json_decref(o);
}

static int cache_fail(const char *what, jit__diag_t *d) {
    jit__cli_error("cache %s: %s", what, d->msg[0] ? d->msg : jit_status_string(d->status));
    return JIT_CLI_FAILED;
}

static int do_list(jit__cache_t *c, int json) {
    jit__cache_entry_t *e = NULL;
    size_t n = 0;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__cache_list(c, &e, &n, &d) != JIT_OK) {
        int rc = cache_fail("list", &d);
        jit__diag_clear(&d);
        return rc;
    }
    uint64_t total = 0;
    if (!json && n)
        printf("%-32s  %-8s %-19s %-24s %10s %5s  %s\n", "HASH", "ARCH", "TARGET", "KERNEL", "SIZE",
               "REGS", "LAST USED");
    for (size_t i = 0; i < n; i++) {
        total += e[i].size;
        if (json) {
            char *text = jit__cache_entry_to_json_line(&e[i]);
            if (text)
                puts(text);
            free(text);
            continue;
        }
        /* Arch, target and kernel name come from a sidecar, perhaps an imported one. */
        char arch[80], target[100], kernel[300], size[32], used[32];
        jit__cli_escape(e[i].target, arch, sizeof(arch));
        snprintf(target, sizeof(target), "%s%s", arch, e[i].fallback ? " (fallback)" : "");
        jit__cli_escape(e[i].arch, arch, sizeof(arch));
        jit__cli_escape(e[i].kernel_name, kernel, sizeof(kernel));
        jit__cli_format_bytes(e[i].size, size, sizeof(size));
        jit__cli_format_time(e[i].last_used, used, sizeof(used));
        printf("%-32s  %-8s %-19s %-24s %10s %5d  %s\n", e[i].hash, arch, target, kernel, size,
               e[i].registers, used);
    }
    if (!json) {
        char size[32];
        jit__cli_format_bytes(total, size, sizeof(size));
        printf("%zu %s, %s, in %s\n", n, n == 1 ? "entry" : "entries", size, jit__cache_dir(c));
    }
    free(e);
    return JIT_CLI_OK;
}

typedef struct verify_state {
    int json;
    size_t problems;
} verify_state_t;

static void on_problem(const char *hash, const char *problem, void *user) {
    verify_state_t *v = user;
    v->problems++;
    if (v->json) {
        json_t *o = json_object();
        json_object_set_new(o, "hash", hash && *hash ? json_string(hash) : json_null());
        json_object_set_new(o, "problem", json_string(problem ? problem : ""));
        print_json_line(o);
    } else {
        /* Problems name files found in the directory, whatever bytes their names hold. */
        char h[200], text[4096];
        printf("%s: %s\n", jit__cli_escape(hash && *hash ? hash : "manifest", h, sizeof(h)),
               jit__cli_escape(problem, text, sizeof(text)));
    }
}

/* Only jit__cache_verify, which reads: listing first would rebuild a damaged manifest and
 * then report a clean cache, hiding exactly what verify is asked to find. */
static int do_verify(jit__cache_t *c, int json) {
    verify_state_t v = {.json = json};
    size_t bad = 0, n = 0;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__cache_verify(c, on_problem, &v, &bad, &n, &d) != JIT_OK) {
        int rc = cache_fail("verify", &d);
        jit__diag_clear(&d);
        return rc;
    }
    fprintf(json ? stderr : stdout, "verified %zu %s in %s: %zu damaged, %zu %s reported\n", n,
            n == 1 ? "entry" : "entries", jit__cache_dir(c), bad, v.problems,
            v.problems == 1 ? "problem" : "problems");
    if (bad || v.problems)
        fprintf(stderr, "jitgemm: verify changed nothing; 'jitgemm cache gc' repairs the index "
                        "and removes damaged entries and stray files\n");
    return (bad || v.problems) ? JIT_CLI_FAILED : JIT_CLI_OK;
}

static void print_removed(int json, const char *what, size_t removed, const char *dir) {
    if (json)
        printf("{\"removed\": %zu}\n", removed);
    else
        printf("%s: removed %zu %s from %s\n", what, removed, removed == 1 ? "entry" : "entries",
               dir);
}

static void on_would_remove(const char *name, const char *reason, void *user) {
    if (*(const int *)user) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(name));
        json_object_set_new(o, "reason", json_string(reason));
        print_json_line(o);
    } else {
        char n[400], why[4096];
        printf("would remove %s: %s\n", jit__cli_escape(name, n, sizeof(n)),
               jit__cli_escape(reason, why, sizeof(why)));
    }
}

static int do_gc(jit__cache_t *c, const char *toolkit_dir, int dry_run, int json) {
    jit__diag_t d;
    jit__diag_init(&d);
    const jit__toolchain_t *tc = NULL;
    jit__toolchain_id_t *keep = NULL;
    size_t n_keep = 0, removed = 0;
    int rc = JIT_CLI_OK;
    if (jit__toolchain_get(toolkit_dir, &tc, &d) == JIT_OK) {
        keep = calloc(2, sizeof(*keep));
        if (keep) {
            keep[n_keep++] = tc->id;
            /* On a GPU host whose driver is older than that NVRTC, the library compiles what
             * it launches with the newest toolchain the driver accepts; those entries are in
             * use too. */
            const jit__driver_t *drv = NULL;
            jit__diag_t dd;
            jit__diag_init(&dd);
            if (jit__driver_get(&drv, &dd) == JIT_OK) {
                const jit__toolchain_t *ex =
                    jit__toolchain_newest_up_to(drv->version / 1000, (drv->version % 1000) / 10);
                if (ex && memcmp(&ex->id, &tc->id, sizeof(tc->id)))
                    keep[n_keep++] = ex->id;
            }
            jit__diag_clear(&dd);
        }
    } else if (toolkit_dir || (getenv("JITGEMM_TOOLKIT_DIR") && *getenv("JITGEMM_TOOLKIT_DIR"))) {
        /* A directory named explicitly (option or environment) and not usable is a mistake to
         * report, not to guess around. */
        rc = cache_fail("gc", &d);
        goto done;
    } else {
        fprintf(stderr,
                "jitgemm: warning: cache gc: no NVRTC found (%s); keeping the entries of every "
                "toolchain in the cache\n",
                d.msg);
        jit__diag_clear(&d);
        jit__cache_entry_t *e = NULL;
        size_t n = 0;
        if (jit__cache_list(c, &e, &n, &d) != JIT_OK) {
            rc = cache_fail("gc", &d);
            goto done;
        }
        keep = calloc(n ? n : 1, sizeof(*keep));
        for (size_t i = 0; keep && i < n; i++) {
            int seen = 0;
            for (size_t j = 0; j < n_keep && !seen; j++)
                seen = !memcmp(&keep[j], &e[i].toolchain, sizeof(*keep));
            if (!seen)
                keep[n_keep++] = e[i].toolchain;
        }
        free(e);
    }
    if (!keep) {
        jit__cli_error("out of memory");
        rc = JIT_CLI_FAILED;
        goto done;
    }
    if (dry_run) {
        if (jit__cache_gc_dry_run(c, keep, n_keep, JIT_KEY_FORMAT_VERSION, jit__device_files_hash(),
                                  on_would_remove, &json, &removed, &d) != JIT_OK) {
            rc = cache_fail("gc", &d);
            goto done;
        }
        if (json)
            printf("{\"would_remove\": %zu}\n", removed);
        else
            printf("gc --dry-run: would remove %zu %s from %s; nothing was removed\n", removed,
                   removed == 1 ? "item" : "items", jit__cache_dir(c));
        goto done;
    }
    if (jit__cache_gc(c, keep, n_keep, JIT_KEY_FORMAT_VERSION, jit__device_files_hash(), &removed,
                      &d) != JIT_OK) {
        rc = cache_fail("gc", &d);
        goto done;
    }
    print_removed(json, "gc", removed, jit__cache_dir(c));
done:
    free(keep);
    jit__diag_clear(&d);
    return rc;
}

static int do_clear(jit__cache_t *c, int json) {
    jit__diag_t d;
    jit__diag_init(&d);
    size_t removed = 0;
    int rc = JIT_CLI_OK;
    if (jit__cache_clear(c, &removed, &d) != JIT_OK)
        rc = cache_fail("clear", &d);
    else
        print_removed(json, "clear", removed, jit__cache_dir(c));
    jit__diag_clear(&d);
    return rc;
}

int jit__cli_cache(int argc, char **argv) {
    const char *verb = "cache";
    const char *cache_dir = NULL, *toolkit_dir = NULL, *arch = NULL;
    int json = 0, dry_run = 0, shared = 0;
    const jit__cli_opt_t opts[] = {
        {"cache-dir", "D", &cache_dir, NULL}, {"toolkit-dir", "T", &toolkit_dir, NULL},
        {"dry-run", NULL, NULL, &dry_run},    {"json", NULL, NULL, &json},
        {"arch", "A", &arch, NULL},           {"shared", NULL, NULL, &shared},
    };
    const char *pos[2];
    size_t n_pos = 0;
    int rc = jit__cli_parse(verb, argc, argv, opts, sizeof(opts) / sizeof(opts[0]), pos, 2, &n_pos);
    if (rc)
        return rc;
    if (n_pos == 0)
        return jit__cli_usage(verb, "missing action: list, verify, gc, clear, stats, export or import");
    const char *action = pos[0];
    if (!strcmp(action, "export") || !strcmp(action, "import")) {
        if (toolkit_dir || dry_run)
            return jit__cli_usage(verb, "--toolkit-dir and --dry-run apply to 'cache gc' only");
        return jit__cli_cache_archive(action, n_pos > 1 ? pos[1] : NULL, cache_dir, arch, shared,
                                      json);
    }
    if (n_pos > 1)
        return jit__cli_usage(verb, "too many arguments: '%s' after '%s'", pos[1], action);
    if (arch || shared)
        return jit__cli_usage(verb, "--arch and --shared apply to 'cache export' and 'cache "
                                    "import' only");
    int is_list = !strcmp(action, "list"), is_verify = !strcmp(action, "verify");
    int is_gc = !strcmp(action, "gc"), is_clear = !strcmp(action, "clear");
    int is_stats = !strcmp(action, "stats");
    if (!is_list && !is_verify && !is_gc && !is_clear && !is_stats)
        return jit__cli_usage(
            verb, "unknown action '%s' (expected list, verify, gc, clear, stats, export or import)",
            action);
    if (toolkit_dir && !is_gc)
        return jit__cli_usage(verb, "--toolkit-dir applies to 'cache gc' only");
    if (dry_run && !is_gc)
        return jit__cli_usage(verb, "--dry-run applies to 'cache gc' only");

    jit__cache_t *c = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    /* Warnings about the directory (read-only, foreign owner) are worth seeing here. */
    if (jit__cache_open(cache_dir, 0, JIT_LOG_WARN, &c, &d) != JIT_OK) {
        rc = cache_fail(action, &d);
        jit__diag_clear(&d);
        return rc;
    }
    if (!jit__cache_readable(c)) {
        jit__cli_error("cache %s: %s cannot be used (see the warning above)", action,
                       jit__cache_dir(c));
        rc = JIT_CLI_FAILED;
    } else if (((is_gc && !dry_run) || is_clear) && !jit__cache_writable(c)) {
        jit__cli_error("cache %s: %s is not writable", action, jit__cache_dir(c));
        rc = JIT_CLI_FAILED;
    } else if (is_list) {
        rc = do_list(c, json);
    } else if (is_verify) {
        rc = do_verify(c, json);
    } else if (is_stats) {
        rc = jit__cli_cache_stats(c, json);
    } else if (is_gc) {
        rc = do_gc(c, toolkit_dir, dry_run, json);
    } else {
        rc = do_clear(c, json);
    }
    jit__cache_close(c);
    return rc;
}
