/*
 * `jitgemm inspect`: run the pipeline for one problem up to a stage and print what that stage
 * holds (jit_inspect). Key and plan need no compiler run; --ptx and --entry compile (or read
 * the cache). The plan and the entry are JSON already and are printed as the library wrote
 * them, so scripts reading `--plan --json` see exactly the fields docs/plan.md documents.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

const char jit__cli_inspect_help[] =
    "Usage: jitgemm inspect --op OP --n N --k K --tokens T [--a A] [--b B] [--scales S]\n"
    "                       [--out-dtype D] [--arch A] [--sm-count N] [--cache-dir D]\n"
    "                       [--key | --plan | --source | --ptx | --entry] [--json] [--out DIR]\n"
    "\n"
    "Show what the pipeline holds for one problem. Default: the key (canonical text and hash)\n"
    "and the plan. Needs no GPU; --ptx and --entry compile the kernel if it is not cached.\n"
    "\n"
    "Problem:\n"
    "  --op OP         linear, linear_add or linear_swiglu\n"
    "  --n N --k K     B rows (output channels; gate/up pairs for linear_swiglu) and depth\n"
    "  --tokens T      M, the token count (it selects the token band)\n"
    "  --a A, --b B    operand formats: e4m3 (default), e5m2, e2m1\n"
    "  --scales S      row (default), ue8m0/32, ue4m3/16, ue5m3/16, ue5m3/32\n"
    "  --out-dtype D   bf16 (default) or f32\n"
    "Target:\n"
    "  --arch A        sm_90a, sm_100a, sm_103a, sm_107a, sm_120a (default: the current GPU)\n"
    "  --sm-count N    SM count to plan for\n"
    "  --cache-dir D   cache directory (default $JITGEMM_CACHE_DIR, ...)\n"
    "Stage (at most one):\n"
    "  --key           canonical key text and hash\n"
    "  --plan          the plan, as JSON (fields: docs/plan.md)\n"
    "  --source        the generated CUDA C\n"
    "  --ptx           the PTX NVRTC produced\n"
    "  --entry         the cache manifest entry, as JSON (target, fallback, registers, ...)\n"
    "Output:\n"
    "  --json          machine-readable: --plan and --entry print their JSON unchanged; --key\n"
    "                  prints {\"hash\",\"text\",\"target\",\"fallback\",\"note\"};\n"
    "                  --source/--ptx print {\"source\"}/{\"ptx\"};\n"
    "                  the default prints {\"key\": {...}, \"plan\": {...}}\n"
    "  --out DIR       write key.txt, plan.json, kernel.cu, kernel.ptx and entry.json to DIR\n"
    "                  (created if missing; refused if another user owns it or can write to it)\n"
    "\n"
    "Exit status: 0 success, 1 the pipeline failed, 2 bad command line.\n";

typedef struct stage {
    const char *flag;
    jit_inspect_what_t what;
    const char *file; /* name under --out */
} stage_t;

static const stage_t k_stages[] = {
    {"key", JIT_INSPECT_KEY, "key.txt"},         {"plan", JIT_INSPECT_PLAN, "plan.json"},
    {"source", JIT_INSPECT_SOURCE, "kernel.cu"}, {"ptx", JIT_INSPECT_PTX, "kernel.ptx"},
    {"entry", JIT_INSPECT_ENTRY, "entry.json"},
};
#define N_STAGES (sizeof(k_stages) / sizeof(k_stages[0]))

/* The key stage's text is "label value" lines (hash, key, target); as JSON the labels become
 * fields, "key" is called "text" (the canonical key text), and the target line's note in
 * parentheses becomes "fallback" (true/false) and "note". */
static json_t *key_json(const char *key_out) {
    json_t *o = json_object();
    const char *line = key_out;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        size_t lab = 0;
        while (lab < len && line[lab] != ' ')
            lab++;
        size_t v = lab;
        while (v < len && line[v] == ' ')
            v++;
        if (lab > 0 && v < len) {
            char label[32];
            snprintf(label, sizeof(label), "%.*s", (int)lab, line);
            const char *val = line + v;
            size_t vlen = len - v;
            if (!strcmp(label, "key")) {
                json_object_set_new(o, "text", json_stringn(val, vlen));
            } else if (!strcmp(label, "target")) {
                const char *paren = memchr(val, '(', vlen);
                size_t tlen = paren ? (size_t)(paren - val) : vlen;
                while (tlen && val[tlen - 1] == ' ')
                    tlen--;
                json_object_set_new(o, "target", json_stringn(val, tlen));
                if (paren) {
                    size_t nlen = vlen - (size_t)(paren - val);
                    json_object_set_new(o, "fallback",
                                        json_boolean(!strncmp(paren, "(fallback", 9)));
                    if (nlen >= 2 && paren[nlen - 1] == ')')
                        json_object_set_new(o, "note", json_stringn(paren + 1, nlen - 2));
                }
            } else {
                json_object_set_new(o, label, json_stringn(val, vlen));
            }
        }
        line = end ? end + 1 : line + len;
    }
    return o;
}

