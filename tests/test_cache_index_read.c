/*
 * The listing's reader of the index (cache/index_read.c). It reads the index the cache writes
 * without building a JSON tree, and hands anything else to the jansson reader. These tests hold
 * it to that: the index the cache writes is read on the fast path; valid JSON in another shape
 * and every kind of damage give exactly what the jansson reader gives (the same entries, or the
 * same verdict that the index is unusable).
 */
#include <criterion/criterion.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_private.h"
#include "test_cache_fixture.h"

TestSuite(index_read, .fini = tc_cleanup, .timeout = 300);

#define SIZE 2048
/* Enough entries that the manifest passes the size below which every publish rewrites it, so
 * later publishes go to the journal. */
#define LARGE 120

/* index_read against index_load on the same files: same usability, same entries (every field,
 * times included). Returns index_read's `fast`. */
static int read_both_and_compare(jit__cache_t *c, size_t *count) {
    jit__cache_entry_t *got = NULL;
    size_t n = 0;
    jit__index_state_t s_fast, s_tree;
    cr_assert_eq(jit__cache_index_read(c, &got, &n, &s_fast), 0);
    json_t *tree = NULL;
    jit__cache_index_load(c, &tree, &s_tree);
    cr_assert_eq(jit__cache_index_usable(&s_fast), jit__cache_index_usable(&s_tree));
    cr_assert_eq(s_fast.manifest, s_tree.manifest);
    cr_assert_eq(s_fast.journal, s_tree.journal);
    if (!tree) {
        cr_assert_null(got);
        cr_assert_eq(n, 0);
        *count = 0;
        return s_fast.fast;
    }
    cr_assert_eq(n, json_object_size(tree), "%zu entries read, the tree has %zu", n,
                 json_object_size(tree));
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            cr_assert_lt(strcmp(got[i - 1].hash, got[i].hash), 0, "not sorted at %zu", i);
        jit__cache_entry_t want;
        char why[JIT__CACHE_WHY_MAX];
        cr_assert_eq(jit__cache_entry_from_object(json_object_get(tree, got[i].hash), &want, why,
                                                  sizeof(why)),
                     0, "%s", why);
        cr_assert(jit__cache_entry_equal(&got[i], &want), "entry %s differs", got[i].hash);
        cr_assert_eq(got[i].created, want.created);
        cr_assert_eq(got[i].last_used, want.last_used);
        cr_assert_eq(got[i].compile_seconds, want.compile_seconds);
    }
    json_decref(tree);
    free(got);
    *count = n;
    return s_fast.fast;
}

/* Replace the first `from` in the file by `to`. */
static void edit(const char *path, const char *from, const char *to) {
    size_t len = 0;
    char *text = jt_read_file(path, &len);
    cr_assert_not_null(text);
    char *at = strstr(text, from);
    cr_assert_not_null(at, "%s: no \"%s\" to replace", path, from);
    size_t head = (size_t)(at - text), fl = strlen(from), tl = strlen(to);
    char *out = malloc(len - fl + tl + 1);
    memcpy(out, text, head);
    memcpy(out + head, to, tl);
    memcpy(out + head + tl, at + fl, len - head - fl + 1);
    cr_assert_eq(jt_write_file(path, out), 0);
    free(out);
    free(text);
}

Test(index_read, the_index_the_cache_writes_is_read_without_jansson) {
    char *dir = tc_mkdtemp("index-read");
    jit__cache_t *c = tc_open(dir, 0);
    size_t n = 0;
    cr_assert_eq(read_both_and_compare(c, &n), 0, "no manifest yet: nothing to read fast");
    for (unsigned i = 0; i < LARGE; i++)
        tc_put(c, i, SIZE, NULL);
    /* New keys, and keys published again (twice: the later journal line wins), in the
     * journal; a fractional compile time that the manifest prints with 9 digits. */
    for (unsigned i = 0; i < 6; i++) {
        jit__cache_entry_t e;
        tc_make_entry(&e, i % 3 ? 500 + i : i);
        e.compile_seconds = 0.123456789123 * (i + 1);
        e.created = 1700000000 + i;
        void *bin = tc_make_cubin(i, SIZE + i);
        cr_assert_eq(jit__cache_put(c, &e, bin, SIZE + i, "src", NULL, NULL), JIT_OK);
        free(bin);
    }
    size_t len = 0;
    free(jt_read_file(tc_top(dir, "manifest.journal"), &len));
    cr_assert_gt(len, 1000, "the journal should hold the later publishes");
    cr_assert_eq(read_both_and_compare(c, &n), 1);
    cr_assert_eq(n, LARGE + 4);
    jit__cache_close(c);
    free(dir);
}

