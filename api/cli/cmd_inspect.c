/*
 * `jitgemm inspect`: run the pipeline for one problem up to a stage and print what that stage
 * holds (jit_inspect). Key and plan need no compiler run; --ptx and --entry compile (or read
 * the cache). The plan and the entry are JSON already and are printed as the library wrote
 * them, so scripts reading `--plan --json` see exactly the fields docs/plan.md documents.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kernel_dir.h"
#include "toolchain.h"

const char jit__cli_inspect_help[] =
    "Usage: jitgemm inspect --op OP --n N --k K --tokens T [--a A] [--b B] [--scales S]\n"
    "                       [--out-dtype D] [--groups G [--layout L] [--expected-m E]]\n"
    "                       [--arch A] [--sm-count N] [--cache-dir D]\n"
    "                       [--key | --plan | --source [--full] | --ptx | --entry | --sass |\n"
    "                        --cubin] [--json] [--out DIR]\n"
    "\n"
    "Show what the pipeline holds for one problem. Default: the key (canonical text and hash)\n"
    "and the plan. Needs no GPU; --ptx, --entry, --sass and --cubin compile the kernel if it\n"
    "is not cached (with JITGEMM_COMPILE=never they fail instead).\n"
    "\n"
    "Problem:\n"
    "  --op OP         linear, linear_add or linear_swiglu; or quantize_fp8_1x128, the BF16 ->\n"
    "                  E4M3 activation quantizer (FP32 scale per 1x128 group), which takes\n"
    "                  --k and --tokens only\n"
    "  --n N --k K     B rows (output channels; gate/up pairs for linear_swiglu) and depth\n"
    "  --tokens T      M, the token count (it selects the token band)\n"
    "  --a A, --b B    operand formats: e4m3 (default), e5m2, e2m1\n"
    "  --scales S      row (default), ue8m0/32, ue4m3/16, ue5m3/16, ue5m3/32, 128x128\n"
    "  --out-dtype D   bf16 (default) or f32\n"
    "Grouped (mixture-of-experts) problem, one call for every expert:\n"
    "  --groups G      G experts (1..1024): B is [G, N, K]; --tokens is then the rows of A\n"
    "  --layout L      contiguous (default; A [T, K], device offsets[G+1]) or masked\n"
    "                  (A [G, T/G, K], device counts[G])\n"
    "  --expected-m E  rows an expert is expected to have (default T/G): the token band\n"
    "Target:\n"
    "  --arch A        sm_90a, sm_100a, sm_103a, sm_107a, sm_120a (default: the current GPU)\n"
    "  --sm-count N    SM count to plan for\n"
    "  --cache-dir D   cache directory (default $JITGEMM_CACHE_DIR, ...)\n"
    "Stage (at most one):\n"
    "  --key           canonical key text and hash\n"
    "  --plan          the plan, as JSON (fields: docs/plan.md)\n"
    "  --source        the generated CUDA C; it #includes device headers embedded in the\n"
    "                  library. --full: those headers inlined, each once, between marker\n"
    "                  comments: the whole unit NVRTC compiles, as one text\n"
    "  --ptx           the PTX NVRTC produced\n"
    "  --entry         the cache manifest entry, as JSON (target, fallback, registers, ...)\n"
    "  --sass          the SASS of the cubin, from nvdisasm: the one scripts/setup.sh puts in\n"
    "                  .deps/cuda-<v>/bin (found beside the program as the toolkit is), else\n"
    "                  bin/nvdisasm of $JITGEMM_TOOLKIT_DIR, $CUDA_HOME, $CUDA_PATH or\n"
    "                  /usr/local/cuda, else the one on PATH\n"
    "  --cubin         the cubin itself; binary, so it needs --out DIR (writes kernel.cubin)\n"
    "Output:\n"
    "  --json          machine-readable: --plan and --entry print their JSON unchanged; --key\n"
    "                  prints {\"hash\",\"text\",\"target\",\"fallback\",\"note\"};\n"
    "                  --source/--ptx/--sass print {\"source\"}/{\"ptx\"}/{\"sass\"};\n"
    "                  the default prints {\"key\": {...}, \"plan\": {...}}\n"
    "  --out DIR       write key.txt, plan.json, kernel.cu, kernel.ptx and entry.json to DIR,\n"
    "                  and with kernel.cu every device header it includes (at the path its\n"
    "                  #include names) and build-options.txt (target, toolchain, the exact\n"
    "                  NVRTC and nvJitLink options): 'jitgemm rebuild DIR' compiles it again.\n"
    "                  With a stage, only that stage's files (kernel.sass, kernel.cubin, ...).\n"
    "                  DIR and its folders are created if missing and refused if one is a\n"
    "                  symbolic link or another user owns it or can write to it; a file is\n"
    "                  never written through a link planted there\n"
    "\n"
    "Exit status: 0 success, 1 the pipeline failed, 2 bad command line.\n";

/* The text stages come from jit_inspect; the cubin from jit_inspect_cubin, and the SASS from
 * nvdisasm run on it. --out alone writes the text stages. */