static int inspect_stage(jit_context_t *ctx, const jit_problem_t *p, jit_inspect_what_t what,
                         char **out) {
    jit_status_t st = jit_inspect(ctx, p, what, out);
    if (st != JIT_OK) {
        const char *msg = jit_last_error(ctx);
        jit__cli_error("%s", msg && *msg ? msg : jit_status_string(st));
        return JIT_CLI_FAILED;
    }
    return 0;
}

static void print_text(const char *s) {
    fputs(s, stdout);
    if (*s && s[strlen(s) - 1] != '\n')
        fputc('\n', stdout);
}

/* JSON text printed pretty (text mode) or as is; invalid JSON is printed as is too. */
static void print_json_text(const char *s, int pretty) {
    json_t *j = pretty ? json_loads(s, 0, NULL) : NULL;
    char *p = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    print_text(p ? p : s);
    free(p);
    json_decref(j);
}

static void print_json_value(json_t *o) {
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text)
        print_text(text);
    free(text);
}

/* Write `text` to DIR/name through a fresh temporary: O_EXCL|O_NOFOLLOW cannot open anything
 * already there (a planted link or file), and renameat replaces a link at `name` itself, never
 * the file it points at. */
static int write_file(int dfd, const char *dir, const char *name, const char *text) {
    char tmp[128];
    snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, (long)getpid());
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int err = fd < 0 ? errno : 0;
    size_t len = strlen(text), off = 0;
    while (!err && off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno != EINTR)
            err = errno;
        else if (w > 0)
            off += (size_t)w;
    }
    if (fd >= 0 && close(fd) != 0 && !err)
        err = errno;
    if (!err && renameat(dfd, tmp, dfd, name) != 0)
        err = errno;
    if (err) {
        if (fd >= 0)
            unlinkat(dfd, tmp, 0);
        jit__cli_error("cannot write %s/%s: %s", dir, name, strerror(err));
        return JIT_CLI_FAILED;
    }
    printf("wrote %s/%s\n", dir, name);
    return 0;
}

/* The files are written as the invoking user (often root) into a directory the user named;
 * if another user can write there, they can swap names under us between any check and any
 * write, so such a directory is refused outright. */
static int open_out_dir(const char *dir, int *dfd) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        jit__cli_error("cannot create %s: %s", dir, strerror(errno));
        return JIT_CLI_FAILED;
    }
    *dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*dfd < 0) {
        jit__cli_error(errno == ENOTDIR ? "%s is not a directory" : "cannot open %s: %s", dir,
                       strerror(errno));
        return JIT_CLI_FAILED;
    }
    struct stat st;
    const char *why = NULL;
    char reason[96];
    if (fstat(*dfd, &st) != 0) {
        snprintf(reason, sizeof(reason), "cannot stat it: %s", strerror(errno));
        why = reason;
    } else if (st.st_uid != geteuid()) {
        snprintf(reason, sizeof(reason), "it is owned by another user (uid %u)",
                 (unsigned)st.st_uid);
        why = reason;
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(reason, sizeof(reason), "another user can write to it (mode %04o)",
                 (unsigned)(st.st_mode & 07777));
        why = reason;
    }
    if (why) {
        jit__cli_error("--out %s: refused: %s; use a directory only you can write", dir, why);
        close(*dfd);
        *dfd = -1;
        return JIT_CLI_FAILED;
    }
    return 0;
}

static int write_all(jit_context_t *ctx, const jit_problem_t *p, const char *dir) {
    int dfd = -1;
    int rc = open_out_dir(dir, &dfd);
    for (size_t i = 0; !rc && i < N_STAGES; i++) {
        char *text = NULL;
        rc = inspect_stage(ctx, p, k_stages[i].what, &text);
        if (!rc)
            rc = write_file(dfd, dir, k_stages[i].file, text);
        jit_free(text);
    }
    if (dfd >= 0)
        close(dfd);
    return rc;
}

