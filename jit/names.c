/* Status text, the words the shape list and the CLI use, and the *_init defaults. */
#include <string.h>

#include "jitgemm.h"

const char *jit_status_string(jit_status_t status) {
    switch (status) {
#define JIT_STATUS_TEXT_(name, value, text)                                                        \
    case JIT_##name:                                                                               \
        return text;
        JIT_STATUS_MAP(JIT_STATUS_TEXT_)
#undef JIT_STATUS_TEXT_
    }
    return "unknown status";
}

const char *jit_status_name(jit_status_t status) {
    switch (status) {
#define JIT_STATUS_NAME_(name, value, text)                                                        \
    case JIT_##name:                                                                               \
        return "JIT_" #name;
        JIT_STATUS_MAP(JIT_STATUS_NAME_)
#undef JIT_STATUS_NAME_
    }
    return "JIT_UNKNOWN_STATUS";
}

typedef struct word {
    const char *name;
    int value;
} word_t;

static const word_t k_dtypes[] = {{"e4m3", JIT_DTYPE_E4M3}, {"e5m2", JIT_DTYPE_E5M2},
                                  {"e2m1", JIT_DTYPE_E2M1}, {"bf16", JIT_DTYPE_BF16},
                                  {"f32", JIT_DTYPE_F32},   {NULL, 0}};
static const word_t k_scales[] = {{"row", JIT_SCALE_ROW},
                                  {"ue8m0/32", JIT_SCALE_UE8M0_32},
                                  {"ue4m3/16", JIT_SCALE_UE4M3_16},
                                  {"ue5m3/16", JIT_SCALE_UE5M3_16},
                                  {"ue5m3/32", JIT_SCALE_UE5M3_32},
                                  {"128x128", JIT_SCALE_BLOCK_1X128_128X128},
                                  {NULL, 0}};
static const word_t k_sfa_layouts[] = {
    {"k-major", JIT_SFA_K_MAJOR}, {"m-major", JIT_SFA_M_MAJOR}, {NULL, 0}};
static const word_t k_scale_types[] = {{"default", JIT_SCALE_TYPE_DEFAULT},
                                       {"f32", JIT_SCALE_TYPE_F32},
                                       {"ue8m0", JIT_SCALE_TYPE_UE8M0},
                                       {NULL, 0}};
static const word_t k_epilogues[] = {{"linear", JIT_EPILOGUE_LINEAR},
                                     {"linear_add", JIT_EPILOGUE_LINEAR_ADD},
                                     {"linear_swiglu", JIT_EPILOGUE_LINEAR_SWIGLU},
                                     {"quantize_fp8_1x128", JIT_EPILOGUE_QUANTIZE_FP8_1X128},
                                     {NULL, 0}};
static const word_t k_layouts[] = {
    {"contiguous", JIT_GROUPS_CONTIGUOUS}, {"masked", JIT_GROUPS_MASKED}, {NULL, 0}};

static const char *name_of(const word_t *table, int value) {
    for (const word_t *w = table; w->name; w++)
        if (w->value == value)
            return w->name;
    return "none";
}

static jit_status_t parse(const word_t *table, const char *s, int *out) {
    for (const word_t *w = table; s && w->name; w++) {
        if (strcmp(w->name, s) == 0) {
            *out = w->value;
            return JIT_OK;
        }
    }
    return JIT_INVALID_ARGUMENT;
}

const char *jit_dtype_name(jit_dtype_t d) {
    return name_of(k_dtypes, d);
}
const char *jit_scale_mode_name(jit_scale_mode_t s) {
    return name_of(k_scales, s);
}
const char *jit_epilogue_name(jit_epilogue_t e) {
    return name_of(k_epilogues, e);
}
const char *jit_group_layout_name(jit_group_layout_t l) {
    return name_of(k_layouts, l);
}

const char *jit_sfa_layout_name(jit_sfa_layout_t l) {
    return name_of(k_sfa_layouts, l);
}
const char *jit_scale_type_name(jit_scale_type_t t) {
    return name_of(k_scale_types, t);
}

