/*
 * The shape-list parser, called directly. The parser belongs to the CLI executable rather than
 * the library, so its source is compiled into this test. Every error case checks the status and
 * that the message names the place (path or line:column), since that is the parser's job.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../api/cli/shapes.c"
#include "support.h"

static jit_status_t parse(const char *text, jit__shape_list_t *l, jit__diag_t *d) {
    jit__diag_init(d);
    return jit__shapes_parse_text(text, "t.json", l, d);
}

/* Parse `text`, expect failure with `status` and every needle in the message. */
static void expect_error(const char *text, jit_status_t status, const char *needle1,
                         const char *needle2) {
    jit__shape_list_t l;
    jit__diag_t d;
    jit_status_t st = parse(text, &l, &d);
    cr_expect_eq(st, status, "status %s for %s (message: %s)", jit_status_name(st), text, d.msg);
    cr_expect(strstr(d.msg, needle1) != NULL, "message '%s' lacks '%s'", d.msg, needle1);
    if (needle2)
        cr_expect(strstr(d.msg, needle2) != NULL, "message '%s' lacks '%s'", d.msg, needle2);
    cr_expect_eq(l.count, 0);
    cr_expect_null(l.entries);
    cr_expect_null(l.arch);
    jit__diag_clear(&d);
}

#define GEMM(fields) "{\"gemms\": [{" fields "}]}"
#define BASE "\"name\": \"g\", \"op\": \"linear\", \"n\": 256, \"k\": 128, \"tokens\": [1]"

Test(shapes, issue_form_parses_with_every_field) {
    const char *text =
        "{\"target\": {\"arch\": \"sm_107a\", \"sm_count\": 148}, \"gemms\": [{\"name\": \"qkv\", "
        "\"op\": \"linear_swiglu\", \"n\": 5120, \"k\": 5120, \"a\": \"e5m2\", \"b\": \"e2m1\", "
        "\"scales\": \"ue8m0/32\", \"out\": \"f32\", \"tokens\": [1, 16, 1024, 4096]}]}";
    jit__shape_list_t l;
    jit__diag_t d;
    cr_assert_eq(parse(text, &l, &d), JIT_OK, "%s", d.msg);
    cr_expect_str_eq(l.arch, "sm_107a");
    cr_expect_eq(l.sm_count, 148);
    cr_assert_eq(l.count, 1);
    const jit__shape_entry_t *e = &l.entries[0];
    cr_expect_str_eq(e->name, "qkv");
    cr_expect_eq(e->op, JIT_EPILOGUE_LINEAR_SWIGLU);
    cr_expect_eq(e->n, 5120);
    cr_expect_eq(e->k, 5120);
    cr_expect_eq(e->a, JIT_DTYPE_E5M2);
    cr_expect_eq(e->b, JIT_DTYPE_E2M1);
    cr_expect_eq(e->scales, JIT_SCALE_UE8M0_32);
    cr_expect_eq(e->out, JIT_DTYPE_F32);
    cr_assert_eq(e->n_tokens, 4);
    const int64_t want[] = {1, 16, 1024, 4096};
    for (int i = 0; i < 4; i++)
        cr_expect_eq(e->tokens[i], want[i]);
    jit__shapes_free(&l);
    cr_expect_eq(l.count, 0);
}

Test(shapes, defaults_and_optional_target) {
    jit__shape_list_t l;
    jit__diag_t d;
    cr_assert_eq(parse(GEMM(BASE), &l, &d), JIT_OK, "%s", d.msg);
    cr_expect_null(l.arch);
    cr_expect_eq(l.sm_count, 0);
    cr_expect_eq(l.entries[0].a, JIT_DTYPE_E4M3);
    cr_expect_eq(l.entries[0].b, JIT_DTYPE_E4M3);
    cr_expect_eq(l.entries[0].scales, JIT_SCALE_ROW);
    cr_expect_eq(l.entries[0].out, JIT_DTYPE_BF16);
    jit__shapes_free(&l);

    /* An empty target is allowed; a short arch name is canonicalized. */
    cr_assert_eq(parse("{\"target\": {}, \"gemms\": [{" BASE "}]}", &l, &d), JIT_OK, "%s", d.msg);
    cr_expect_null(l.arch);
    jit__shapes_free(&l);
    cr_assert_eq(parse("{\"target\": {\"arch\": \"90a\"}, \"gemms\": [{" BASE "}]}", &l, &d),
                 JIT_OK, "%s", d.msg);
    cr_expect_str_eq(l.arch, "sm_90a");
    jit__shapes_free(&l);
}