static int print_default(jit_context_t *ctx, const jit_problem_t *p, int json) {
    char *key = NULL, *plan = NULL;
    int rc = inspect_stage(ctx, p, JIT_INSPECT_KEY, &key);
    if (!rc)
        rc = inspect_stage(ctx, p, JIT_INSPECT_PLAN, &plan);
    if (!rc && json) {
        json_t *o = json_object();
        json_object_set_new(o, "key", key_json(key));
        json_t *pj = json_loads(plan, 0, NULL);
        json_object_set_new(o, "plan", pj ? pj : json_string(plan));
        print_json_value(o);
        json_decref(o);
    } else if (!rc) {
        print_text(key);
        fputs("\n", stdout);
        print_json_text(plan, 1);
    }
    jit_free(key);
    jit_free(plan);
    return rc;
}

static int print_stage(jit_context_t *ctx, const jit_problem_t *p, const stage_t *s, int json) {
    char *text = NULL;
    int rc = inspect_stage(ctx, p, s->what, &text);
    if (rc)
        return rc;
    if (s->what == JIT_INSPECT_PLAN || s->what == JIT_INSPECT_ENTRY) {
        print_json_text(text, !json);
    } else if (json) {
        json_t *o = s->what == JIT_INSPECT_KEY ? key_json(text) : json_object();
        if (s->what != JIT_INSPECT_KEY)
            json_object_set_new(o, s->flag, json_string(text));
        print_json_value(o);
        json_decref(o);
    } else {
        print_text(text);
    }
    jit_free(text);
    return 0;
}

int jit__cli_inspect(int argc, char **argv) {
    const char *verb = "inspect";
    jit__cli_problem_args_t pa = {0};
    const char *arch = NULL, *sm_text = NULL, *cache_dir = NULL, *out_dir = NULL;
    int json = 0, flags[N_STAGES] = {0};
    const jit__cli_opt_t opts[] = {
        {"op", "OP", &pa.op, NULL},
        {"n", "N", &pa.n, NULL},
        {"k", "K", &pa.k, NULL},
        {"tokens", "T", &pa.tokens, NULL},
        {"a", "A", &pa.a, NULL},
        {"b", "B", &pa.b, NULL},
        {"scales", "S", &pa.scales, NULL},
        {"out-dtype", "D", &pa.out_dtype, NULL},
        {"arch", "A", &arch, NULL},
        {"sm-count", "N", &sm_text, NULL},
        {"cache-dir", "D", &cache_dir, NULL},
        {"out", "DIR", &out_dir, NULL},
        {"json", NULL, NULL, &json},
        {"key", NULL, NULL, &flags[0]},
        {"plan", NULL, NULL, &flags[1]},
        {"source", NULL, NULL, &flags[2]},
        {"ptx", NULL, NULL, &flags[3]},
        {"entry", NULL, NULL, &flags[4]},
    };
    size_t n_pos = 0;
    int rc =
        jit__cli_parse(verb, argc, argv, opts, sizeof(opts) / sizeof(opts[0]), NULL, 0, &n_pos);
    if (rc)
        return rc;
    jit_problem_t p;
    int64_t sm_count = 0;
    if ((rc = jit__cli_problem(verb, &pa, &p)) || (rc = jit__cli_arch(verb, arch)) ||
        (rc = jit__cli_int(verb, "sm-count", sm_text, 1, 1000000, &sm_count)))
        return rc;
    const stage_t *stage = NULL;
    for (size_t i = 0; i < N_STAGES; i++) {
        if (!flags[i])
            continue;
        if (stage)
            return jit__cli_usage(verb, "--%s and --%s: choose one stage", stage->flag,
                                  k_stages[i].flag);
        stage = &k_stages[i];
    }
    if (out_dir && (stage || json))
        return jit__cli_usage(verb, "--out writes every stage; it does not combine with --%s",
                              stage ? stage->flag : "json");

    jit_context_t *ctx = NULL;
    if ((rc = jit__cli_context(cache_dir, arch, (int)sm_count, &ctx)))
        return rc;
    if (out_dir)
        rc = write_all(ctx, &p, out_dir);
    else if (stage)
        rc = print_stage(ctx, &p, stage, json);
    else
        rc = print_default(ctx, &p, json);
    jit_context_destroy(ctx);
    return rc;
}