typedef enum stage_kind { STAGE_TEXT, STAGE_CUBIN, STAGE_SASS } stage_kind_t;

typedef struct stage {
    const char *flag;
    jit_inspect_what_t what; /* text stages */
    const char *file;        /* name under --out */
    stage_kind_t kind;
} stage_t;

static const stage_t k_stages[] = {
    {"key", JIT_INSPECT_KEY, "key.txt", STAGE_TEXT},
    {"plan", JIT_INSPECT_PLAN, "plan.json", STAGE_TEXT},
    {"source", JIT_INSPECT_SOURCE, "kernel.cu", STAGE_TEXT},
    {"ptx", JIT_INSPECT_PTX, "kernel.ptx", STAGE_TEXT},
    {"entry", JIT_INSPECT_ENTRY, "entry.json", STAGE_TEXT},
    {"sass", (jit_inspect_what_t)0, "kernel.sass", STAGE_SASS},
    {"cubin", (jit_inspect_what_t)0, "kernel.cubin", STAGE_CUBIN},
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

static int nvdisasm_missing(void) {
    jit__cli_error("inspect --sass: nvdisasm not found: looked in jitgemm-toolkits/cuda-*/bin "
                   "beside the program, in bin/ of $JITGEMM_TOOLKIT_DIR, $CUDA_HOME, $CUDA_PATH "
                   "and /usr/local/cuda, and on PATH. scripts/setup.sh installs it into "
                   ".deps/cuda-<version>/bin (the nvidia-cuda-nvdisasm wheel); a CUDA toolkit "
                   "has it too. 'inspect --cubin --out DIR' writes the cubin for a disassembler "
                   "elsewhere.");
    return JIT_CLI_FAILED;
}

/* What a stage holds, as bytes (malloc'd; text is NUL-terminated, the cubin is not). */
static int stage_bytes(jit_context_t *ctx, const jit_problem_t *p, const stage_t *s,
                       const char *nvdisasm, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    if (s->kind == STAGE_TEXT) {
        int rc = inspect_stage(ctx, p, s->what, data);
        if (!rc)
            *len = strlen(*data);
        return rc;
    }
    void *cubin = NULL;
    size_t size = 0;
    jit_status_t st = jit_inspect_cubin(ctx, p, &cubin, &size);
    if (st != JIT_OK) {
        const char *msg = jit_last_error(ctx);
        jit__cli_error("%s", msg && *msg ? msg : jit_status_string(st));
        return JIT_CLI_FAILED;
    }
    if (s->kind == STAGE_CUBIN) {
        *data = cubin;
        *len = size;
        return 0;
    }
    char why[1024];
    int rc = jit__cli_disassemble(nvdisasm, cubin, size, data, why, sizeof(why));
    jit_free(cubin);
    if (rc) {
        jit__cli_error("inspect --sass: %s", why);
        return JIT_CLI_FAILED;
    }
    *len = strlen(*data);
    return 0;
}

/* The fields of build-options.txt: the target from the key stage, the entry point from the plan,
 * and the toolchain that built the cached cubin (from the entry, when --out wrote it) or else
 * the one this library compiles with here. */
static int build_options_of(jit_context_t *ctx, const jit_problem_t *p, const char *entry,
                            jit__cli_build_options_t *b, const char **note) {
    memset(b, 0, sizeof(*b));
    char *key = NULL, *plan = NULL;
    int rc = inspect_stage(ctx, p, JIT_INSPECT_KEY, &key);
    if (!rc)
        rc = inspect_stage(ctx, p, JIT_INSPECT_PLAN, &plan);
    const char *target = key ? strstr(key, "\ntarget ") : NULL;
    json_t *pj = plan ? json_loads(plan, 0, NULL) : NULL;
    const char *kernel = json_string_value(json_object_get(pj, "kernel"));
    if (!rc && (!target || sscanf(target, "\ntarget %15s", b->target) != 1 || !kernel)) {
        jit__cli_error("inspect --out: the key or the plan lacks the target or the kernel name");
        rc = JIT_CLI_FAILED;
    }
    if (!rc)
        snprintf(b->kernel, sizeof(b->kernel), "%s", kernel);
    json_t *ej = entry ? json_loads(entry, 0, NULL) : NULL;
    json_t *tj = json_object_get(ej, "toolchain");
    jit__toolchain_id_t *t = &b->toolchain;
    const char *nvrtc = json_string_value(json_object_get(tj, "nvrtc"));
    const char *nvjitlink = json_string_value(json_object_get(tj, "nvjitlink"));
    const jit__toolchain_t *tc = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (nvrtc && nvjitlink && sscanf(nvrtc, "%d.%d", &t->nvrtc_major, &t->nvrtc_minor) == 2 &&
        sscanf(nvjitlink, "%d.%d", &t->nvjitlink_major, &t->nvjitlink_minor) == 2) {
        b->has_toolchain = 1;
        *note = "built the cached cubin";
    } else if (jit__toolchain_get(NULL, &tc, &d) == JIT_OK) {
        b->has_toolchain = 1;
        *t = tc->id;
        *note = "the toolchain this library compiles with here";
    }
    jit__diag_clear(&d);
    json_decref(ej);
    json_decref(pj);
    jit_free(key);
    jit_free(plan);
    return rc;
}

/* Beside kernel.cu: every embedded header it includes, at the path its #include names, and
 * build-options.txt, so DIR holds the whole unit NVRTC compiled and how it compiled it. */
static int write_sources(jit_context_t *ctx, const jit_problem_t *p, int dfd, const char *dir,
                         const char *source, const char *entry) {
    const jit__device_file_t *headers[JIT_MAX_DEVICE_FILES];
    size_t n = 0;
    int rc = jit__cli_unit_headers(source, jit__cli_embedded_header, NULL, 0, headers,
                                   JIT_MAX_DEVICE_FILES, &n);
    for (size_t i = 0; !rc && i < n; i++)
        rc = jit__cli_out_write(dfd, dir, headers[i]->name, headers[i]->text, headers[i]->size);
    jit__cli_build_options_t b;
    const char *note = NULL;
    if (!rc)
        rc = build_options_of(ctx, p, entry, &b, &note);
    char *text = rc ? NULL : jit__cli_build_options_format(&b, note);
    if (!rc && !text) {
        jit__cli_error("inspect --out: cannot describe the build for target %s", b.target);
        rc = JIT_CLI_FAILED;
    }
    if (!rc)
        rc = jit__cli_out_write(dfd, dir, JIT__CLI_BUILD_OPTIONS, text, strlen(text));
    free(text);
    return rc;
}

/* --out: every text stage, or just `only`; with the source, its headers and build options. */
static int write_all(jit_context_t *ctx, const jit_problem_t *p, const char *dir,
                     const stage_t *only, const char *nvdisasm) {
    int dfd = -1;
    int rc = jit__cli_out_open("--out", dir, 1, &dfd);
    char *source = NULL, *entry = NULL;
    for (size_t i = 0; !rc && i < N_STAGES; i++) {
        const stage_t *s = &k_stages[i];
        if (only ? s != only : s->kind != STAGE_TEXT)
            continue;
        char *data = NULL;
        size_t len = 0;
        rc = stage_bytes(ctx, p, s, nvdisasm, &data, &len);
        if (!rc)
            rc = jit__cli_out_write(dfd, dir, s->file, data, len);
        int is_text = s->kind == STAGE_TEXT;
        if (is_text && s->what == JIT_INSPECT_SOURCE)
            source = data;
        else if (is_text && s->what == JIT_INSPECT_ENTRY)
            entry = data;
        else
            free(data);
    }
    if (!rc && source)
        rc = write_sources(ctx, p, dfd, dir, source, entry);
    free(source);
    free(entry);
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

static int print_stage(jit_context_t *ctx, const jit_problem_t *p, const stage_t *s, int json,
                       int full, const char *nvdisasm) {
    char *text = NULL;
    size_t len = 0;
    int rc = stage_bytes(ctx, p, s, nvdisasm, &text, &len);
    if (rc)
        return rc;
    if (full) {
        char *unit = jit__cli_unit_inline(text, jit__cli_embedded_header, NULL);
        free(text);
        if (!unit) {
            jit__cli_error("inspect --full: out of memory");
            return JIT_CLI_FAILED;
        }
        text = unit;
    }
    int is_key = s->kind == STAGE_TEXT && s->what == JIT_INSPECT_KEY;
    if (s->kind == STAGE_TEXT && (s->what == JIT_INSPECT_PLAN || s->what == JIT_INSPECT_ENTRY)) {
        print_json_text(text, !json);
    } else if (json) {
        json_t *o = is_key ? key_json(text) : json_object();
        if (!is_key)
            json_object_set_new(o, s->flag, json_string(text));
        print_json_value(o);
        json_decref(o);
    } else {
        print_text(text);
    }
    free(text);
    return 0;
}

int jit__cli_inspect(int argc, char **argv) {
    const char *verb = "inspect";
    jit__cli_problem_args_t pa = {0};
    const char *arch = NULL, *sm_text = NULL, *cache_dir = NULL, *out_dir = NULL;
    int json = 0, full = 0, flags[N_STAGES] = {0};
    const jit__cli_opt_t opts[] = {
        {"op", "OP", &pa.op, NULL},
        {"n", "N", &pa.n, NULL},
        {"k", "K", &pa.k, NULL},
        {"tokens", "T", &pa.tokens, NULL},
        {"a", "A", &pa.a, NULL},
        {"b", "B", &pa.b, NULL},
        {"scales", "S", &pa.scales, NULL},
        {"out-dtype", "D", &pa.out_dtype, NULL},
        {"groups", "G", &pa.groups, NULL},
        {"layout", "L", &pa.layout, NULL},
        {"expected-m", "E", &pa.expected_m, NULL},
        {"arch", "A", &arch, NULL},
        {"sm-count", "N", &sm_text, NULL},
        {"cache-dir", "D", &cache_dir, NULL},
        {"out", "DIR", &out_dir, NULL},
        {"json", NULL, NULL, &json},
        {"full", NULL, NULL, &full},
        {"key", NULL, NULL, &flags[0]},
        {"plan", NULL, NULL, &flags[1]},
        {"source", NULL, NULL, &flags[2]},
        {"ptx", NULL, NULL, &flags[3]},
        {"entry", NULL, NULL, &flags[4]},
        {"sass", NULL, NULL, &flags[5]},
        {"cubin", NULL, NULL, &flags[6]},
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
    if (out_dir && json)
        return jit__cli_usage(verb, "--out writes files; it does not combine with --json");
    if (full && (!stage || stage->kind != STAGE_TEXT || stage->what != JIT_INSPECT_SOURCE))
        return jit__cli_usage(verb,
                              "--full goes with --source (the unit with its headers inlined)");
    if (full && out_dir)
        return jit__cli_usage(verb, "--full prints; --out already writes every header beside "
                                    "kernel.cu");
    if (stage && stage->kind == STAGE_CUBIN && !out_dir)
        return jit__cli_usage(verb, "--cubin is binary: add --out DIR to write DIR/kernel.cubin");
    /* Before any compile, so a missing disassembler costs nothing. */
    char nvdisasm[4096] = "";
    if (stage && stage->kind == STAGE_SASS && !jit__cli_find_nvdisasm(nvdisasm, sizeof(nvdisasm)))
        return nvdisasm_missing();

    jit_context_t *ctx = NULL;
    if ((rc = jit__cli_context(cache_dir, arch, (int)sm_count, &ctx)))
        return rc;
    if (out_dir)
        rc = write_all(ctx, &p, out_dir, stage, nvdisasm);
    else if (stage)
        rc = print_stage(ctx, &p, stage, json, full, nvdisasm);
    else
        rc = print_default(ctx, &p, json);
    jit_context_destroy(ctx);
    return rc;
}