Test(shapes, every_scale_word_and_op) {
    const char *scales[] = {"row", "ue8m0/32", "ue4m3/16", "ue5m3/16", "ue5m3/32", "128x128"};
    const jit_scale_mode_t want_s[] = {JIT_SCALE_ROW,      JIT_SCALE_UE8M0_32,
                                       JIT_SCALE_UE4M3_16, JIT_SCALE_UE5M3_16,
                                       JIT_SCALE_UE5M3_32, JIT_SCALE_BLOCK_1X128_128X128};
    const char *ops[] = {"linear", "linear_add", "linear_swiglu"};
    const jit_epilogue_t want_o[] = {JIT_EPILOGUE_LINEAR, JIT_EPILOGUE_LINEAR_ADD,
                                     JIT_EPILOGUE_LINEAR_SWIGLU};
    for (int i = 0; i < 6; i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "{\"gemms\": [{\"name\": \"g\", \"op\": \"%s\", \"n\": 64, \"k\": 64, "
                 "\"scales\": \"%s\", \"tokens\": [3]}]}",
                 ops[i % 3], scales[i]);
        jit__shape_list_t l;
        jit__diag_t d;
        cr_assert_eq(parse(text, &l, &d), JIT_OK, "%s: %s", text, d.msg);
        cr_expect_eq(l.entries[0].scales, want_s[i]);
        cr_expect_eq(l.entries[0].op, want_o[i % 3]);
        jit__shapes_free(&l);
    }
}

Test(shapes, malformed_json_names_line_and_column) {
    /* The stray comma is on line 3, column 20 (jansson counts the column of the bad token). */
    const char *text = "{\n  \"gemms\": [\n    {\"name\": \"x\",, \"op\": \"linear\"}\n  ]\n}\n";
    jit__shape_list_t l;
    jit__diag_t d;
    cr_assert_eq(parse(text, &l, &d), JIT_PARSE_ERROR);
    cr_expect(strncmp(d.msg, "t.json:3:", 9) == 0, "message: %s", d.msg);
    cr_expect(strstr(d.msg, "malformed JSON") != NULL, "message: %s", d.msg);
    int line = 0, col = 0;
    cr_assert_eq(sscanf(d.msg, "t.json:%d:%d:", &line, &col), 2, "message: %s", d.msg);
    cr_expect_eq(line, 3);
    cr_expect(col >= 18 && col <= 20, "column %d", col);
    jit__diag_clear(&d);

    expect_error("", JIT_PARSE_ERROR, "t.json:", "malformed JSON");
    expect_error("{\"gemms\": [", JIT_PARSE_ERROR, "t.json:1:", NULL);
    expect_error(GEMM(BASE) " trailing", JIT_PARSE_ERROR, "t.json:1:", NULL);
    /* Duplicate keys would silently pick one value; jansson rejects them with a position. */
    expect_error(GEMM(BASE ", \"n\": 512"), JIT_PARSE_ERROR, "t.json:1:", "duplicate");
}

Test(shapes, wrong_field_names_its_path) {
    const char *text = "{\"gemms\": [{" BASE "}, {\"name\": \"h\", \"op\": \"linear\", \"n\": 64, "
                       "\"k\": 64, \"tokens\": [1]}, {\"name\": \"i\", \"op\": \"linear\", "
                       "\"n\": \"abc\", \"k\": 64, \"tokens\": [1]}]}";
    expect_error(text, JIT_INVALID_ARGUMENT,
                 "t.json: gemms[2].n: expected a positive integer, got \"abc\"", NULL);
    expect_error(GEMM("\"name\": \"g\", \"op\": \"linear\", \"n\": 0, \"k\": 128, \"tokens\": [1]"),
                 JIT_INVALID_ARGUMENT, "gemms[0].n: expected a positive integer, got 0", NULL);
    expect_error(GEMM("\"name\": \"g\", \"op\": \"linear\", \"n\": 64, \"k\": -8, \"tokens\": [1]"),
                 JIT_INVALID_ARGUMENT, "gemms[0].k:", "got -8");
    expect_error(
        GEMM("\"name\": \"g\", \"op\": \"linear\", \"n\": 64.0, \"k\": 8, \"tokens\": [1]"),
        JIT_INVALID_ARGUMENT, "gemms[0].n:", "positive integer");
    expect_error(GEMM("\"name\": 7, \"op\": \"linear\", \"n\": 64, \"k\": 8, \"tokens\": [1]"),
                 JIT_INVALID_ARGUMENT, "gemms[0].name: expected a non-empty string", NULL);
    expect_error(GEMM("\"name\": \"\", \"op\": \"linear\", \"n\": 64, \"k\": 8, \"tokens\": [1]"),
                 JIT_INVALID_ARGUMENT, "gemms[0].name:", NULL);
}

