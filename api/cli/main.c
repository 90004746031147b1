/*
 * `jitgemm`: verb dispatch, global --help and --version, and `help VERB`. Each verb lives in
 * its own cmd_*.c and owns its options and help text; this file only routes to them, so adding
 * a verb is one table row.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "compile_mode.h"
#include "device_files.h"
#include "key.h"
#include "log_level.h"
#include "plan.h"
#include "toolchain.h"

typedef struct verb {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
    const char *summary;
} verb_t;

static const verb_t k_verbs[] = {
    {"prewarm", jit__cli_prewarm, jit__cli_prewarm_help,
     "compile every kernel a shape list needs into the cache, for one or more\n"
     "            --target ARCH:SMS (ARCH:all: every SM count of the arch's parts);\n"
     "            --check lists what the cache lacks, compiling nothing"},
    {"inspect", jit__cli_inspect, jit__cli_inspect_help,
     "show the key, plan, source, PTX, SASS (--sass), cubin (--cubin --out DIR)\n"
     "            or cache entry of one problem"},
    {"rebuild", jit__cli_rebuild, jit__cli_rebuild_help,
     "compile a kernel directory 'inspect --out DIR' wrote (after any edit) into\n"
     "            DIR/kernel.cubin, as the library compiles"},
    {"cache", jit__cli_cache, jit__cli_cache_help,
     "list, verify, gc, clear, sum up (stats), export or import the kernel cache"},
    {"run", jit__cli_run, jit__cli_run_help,
     "run one GEMM on the GPU, check it against the host reference, time it"},
};
#define N_VERBS (sizeof(k_verbs) / sizeof(k_verbs[0]))

static void print_usage(FILE *f) {
    fprintf(f, "Usage: jitgemm VERB [OPTIONS]\n"
               "       jitgemm help VERB | --help | --version\n\n"
               "A JIT kernel service for block-scaled GEMM on NVIDIA GPUs.\n\nVerbs:\n");
    for (size_t i = 0; i < N_VERBS; i++)
        fprintf(f, "  %-9s %s\n", k_verbs[i].name, k_verbs[i].summary);
    fprintf(f, "\nEvery verb takes --help, and all but rebuild (which uses no cache) take\n"
               "--cache-dir DIR. Environment:\n"
               "  JITGEMM_CACHE_DIR        cache directory (default $XDG_CACHE_HOME/jitgemm,\n"
               "                           else ~/.cache/jitgemm); DIR:LAYER:... adds read-only\n"
               "                           layers searched after it\n"
               "  JITGEMM_CACHE_MAX_BYTES  cache size cap (default 4 GiB)\n"
               "  JITGEMM_TOOLKIT_DIR      directory holding the NVRTC and nvJitLink to use\n"
               "  JITGEMM_LOG              " JIT__LOG_LEVEL_NAMES "; default warn\n"
               "  JITGEMM_COMPILE          always (default) or never: with never, a kernel not\n"
               "                           in the cache fails (JIT_NOT_IN_CACHE) instead of\n"
               "                           compiling\n"
               "The README lists every JITGEMM_* variable.\n\n"
               "Exit status: 0 success, 1 the work failed, 2 bad command line, JITGEMM_LOG or\n"
               "JITGEMM_COMPILE.\n");
}

static int print_version(void) {
    printf("jitgemm %s (key format %d, device code %.16s)\n", jit_version(), JIT_KEY_FORMAT_VERSION,
           jit__device_files_hash());
    /* The toolchain that compiles what the cache lacks; entries record the one that built them. */
    const jit__toolchain_t *tc = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(NULL, &tc, &d) == JIT_OK) {
        printf("toolchain: NVRTC %d.%d, nvJitLink %d.%d (%s)\n", tc->id.nvrtc_major,
               tc->id.nvrtc_minor, tc->id.nvjitlink_major, tc->id.nvjitlink_minor,
               tc->dir[0] ? tc->dir : "loader default path");
    } else {
        printf("toolchain: not found (%s)\n", d.msg);
    }
    jit__diag_clear(&d);
    return JIT_CLI_OK;
}

static const verb_t *find_verb(const char *name) {
    for (size_t i = 0; i < N_VERBS; i++)
        if (!strcmp(k_verbs[i].name, name))
            return &k_verbs[i];
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return JIT_CLI_USAGE;
    }
    const char *word = argv[1];
    if (!strcmp(word, "--help") || !strcmp(word, "-h")) {
        print_usage(stdout);
        return JIT_CLI_OK;
    }
    if (!strcmp(word, "--version") || !strcmp(word, "version"))
        return print_version();
    if (!strcmp(word, "help")) {
        if (argc == 2) {
            print_usage(stdout);
            return JIT_CLI_OK;
        }
        if (argc > 3)
            return jit__cli_usage("help", "expected one verb, got %d words", argc - 2);
        const verb_t *v = find_verb(argv[2]);
        if (!v)
            return jit__cli_usage(
                NULL, "unknown verb '%s' (verbs: prewarm, inspect, rebuild, cache, run)", argv[2]);
        fputs(v->help, stdout);
        return JIT_CLI_OK;
    }
    const verb_t *v = find_verb(word);
    if (!v) {
        if (word[0] == '-')
            return jit__cli_usage(NULL, "unknown option '%s'", word);
        return jit__cli_usage(
            NULL, "unknown verb '%s' (verbs: prewarm, inspect, rebuild, cache, run)", word);
    }
    if (jit__cli_wants_help(argc - 2, argv + 2)) {
        fputs(v->help, stdout);
        return JIT_CLI_OK;
    }
    /* Checked for every verb, not only those that create a context, so a mistyped level or mode
     * never passes silently. */
    jit_log_level_t level;
    jit_compile_mode_t mode;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__log_level_from_env(JIT_LOG_WARN, &level, &d) != JIT_OK ||
        jit__compile_mode_from_env(JIT_COMPILE_ALWAYS, &mode, &d) != JIT_OK) {
        jit__cli_error("%s", d.msg);
        jit__diag_clear(&d);
        return JIT_CLI_USAGE;
    }
    return v->run(argc - 2, argv + 2);
}
