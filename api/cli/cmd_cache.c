/*
 * `jitgemm cache list|verify|gc|clear`: the on-disk cache seen from outside a context (export
 * and import are in cmd_cache_archive.c, stats in cmd_cache_stats.c). These work on the
 * directory alone (cache/cache.h), so they run on machines with no GPU and no compiler. gc
 * included: it keeps every valid entry, whichever NVRTC or jitgemm version built it, unless
 * --drop-toolchain or --drop-other-versions names what to drop, so it never needs to find out
 * which toolchain is "current" (a host that finds another NVRTC, or none, must not empty a
 * cache other hosts are served from).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "cli.h"
#include "device_files.h"
#include "plan.h"

const char jit__cli_cache_help[] =
    "Usage: jitgemm cache list   [--cache-dir D] [--json]\n"
    "       jitgemm cache verify [--cache-dir D] [--json]\n"
    "       jitgemm cache gc     [--cache-dir D] [--drop-toolchain X.Y ...]\n"
    "                            [--drop-other-versions] [--dry-run] [--json]\n"
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
    "  gc      remove damaged or untrusted entries, orphaned and stray files, stale\n"
    "          temporaries and idle lock files, and rewrite the manifest; then, if the cache\n"
    "          is over its size cap ($JITGEMM_CACHE_MAX_BYTES, default 4 GiB), evict the least\n"
    "          recently used entries down to it. Every other entry is kept, whichever NVRTC\n"
    "          or jitgemm version built it: hosts with another NVRTC, or still running another\n"
    "          jitgemm version, are served from it. Needs no NVRTC. With --dry-run it prints\n"
    "          what it would remove and why, and changes nothing (works read-only too).\n"
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
    "          the cache; a damaged or truncated archive is refused and nothing is imported\n"
    "          (nor the cache directory created). --shared then makes the cache readable by\n"
    "          every user (directories 0755, files 0644), for a read-only layer other users\n"
    "          list after their own cache\n"
    "\n"
    "Options:\n"
    "  --cache-dir D   cache directory (default $JITGEMM_CACHE_DIR, $XDG_CACHE_HOME/jitgemm,\n"
    "                  ~/.cache/jitgemm). A colon-separated list adds read-only layers after\n"
    "                  the first directory; every action works on the first one only\n"
    "  --arch A        export only: the entries of arch A\n"
    "  --shared        import only: leave the cache readable by every user\n"
    "  --drop-toolchain X.Y\n"
    "                  gc only: also remove the entries built by NVRTC X.Y (as 'cache stats'\n"
    "                  lists them); may be given up to 16 times\n"
    "  --drop-other-versions\n"
    "                  gc only: also remove the entries of another jitgemm version (another\n"
    "                  key format, or built from other device code), which this library never\n"
    "                  serves; only once no host runs that version any more\n"
    "  --dry-run       gc only: report, remove nothing\n"
    "  --json          list: one manifest entry (JSON object) per line; verify: one\n"
    "                  {\"hash\",\"problem\"} per line; gc: {\"removed\": N, \"evicted\": E};\n"
    "                  clear: {\"removed\": N}; gc --dry-run: {\"name\",\"reason\"} per line,\n"
    "                  then {\"would_remove\": N, \"would_evict\": E}; stats: one object\n"
    "                  (fields: docs/cli.md)\n"
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

#define MAX_DROP_TOOLCHAINS 16

/* "X.Y": an NVRTC version as entries record it (major 1..99, minor 0..99). */
static int parse_nvrtc(const char *text, jit__cache_nvrtc_t *out) {
    int major = 0, minor = 0, used = 0;
    if (strspn(text, "0123456789.") != strlen(text) ||
        sscanf(text, "%2d.%2d%n", &major, &minor, &used) != 2 || text[used] != '\0' || major < 1 ||
        minor < 0)
        return jit__cli_usage("cache",
                              "--drop-toolchain: expected an NVRTC version MAJOR.MINOR "
                              "(such as 13.0), got '%s'",
                              text);
    out->major = major;
    out->minor = minor;
    return 0;
}

static void print_gc(int json, const jit__cache_t *c, const jit__cache_gc_counts_t *n) {
    if (json) {
        printf("{\"removed\": %zu, \"evicted\": %zu}\n", n->removed, n->evicted);
        return;
    }
    printf("gc: removed %zu %s from %s", n->removed, n->removed == 1 ? "entry" : "entries",
           jit__cache_dir(c));
    if (n->evicted) {
        char cap[32];
        jit__cli_format_bytes((uint64_t)jit__cache_max_bytes(c), cap, sizeof(cap));
        printf(" (%zu of them least recently used, to bring it within its %s size cap)", n->evicted,
               cap);
    }
    printf("\n");
}