jit_status_t jit_dtype_parse(const char *s, jit_dtype_t *out) {
    int v;
    jit_status_t st = parse(k_dtypes, s, &v);
    if (st == JIT_OK)
        *out = (jit_dtype_t)v;
    return st;
}
jit_status_t jit_scale_mode_parse(const char *s, jit_scale_mode_t *out) {
    int v;
    jit_status_t st = parse(k_scales, s, &v);
    if (st == JIT_OK)
        *out = (jit_scale_mode_t)v;
    return st;
}
jit_status_t jit_epilogue_parse(const char *s, jit_epilogue_t *out) {
    int v;
    jit_status_t st = parse(k_epilogues, s, &v);
    if (st == JIT_OK)
        *out = (jit_epilogue_t)v;
    return st;
}

jit_status_t jit_sfa_layout_parse(const char *s, jit_sfa_layout_t *out) {
    int v;
    jit_status_t st = parse(k_sfa_layouts, s, &v);
    if (st == JIT_OK)
        *out = (jit_sfa_layout_t)v;
    return st;
}
jit_status_t jit_scale_type_parse(const char *s, jit_scale_type_t *out) {
    int v;
    jit_status_t st = parse(k_scale_types, s, &v);
    if (st == JIT_OK)
        *out = (jit_scale_type_t)v;
    return st;
}
jit_status_t jit_group_layout_parse(const char *s, jit_group_layout_t *out) {
    int v;
    jit_status_t st = parse(k_layouts, s, &v);
    if (st == JIT_OK)
        *out = (jit_group_layout_t)v;
    return st;
}

/* The macros of the same names in jitgemm.h pass the caller's sizeof; these definitions are the
 * exported symbols for callers that cannot (bindings calling by name). */
#undef jit_problem_init
#undef jit_operands_init
#undef jit_context_options_init
#undef jit_stats_init

/* Copy the defaults in `full` into the first `size` bytes of the caller's struct, and record
 * that size: a caller built against an older header has a shorter struct. */
static void init_prefix(void *dst, void *full, size_t full_size, size_t size) {
    uint32_t n = (uint32_t)(size < full_size ? size : full_size);
    memcpy(full, &n, sizeof(n)); /* struct_size is every struct's first field */
    memcpy(dst, full, n);
}

void jit_problem_init_sized(jit_problem_t *p, size_t size) {
    jit_problem_t d;
    memset(&d, 0, sizeof(d));
    d.a_dtype = JIT_DTYPE_E4M3;
    d.b_dtype = JIT_DTYPE_E4M3;
    d.out_dtype = JIT_DTYPE_BF16;
    d.scale_mode = JIT_SCALE_ROW;
    d.epilogue = JIT_EPILOGUE_LINEAR;
    d.alpha = 1.0f;
    init_prefix(p, &d, sizeof(d), size);
}

void jit_problem_init(jit_problem_t *p) {
    jit_problem_init_sized(p, sizeof(*p));
}

void jit_operands_init_sized(jit_operands_t *o, size_t size) {
    jit_operands_t d;
    memset(&d, 0, sizeof(d));
    init_prefix(o, &d, sizeof(d), size);
}

void jit_operands_init(jit_operands_t *o) {
    jit_operands_init_sized(o, sizeof(*o));
}

void jit_context_options_init_sized(jit_context_options_t *opt, size_t size) {
    jit_context_options_t d;
    memset(&d, 0, sizeof(d));
    d.log_level = JIT_LOG_WARN;
    d.compile_mode = JIT_COMPILE_ALWAYS;
    init_prefix(opt, &d, sizeof(d), size);
}

void jit_context_options_init(jit_context_options_t *opt) {
    jit_context_options_init_sized(opt, sizeof(*opt));
}

void jit_stats_init_sized(jit_stats_t *stats, size_t size) {
    jit_stats_t d;
    memset(&d, 0, sizeof(d));
    init_prefix(stats, &d, sizeof(d), size);
}

void jit_stats_init(jit_stats_t *stats) {
    jit_stats_init_sized(stats, sizeof(*stats));
}