Test(shapes, unknown_words_are_rejected_with_the_choices) {
    expect_error(GEMM("\"name\": \"g\", \"op\": \"linaer\", \"n\": 64, \"k\": 8, \"tokens\": [1]"),
                 JIT_INVALID_ARGUMENT, "gemms[0].op: expected linear, linear_add or linear_swiglu",
                 "\"linaer\"");
    expect_error(GEMM(BASE ", \"a\": \"bf16\""), JIT_INVALID_ARGUMENT,
                 "gemms[0].a: expected e4m3, e5m2 or e2m1", NULL);
    expect_error(GEMM(BASE ", \"b\": \"fp8\""), JIT_INVALID_ARGUMENT, "gemms[0].b:", "\"fp8\"");
    expect_error(GEMM(BASE ", \"out\": \"e4m3\""), JIT_INVALID_ARGUMENT,
                 "gemms[0].out: expected bf16 or f32", NULL);
    expect_error(GEMM(BASE ", \"scales\": \"ue8m0/16\""), JIT_INVALID_ARGUMENT,
                 "gemms[0].scales: expected row, ue8m0/32", "\"ue8m0/16\"");
    expect_error(GEMM(BASE ", \"scales\": 32"), JIT_INVALID_ARGUMENT, "gemms[0].scales:", "32");
}

Test(shapes, unknown_keys_are_rejected_with_their_path) {
    expect_error(GEMM(BASE ", \"tokns\": [4]"), JIT_INVALID_ARGUMENT, "gemms[0].tokns: unknown key",
                 NULL);
    expect_error("{\"gemms\": [{" BASE "}], \"version\": 2}", JIT_INVALID_ARGUMENT,
                 "t.json: version: unknown key", "allowed: target, gemms");
    expect_error("{\"target\": {\"arch\": \"sm_90a\", \"sms\": 4}, \"gemms\": [{" BASE "}]}",
                 JIT_INVALID_ARGUMENT, "target.sms: unknown key", NULL);
}

Test(shapes, missing_required_fields_are_named) {
    const char *fields[] = {"name", "op", "n", "k", "tokens"};
    const char *values[] = {"\"g\"", "\"linear\"", "64", "64", "[1]"};
    for (int skip = 0; skip < 5; skip++) {
        char text[512] = "{\"gemms\": [{";
        int first = 1;
        for (int i = 0; i < 5; i++) {
            if (i == skip)
                continue;
            char part[64];
            snprintf(part, sizeof(part), "%s\"%s\": %s", first ? "" : ", ", fields[i], values[i]);
            strcat(text, part);
            first = 0;
        }
        strcat(text, "}]}");
        char needle[64];
        snprintf(needle, sizeof(needle), "gemms[0]: missing required field \"%s\"", fields[skip]);
        expect_error(text, JIT_INVALID_ARGUMENT, needle, NULL);
    }
    expect_error("{\"target\": {\"arch\": \"sm_90a\"}}", JIT_INVALID_ARGUMENT,
                 "missing required field \"gemms\"", NULL);
}

