/*
 * What the `jitgemm` verbs share: option parsing, number and word parsing, error printing,
 * context creation and the progress bar. Exit codes are fixed here for every verb: 0 success,
 * 1 the work failed (bad shape list, compile failure, failed check, no GPU), 2 the command line
 * itself was wrong. A hand-written option table rather than getopt_long, so that every message
 * has the "jitgemm: error: VERB: ..." form and `--opt=value` and `--opt value` both work.
 */
#ifndef JIT_CLI_H
#define JIT_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jitgemm.h"

#define JIT_CLI_OK 0
#define JIT_CLI_FAILED 1
#define JIT_CLI_USAGE 2

/* One option. A flag has no metavar and sets *flag; a value option stores its text. */
typedef struct jit__cli_opt {
    const char *name;    /* without the leading "--" */
    const char *metavar; /* NULL for a flag */
    const char **value;
    int *flag;
} jit__cli_opt_t;

/* Parse argv[0..argc) (the words after the verb). Positional words go to pos (at most
 * max_pos; more is a usage error). "--" ends the options; "-" is a positional word (stdin).
 * Returns 0, or JIT_CLI_USAGE after printing the error. */
int jit__cli_parse(const char *verb, int argc, char **argv, const jit__cli_opt_t *opts,
                   size_t n_opts, const char **pos, size_t max_pos, size_t *n_pos);

/* An option that may be given several times; its values are kept in command-line order in
 * items (room for max; one more is a usage error). */
typedef struct jit__cli_multi {
    const char *name;    /* without the leading "--" */
    const char *metavar; /* always takes a value */
    const char **items;
    size_t count, max;
} jit__cli_multi_t;

/* jit__cli_parse with repeatable options besides the ordinary ones. */
int jit__cli_parse_multi(const char *verb, int argc, char **argv, const jit__cli_opt_t *opts,
                         size_t n_opts, jit__cli_multi_t *multi, size_t n_multi, const char **pos,
                         size_t max_pos, size_t *n_pos);

/* 1 if --help or -h appears before any "--". */
int jit__cli_wants_help(int argc, char **argv);