/* Valid JSON with the same meaning, in a shape the cache does not write. */
Test(index_read, other_valid_text_gives_what_jansson_gives) {
    static const struct {
        const char *from, *to;
        int fast; /* still read fast: plain whitespace is the shape's own */
    } k_cases[] = {
        {"\"key_text\": \"jitgemm", "\"key_text\": \"\\u006aitgemm", 0},
        {"\"arch\": \"sm_90a\"", "\"arch\": \"sm_90\\u0061\"", 0},
        {"\"compile_seconds\": 0.25", "\"compile_seconds\": 2.5e-1", 1},
        {"\"compile_seconds\": 0.25", "\"compile_seconds\": 1", 1},
        {"\"format\": 1,", "\"format\":1\t,\r\n", 1},
        {"\"registers\": 96", "\"registers\": 96.0", 0},
        {"\"registers\": 96", "\"registers\": 0096", 0},
        {"\"registers\": 96", "\"registers\": 1e2", 0},
        {"\"fallback\": false", "\"fallback\": true", 1},
        {"\"nvrtc\": \"13.5\"", "\"nvrtc\": \"+13.5\"", 0},
        {"\"nvrtc\": \"13.5\"", "\"nvrtc\": \" 13.5\"", 0},
        {"\"size\": 2048", "\"size\": 99999999999999999999", 0},
        {"\"created\": ", "\"created\": -", 1},
        {"\"hash\"", "\"h\\u0061sh\"", 0},
        {"{\n \"format\": 1,", "{\n \"note\": \"x\",\n \"format\": 1,", 0},
    };
    for (size_t k = 0; k < sizeof(k_cases) / sizeof(k_cases[0]); k++) {
        char *dir = tc_mkdtemp("index-read-text");
        jit__cache_t *c = tc_open(dir, 0);
        for (unsigned i = 0; i < 3; i++)
            tc_put(c, i, SIZE, NULL);
        edit(tc_top(dir, "manifest.json"), k_cases[k].from, k_cases[k].to);
        size_t n = 0;
        int fast = read_both_and_compare(c, &n);
        cr_assert_eq(fast, k_cases[k].fast, "case %zu (%s): fast %d", k, k_cases[k].to, fast);
        jit__cache_close(c);
        jt_rmtree(dir);
        free(dir);
    }
}

/* Damage: never read fast, and the verdict is jansson's. */
Test(index_read, damage_gets_the_jansson_verdict) {
    static const struct {
        const char *file, *from, *to;
    } k_cases[] = {
        {"manifest.json", "\"size\": 2048", "\"size\": -2048"},
        {"manifest.json", "\"size\": 2048", "\"size\": \"2048\""},
        {"manifest.json", "\"format\": 1", "\"format\": 2"},
        /* jansson reads an integer beyond long long as an error, not as a double */
        {"manifest.json", "\"compile_seconds\": 0.25", "\"compile_seconds\": 99999999999999999999"},
        {"manifest.json", "\"compile_seconds\": 0.25", "\"compile_seconds\": 1e999"},
        {"manifest.json", "\"block\": [", "\"block\": [7, "},
        {"manifest.json", "\"checksum\": \"", "\"checksum\": \"X"},
        {"manifest.json", "\"kernel_name\"", "\"kernel_name\": 1, \"kernel_name\""},
        {"manifest.json", "{", "["},
        {"manifest.json", "\"format\"", "\"format\" \"format\""},
        {"manifest.journal", "{\"usage\"", "{\"usage\": -1, \"usage\""},
        {"manifest.journal", "{\"usage\"", "{\"put\": 1, \"usage\""},
        {"manifest.journal", "}\n", "}\ngarbage\n"},
    };
    for (size_t k = 0; k < sizeof(k_cases) / sizeof(k_cases[0]); k++) {
        char *dir = tc_mkdtemp("index-read-damage");
        jit__cache_t *c = tc_open(dir, 0);
        for (unsigned i = 0; i < 3; i++)
            tc_put(c, i, SIZE, NULL);
        edit(tc_top(dir, k_cases[k].file), k_cases[k].from, k_cases[k].to);
        size_t n = 0;
        cr_assert_eq(read_both_and_compare(c, &n), 0, "case %zu read fast", k);
        jit__cache_close(c);
        jt_rmtree(dir);
        free(dir);
    }
}

/* Entries out of order or named twice: jansson rejects a duplicate, and the fast path must
 * not take either. */
Test(index_read, duplicate_or_unsorted_names_are_not_read_fast) {
    char *dir = tc_mkdtemp("index-read-order");
    jit__cache_t *c = tc_open(dir, 0);
    for (unsigned i = 0; i < 2; i++)
        tc_put(c, i, SIZE, NULL);
    jit__cache_entry_t a, b;
    tc_make_entry(&a, 0);
    tc_make_entry(&b, 1);
    const char *first = strcmp(a.hash, b.hash) < 0 ? a.hash : b.hash;
    const char *second = first == a.hash ? b.hash : a.hash;
    /* Name the second entry like the first: a duplicate name (whose hash field differs). */
    char from[64], to[64];
    snprintf(from, sizeof(from), "\"%s\": {", second);
    snprintf(to, sizeof(to), "\"%s\": {", first);
    edit(tc_top(dir, "manifest.json"), from, to);
    size_t n = 0;
    cr_assert_eq(read_both_and_compare(c, &n), 0);
    jit__cache_close(c);
    free(dir);
}

/* A program using the library may set LC_NUMERIC to a locale whose decimal point is a comma,
 * where strtod stops at the '.' of "0.25"; the fast reader must then not read 0. */
Test(index_read, a_decimal_comma_locale_reads_the_same) {
    static const char *const k_locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                            "fr_FR.utf8",  "de_DE",      "fr_FR"};
    const char *set = NULL;
    for (size_t i = 0; i < sizeof(k_locales) / sizeof(k_locales[0]) && !set; i++)
        set = setlocale(LC_NUMERIC, k_locales[i]);
    if (!set)
        cr_skip_test("no locale with a decimal comma is installed");
    char *dir = tc_mkdtemp("index-read-locale");
    jit__cache_t *c = tc_open(dir, 0);
    for (unsigned i = 0; i < 3; i++)
        tc_put(c, i, SIZE, NULL);
    size_t n = 0;
    read_both_and_compare(c, &n);
    cr_assert_eq(n, 3);
    jit__cache_close(c);
    setlocale(LC_NUMERIC, "C");
    free(dir);
}