Test(shapes, gemms_and_tokens_shapes) {
    expect_error("{\"gemms\": []}", JIT_INVALID_ARGUMENT, "gemms: expected a non-empty array",
                 NULL);
    expect_error("{\"gemms\": {}}", JIT_INVALID_ARGUMENT, "gemms: expected", NULL);
    expect_error("{\"gemms\": [3]}", JIT_INVALID_ARGUMENT, "gemms[0]: expected an object, got 3",
                 NULL);
    expect_error("[1, 2]", JIT_INVALID_ARGUMENT, "t.json: expected a JSON object", NULL);
    const char *head = "\"name\": \"g\", \"op\": \"linear\", \"n\": 64, \"k\": 64, \"tokens\": ";
    char text[256];
    snprintf(text, sizeof(text), "{\"gemms\": [{%s[]}]}", head);
    expect_error(text, JIT_INVALID_ARGUMENT, "gemms[0].tokens: expected a non-empty array", NULL);
    snprintf(text, sizeof(text), "{\"gemms\": [{%s16}]}", head);
    expect_error(text, JIT_INVALID_ARGUMENT, "gemms[0].tokens: expected", "got 16");
    snprintf(text, sizeof(text), "{\"gemms\": [{%s[1, 0]}]}", head);
    expect_error(text, JIT_INVALID_ARGUMENT, "gemms[0].tokens[1]: expected a positive integer",
                 "got 0");
    snprintf(text, sizeof(text), "{\"gemms\": [{%s[1, \"64\"]}]}", head);
    expect_error(text, JIT_INVALID_ARGUMENT, "gemms[0].tokens[1]:", "got \"64\"");
    snprintf(text, sizeof(text), "{\"gemms\": [{%s[1, 16, 1]}]}", head);
    expect_error(text, JIT_INVALID_ARGUMENT, "gemms[0].tokens[2]: duplicate token count 1",
                 "gemms[0].tokens[0]");
}

Test(shapes, tokens_all_means_one_count_in_every_band) {
    jit__shape_list_t l;
    jit__diag_t d;
    const char *text = "{\"gemms\": [{\"name\": \"g\", \"op\": \"linear\", \"n\": 64, "
                       "\"k\": 64, \"tokens\": \"all\"}]}";
    cr_assert_eq(parse(text, &l, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(l.count, 1);
    const jit__shape_entry_t *e = &l.entries[0];
    cr_assert_eq(e->n_tokens, (size_t)JIT_TOKEN_BANDS);
    for (int b = 0; b < JIT_TOKEN_BANDS; b++)
        cr_expect_eq(jit__token_band(e->tokens[b]), b, "tokens[%d] = %lld is not in band %d", b,
                     (long long)e->tokens[b], b);
    cr_expect_eq(jit__shapes_problem_count(&l), (size_t)JIT_TOKEN_BANDS);
    jit__shapes_free(&l);
    jit__diag_clear(&d);
    const char *other[] = {"\"All\"", "\"every\"", "\"\""};
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        char t[256];
        snprintf(t, sizeof(t),
                 "{\"gemms\": [{\"name\": \"g\", \"op\": \"linear\", \"n\": 64, \"k\": 64, "
                 "\"tokens\": %s}]}",
                 other[i]);
        expect_error(t, JIT_INVALID_ARGUMENT, "gemms[0].tokens: expected", "or \"all\"");
    }
}

Test(shapes, target_is_checked) {
    expect_error("{\"target\": {\"arch\": \"sm_99a\"}, \"gemms\": [{" BASE "}]}",
                 JIT_INVALID_ARGUMENT, "target.arch: expected a known architecture",
                 "got \"sm_99a\"");
    expect_error("{\"target\": {\"arch\": 90}, \"gemms\": [{" BASE "}]}", JIT_INVALID_ARGUMENT,
                 "target.arch:", "sm_107a");
    expect_error("{\"target\": {\"sm_count\": 0}, \"gemms\": [{" BASE "}]}", JIT_INVALID_ARGUMENT,
                 "target.sm_count: expected a positive integer, got 0", NULL);
    expect_error("{\"target\": \"sm_90a\", \"gemms\": [{" BASE "}]}", JIT_INVALID_ARGUMENT,
                 "target: expected an object", NULL);
}

Test(shapes, duplicate_names_are_rejected) {
    expect_error("{\"gemms\": [{" BASE "}, {" BASE "}]}", JIT_INVALID_ARGUMENT,
                 "gemms[1].name: duplicate name \"g\"", "gemms[0]");
}

Test(shapes, problems_expand_entries_by_tokens_in_order) {
    const char *text = "{\"gemms\": [{\"name\": \"a\", \"op\": \"linear_add\", \"n\": 512, \"k\": "
                       "256, \"tokens\": [7, 300]}, {\"name\": \"b\", \"op\": \"linear_swiglu\", "
                       "\"n\": 1024, \"k\": 128, \"a\": \"e5m2\", \"tokens\": [1, 2, 4096]}]}";
    jit__shape_list_t l;
    jit__diag_t d;
    cr_assert_eq(parse(text, &l, &d), JIT_OK, "%s", d.msg);
    size_t n = jit__shapes_problem_count(&l);
    cr_assert_eq(n, 5);
    jit_problem_t p[5];
    size_t of[5];
    jit__shapes_problems(&l, p, of);
    const int64_t m[] = {7, 300, 1, 2, 4096};
    const size_t entry[] = {0, 0, 1, 1, 1};
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(p[i].m, m[i]);
        cr_expect_eq(of[i], entry[i]);
        cr_expect_eq(p[i].struct_size, sizeof(jit_problem_t));
        cr_expect_eq(p[i].n, entry[i] ? 1024 : 512);
        cr_expect_eq(p[i].k, entry[i] ? 128 : 256);
        cr_expect_eq(p[i].epilogue,
                     entry[i] ? JIT_EPILOGUE_LINEAR_SWIGLU : JIT_EPILOGUE_LINEAR_ADD);
        cr_expect_eq(p[i].a_dtype, entry[i] ? JIT_DTYPE_E5M2 : JIT_DTYPE_E4M3);
        cr_expect_eq(p[i].b_dtype, JIT_DTYPE_E4M3);
        cr_expect_eq(p[i].alpha, 1.0f);
    }
    jit__shapes_free(&l);
}