/* "jitgemm: error: <msg>" on stderr. */
void jit__cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A usage error for `verb`: the message, then a pointer to its --help. Returns JIT_CLI_USAGE. */
int jit__cli_usage(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An integer option in [lo, hi]; NULL text leaves *out unchanged. 0 or JIT_CLI_USAGE. */
int jit__cli_int(const char *verb, const char *opt, const char *text, int64_t lo, int64_t hi,
                 int64_t *out);
/* An unsigned 64-bit value, decimal or 0x-hex (seeds). */
int jit__cli_u64(const char *verb, const char *opt, const char *text, uint64_t *out);

/* Words of the shape list, for --op, --a/--b, --scales, --out-dtype and --arch. NULL text
 * leaves *out unchanged. 0 or JIT_CLI_USAGE, with the accepted words in the message. */
int jit__cli_op(const char *verb, const char *text, jit_epilogue_t *out);
int jit__cli_operand_dtype(const char *verb, const char *opt, const char *text, jit_dtype_t *out);
int jit__cli_out_dtype(const char *verb, const char *text, jit_dtype_t *out);
int jit__cli_scales(const char *verb, const char *text, jit_scale_mode_t *out);
int jit__cli_arch(const char *verb, const char *text);

/* Create a context from the common options (any may be NULL/0). Prints the library's message
 * and returns JIT_CLI_FAILED on failure. */
int jit__cli_context(const char *cache_dir, const char *arch, int sm_count, jit_context_t **out);
/* The same, with a compile mode (JIT_COMPILE_NEVER for a command that must not compile). */
int jit__cli_context_mode(const char *cache_dir, const char *arch, int sm_count,
                          jit_compile_mode_t mode, jit_context_t **out);

/* The problem options inspect and run share: --op --n --k --tokens --a --b --scales
 * --out-dtype, and for a grouped problem --groups --layout --expected-m (--layout and
 * --expected-m need --groups; --layout defaults to contiguous). Texts in, a filled problem out;
 * 0 or JIT_CLI_USAGE. */
typedef struct jit__cli_problem_args {
    const char *op, *n, *k, *tokens, *a, *b, *scales, *out_dtype;
    const char *groups, *layout, *expected_m;
} jit__cli_problem_args_t;
int jit__cli_problem(const char *verb, const jit__cli_problem_args_t *args, jit_problem_t *p);

/* Median of v[0..n) (sorts v). 0 for n == 0. */
double jit__cli_median(double *v, size_t n);
/* Seconds on a monotonic clock. */
double jit__cli_now(void);
/* `s` for a terminal (escape.c): control bytes, invalid UTF-8 and bidirectional controls as
 * \xNN, a backslash as \\; cut at a whole piece to fit outsz. Returns out. For every name that
 * came from a file (a sidecar, an archive, a directory listing). */
const char *jit__cli_escape(const char *s, char *out, size_t outsz);
/* "12.3 MiB" style (B, KiB, MiB, GiB). */
void jit__cli_format_bytes(uint64_t bytes, char *out, size_t outsz);
/* A Unix time as local "YYYY-MM-DD HH:MM:SS"; "-" for 0 or a time that cannot be shown. */
void jit__cli_format_time(int64_t t, char *out, size_t outsz);

/* ---- progress bar (progress.c) ---- */

typedef struct jit__cli_progress {
    size_t total, done, compiled, cached, failed;
    int width; /* bar cells */
} jit__cli_progress_t;

/* "[#####     ] 12/40 compiled 9 cached 3 failed 0" into out. */
void jit__cli_progress_format(const jit__cli_progress_t *p, char *out, size_t outsz);
/* Redraw on `f` with a carriage return; `final` ends the line. */
void jit__cli_progress_draw(const jit__cli_progress_t *p, FILE *f, int final);

/* ---- SASS (sass.c) ---- */

/* The nvdisasm to run, into out: the newest <toolkits>/cuda-<v>/bin/nvdisasm beside the program
 * (where scripts/setup.sh installs it; the folders jit/toolkit_dirs.c gives), else bin/nvdisasm
 * of $JITGEMM_TOOLKIT_DIR, $CUDA_HOME, $CUDA_PATH or /usr/local/cuda, else the first on PATH.
 * 1 if found, 0 (and out "") if not. */
int jit__cli_find_nvdisasm(char *out, size_t outsz);
/* Run `nvdisasm -c` on the cubin; 0 and *sass (malloc'd), or -1 and the reason in why. */
int jit__cli_disassemble(const char *nvdisasm, const void *cubin, size_t size, char **sass,
                         char *why, size_t whysz);

/* ---- verbs ---- */

int jit__cli_prewarm(int argc, char **argv);
int jit__cli_inspect(int argc, char **argv);
int jit__cli_rebuild(int argc, char **argv);
int jit__cli_cache(int argc, char **argv);
/* `cache export FILE` / `cache import FILE` (action "export" or "import"). */
int jit__cli_cache_archive(const char *action, const char *file, const char *cache_dir,
                           const char *arch, int shared, int json);
int jit__cli_run(int argc, char **argv);
/* `run --op quantize_fp8_1x128` (cmd_run_quantize.c), once the command line is parsed. */
int jit__cli_run_quantize(const jit_problem_t *p, const char *cache_dir, const char *arch,
                          int sm_count, uint64_t seed, int iters, int json);
/* `run` of a grouped problem (cmd_run_grouped.c): random routing, checked, then timed. */
struct jit__driver;
struct jit__family;
int jit__cli_run_grouped(const struct jit__driver *drv, jit_context_t *ctx,
                         const struct jit__family *fam, const jit_problem_t *p, uint64_t seed,
                         int iters, FILE *txt);

/* `cache stats` on an open cache (cmd_cache_stats.c); 0 or JIT_CLI_FAILED. */
struct jit__cache;
int jit__cli_cache_stats(struct jit__cache *c, int json);

/* Each verb's help text, for `jitgemm help VERB` and `VERB --help`. */
extern const char jit__cli_prewarm_help[];
extern const char jit__cli_inspect_help[];
extern const char jit__cli_rebuild_help[];
extern const char jit__cli_cache_help[];
extern const char jit__cli_run_help[];

#endif