static int do_gc(jit__cache_t *c, const jit__cache_gc_rules_t *rules, int dry_run, int json) {
    jit__diag_t d;
    jit__diag_init(&d);
    jit__cache_gc_counts_t n;
    int rc = JIT_CLI_OK;
    if (dry_run) {
        if (jit__cache_gc_dry_run(c, rules, on_would_remove, &json, &n, &d) != JIT_OK)
            rc = cache_fail("gc", &d);
        else if (json)
            printf("{\"would_remove\": %zu, \"would_evict\": %zu}\n", n.removed, n.evicted);
        else
            printf("gc --dry-run: would remove %zu %s from %s; nothing was removed\n", n.removed,
                   n.removed == 1 ? "item" : "items", jit__cache_dir(c));
    } else if (jit__cache_gc(c, rules, &n, &d) != JIT_OK) {
        rc = cache_fail("gc", &d);
    } else {
        print_gc(json, c, &n);
    }
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

/* The gc rules the command line asks for, into *rules (drop has room for MAX_DROP_TOOLCHAINS).
 * 0, or JIT_CLI_USAGE after the message. */
static int gc_rules(const jit__cli_multi_t *drops, int drop_versions, jit__cache_nvrtc_t *drop,
                    jit__cache_gc_rules_t *rules) {
    memset(rules, 0, sizeof(*rules));
    for (size_t i = 0; i < drops->count; i++) {
        int rc = parse_nvrtc(drops->items[i], &drop[i]);
        if (rc)
            return rc;
    }
    rules->drop_nvrtc = drop;
    rules->n_drop_nvrtc = drops->count;
    if (drop_versions) {
        rules->only_key_format = JIT_KEY_FORMAT_VERSION;
        rules->only_device_hash = jit__device_files_hash();
    }
    return 0;
}

int jit__cli_cache(int argc, char **argv) {
    const char *verb = "cache";
    const char *cache_dir = NULL, *toolkit_dir = NULL, *arch = NULL;
    int json = 0, dry_run = 0, shared = 0, drop_versions = 0;
    const char *drop_texts[MAX_DROP_TOOLCHAINS];
    jit__cli_multi_t drops = {"drop-toolchain", "X.Y", drop_texts, 0, MAX_DROP_TOOLCHAINS};
    const jit__cli_opt_t opts[] = {
        {"cache-dir", "D", &cache_dir, NULL},
        {"toolkit-dir", "T", &toolkit_dir, NULL},
        {"dry-run", NULL, NULL, &dry_run},
        {"json", NULL, NULL, &json},
        {"arch", "A", &arch, NULL},
        {"shared", NULL, NULL, &shared},
        {"drop-other-versions", NULL, NULL, &drop_versions},
    };
    const char *pos[2];
    size_t n_pos = 0;
    int rc = jit__cli_parse_multi(verb, argc, argv, opts, sizeof(opts) / sizeof(opts[0]), &drops, 1,
                                  pos, 2, &n_pos);
    if (rc)
        return rc;
    if (n_pos == 0)
        return jit__cli_usage(verb,
                              "missing action: list, verify, gc, clear, stats, export or import");
    const char *action = pos[0];
    int gc_options = dry_run || drop_versions || drops.count > 0;
    /* No cache action uses a toolchain. A toolkit directory given to gc most likely means "keep
     * only the entries it builds", which gc does only when told what to drop: say so, rather
     * than run a gc that does something else than asked. */
    if (toolkit_dir)
        return jit__cli_usage(verb, "--toolkit-dir: no cache action uses a toolchain; 'cache gc' "
                                    "keeps the entries of every NVRTC unless --drop-toolchain "
                                    "X.Y names one to remove");
    if (!strcmp(action, "export") || !strcmp(action, "import")) {
        if (gc_options)
            return jit__cli_usage(verb, "--dry-run, --drop-toolchain and --drop-other-versions "
                                        "apply to 'cache gc' only");
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
    if (dry_run && !is_gc)
        return jit__cli_usage(verb, "--dry-run applies to 'cache gc' only");
    if (gc_options && !is_gc)
        return jit__cli_usage(verb, "--drop-toolchain and --drop-other-versions apply to 'cache "
                                    "gc' only");
    jit__cache_nvrtc_t drop[MAX_DROP_TOOLCHAINS];
    jit__cache_gc_rules_t rules;
    if ((rc = gc_rules(&drops, drop_versions, drop, &rules)) != 0)
        return rc;

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
        rc = do_gc(c, &rules, dry_run, json);
    } else {
        rc = do_clear(c, json);
    }
    jit__cache_close(c);
    return rc;
}