Test(shapes, files_examples_and_read_errors) {
    jit__shape_list_t l;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__shapes_parse_file(JITGEMM_SOURCE_DIR "/examples/shapes.json", &l, &d), JIT_OK,
                 "%s", d.msg);
    cr_expect_str_eq(l.arch, "sm_107a");
    cr_expect_eq(l.sm_count, 148);
    cr_expect_geq(l.count, 4);
    cr_expect_eq(jit__shapes_problem_count(&l), 4 * l.count);
    jit__shapes_free(&l);

    jit__diag_init(&d);
    cr_expect_eq(
        jit__shapes_parse_file(JITGEMM_SOURCE_DIR "/examples/shapes-bad-field.json", &l, &d),
        JIT_INVALID_ARGUMENT);
    cr_expect(strstr(d.msg, "shapes-bad-field.json: gemms[2].n: expected a positive integer, "
                            "got \"abc\"") != NULL,
              "%s", d.msg);
    jit__diag_clear(&d);
    cr_expect_eq(
        jit__shapes_parse_file(JITGEMM_SOURCE_DIR "/examples/shapes-bad-syntax.json", &l, &d),
        JIT_PARSE_ERROR);
    cr_expect(strstr(d.msg, "shapes-bad-syntax.json:4:") != NULL, "%s", d.msg);
    jit__diag_clear(&d);

    cr_expect_eq(jit__shapes_parse_file("/nonexistent/shapes.json", &l, &d), JIT_IO_ERROR);
    cr_expect(strstr(d.msg, "cannot read /nonexistent/shapes.json") != NULL, "%s", d.msg);
    jit__diag_clear(&d);
    char *dir = jt_mkdtemp("shapes");
    cr_assert_not_null(dir);
    cr_expect_eq(jit__shapes_parse_file(dir, &l, &d), JIT_IO_ERROR);
    cr_expect(strstr(d.msg, "is a directory") != NULL, "%s", d.msg);
    jit__diag_clear(&d);

    /* A NUL byte inside a file is an error, not the end of the text. */
    char path[512];
    snprintf(path, sizeof(path), "%s/nul.json", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    const char body[] = "{\"gemms\": [{" BASE "}]}";
    fwrite(body, 1, strlen(body), f);
    fwrite("\0garbage", 1, 8, f);
    fclose(f);
    cr_expect_eq(jit__shapes_parse_file(path, &l, &d), JIT_PARSE_ERROR, "%s", d.msg);
    jit__diag_clear(&d);
    jt_rmtree(dir);
    free(dir);
}

/* ---- input size and scale ----------------------------------------------------------------- */

#define SHAPES_CAP (16u << 20) /* the documented cap on a shape list's size */

