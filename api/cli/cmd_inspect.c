/*
 * `jitgemm inspect`: run the pipeline for one problem up to a stage and print what that stage
 * holds (jit_inspect). Key and plan need no compiler run; --ptx and --entry compile (or read
 * the cache). The plan and the entry are JSON already and are printed as the library wrote
 * them, so scripts reading `--plan --json` see exactly the fields docs/plan.md documents.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static int write_file(const char *dir, const char *name, const char *text) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    if (!path) {
        jit__cli_error("out of memory");
        return JIT_CLI_FAILED;
    }
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok) {
        jit__cli_error("cannot write %s: %s", path, strerror(errno));
        free(path);
        return JIT_CLI_FAILED;
    }
    printf("wrote %s\n", path);
    free(path);
    return 0;
}

static int write_all(jit_context_t *ctx, const jit_problem_t *p, const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        jit__cli_error("cannot create %s: %s", dir, strerror(errno));
        return JIT_CLI_FAILED;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        jit__cli_error("%s is not a directory", dir);
        return JIT_CLI_FAILED;
    }
    for (size_t i = 0; i < N_STAGES; i++) {
        char *text = NULL;
        int rc = inspect_stage(ctx, p, k_stages[i].what, &text);
        if (!rc)
            rc = write_file(dir, k_stages[i].file, text);
        jit_free(text);
        if (rc)
            return rc;
    }
    return 0;
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