Test(shapes, input_over_the_size_cap_is_refused, .timeout = 60) {
    char *dir = jt_mkdtemp("shapes-cap");
    cr_assert_not_null(dir);
    char path[512];
    snprintf(path, sizeof(path), "%s/huge.json", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    /* Valid JSON, only too long: the cap must not depend on what the bytes are. */
    const char body[] = "{\"gemms\": [{" BASE "}]}";
    fwrite(body, 1, strlen(body), f);
    static char spaces[1 << 16];
    memset(spaces, ' ', sizeof(spaces));
    for (size_t n = 0; n <= SHAPES_CAP; n += sizeof(spaces))
        fwrite(spaces, 1, sizeof(spaces), f);
    fclose(f);
    jit__shape_list_t l;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__shapes_parse_file(path, &l, &d), JIT_INVALID_ARGUMENT, "%s", d.msg);
    cr_expect(strstr(d.msg, path) && strstr(d.msg, "16 MiB"), "%s", d.msg);
    jit__diag_clear(&d);

    /* An endless stream stops at the cap instead of reading until memory runs out. */
    cr_assert_eq(jit__shapes_parse_file("/dev/zero", &l, &d), JIT_INVALID_ARGUMENT, "%s", d.msg);
    cr_expect(strstr(d.msg, "/dev/zero") && strstr(d.msg, "16 MiB"), "%s", d.msg);
    jit__diag_clear(&d);

    /* The same text just under the cap still parses. */
    cr_assert_eq(truncate(path, SHAPES_CAP), 0);
    cr_expect_eq(jit__shapes_parse_file(path, &l, &d), JIT_OK, "%s", d.msg);
    jit__shapes_free(&l);
    jit__diag_clear(&d);
    jt_rmtree(dir);
    free(dir);
}

/* Appends to a growing buffer; the lists below are megabytes. */
static void append(char **buf, size_t *len, size_t *cap, const char *s) {
    size_t n = strlen(s);
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = realloc(*buf, *cap);
        cr_assert_not_null(*buf);
    }
    memcpy(*buf + *len, s, n + 1);
    *len += n;
}

/* 300,000 token counts and 30,000 entries: quadratic duplicate checks take tens of seconds. */
static char *big_list(size_t n_tokens, size_t n_entries, int dup_token, int dup_name) {
    char *buf = NULL, item[160];
    size_t len = 0, cap = 0;
    append(&buf, &len, &cap,
           "{\"gemms\": [{\"name\": \"big\", \"op\": \"linear\", \"n\": 256, "
           "\"k\": 128, \"tokens\": [");
    for (size_t i = 0; i < n_tokens; i++) {
        /* Scrambled, so a check that only compares neighbours in file order would miss. */
        size_t t = (i * 7919u) % n_tokens + 1;
        if (dup_token && i == n_tokens - 1)
            t = 1 * 7919u % n_tokens + 1; /* the same as tokens[1] */
        snprintf(item, sizeof(item), "%s%zu", i ? "," : "", t);
        append(&buf, &len, &cap, item);
    }
    append(&buf, &len, &cap, "]}");
    for (size_t i = 0; i < n_entries; i++) {
        snprintf(item, sizeof(item),
                 ", {\"name\": \"e%zu\", \"op\": \"linear\", \"n\": 256, \"k\": 128, "
                 "\"tokens\": [1]}",
                 (dup_name && i == n_entries - 1) ? (size_t)3 : i);
        append(&buf, &len, &cap, item);
    }
    append(&buf, &len, &cap, "]}");
    return buf;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

Test(shapes, duplicate_checks_scale, .timeout = 120) {
    const size_t nt = 300000, ne = 30000; /* 7919 is prime and does not divide 300000 */
    char *text = big_list(nt, ne, 0, 0);
    jit__shape_list_t l;
    jit__diag_t d;
    double t0 = now_s();
    cr_assert_eq(parse(text, &l, &d), JIT_OK, "%s", d.msg);
    double secs = now_s() - t0;
    cr_expect_eq(l.count, ne + 1);
    cr_expect_eq(l.entries[0].n_tokens, nt);
    cr_expect_lt(secs, 3.0, "parsing took %.1f s", secs);
    jit__shapes_free(&l);
    jit__diag_clear(&d);
    free(text);

    /* Duplicates are still found, and named with both places. */
    text = big_list(nt, ne, 1, 0);
    expect_error(text, JIT_INVALID_ARGUMENT, "gemms[0].tokens[299999]: duplicate token count",
                 "also gemms[0].tokens[1]");
    free(text);
    text = big_list(10, ne, 0, 1);
    expect_error(text, JIT_INVALID_ARGUMENT, "gemms[30000].name: duplicate name \"e3\"",
                 "also gemms[4]");
    free(text);
}
