/*
 * An empty cache must not hand qsort a NULL array: C leaves qsort(NULL, 0, ...) undefined and
 * glibc declares the pointer nonnull, so a compiler may assume it is not NULL.
 * This executable interposes qsort (the library is linked statically, so its calls land here)
 * and counts NULL arrays while every maintenance verb runs on an empty cache.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdatomic.h>

#include "test_cache_fixture.h"

static atomic_int g_null_arrays;

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
    static void (*real)(void *, size_t, size_t, int (*)(const void *, const void *));
    /* Through a volatile: glibc's nonnull attribute would let the compiler drop the test. */
    void *volatile seen = base;
    if (!seen)
        atomic_fetch_add(&g_null_arrays, 1);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "qsort");
    if (n > 0)
        real(base, n, size, cmp);
}

TestSuite(cache_empty, .fini = tc_cleanup);

Test(cache_empty, maintenance_never_sorts_a_null_array) {
    char *dir = tc_mkdtemp("cache-empty");
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t *all = NULL;
    size_t n = 9, bad = 9, removed = 9;
    cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_OK);
    cr_expect_eq(n, 0);
    free(all);
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_expect_eq(bad, 0);
    cr_assert_eq(jit__cache_gc(c, NULL, NULL, NULL), JIT_OK);
    cr_assert_eq(jit__cache_clear(c, &removed, NULL), JIT_OK);
    jit__cache_entry_t e;
    void *bin = NULL;
    size_t sz = 0;
    int found = 1;
    cr_assert_eq(jit__cache_get(c, tc_hash(1), &e, &bin, &sz, &found, NULL), JIT_OK);
    cr_expect_eq(found, 0);
    tc_put(c, 1, 64, NULL); /* eviction scans a one-entry cache */
    jit__cache_close(c);
    cr_expect_eq(atomic_load(&g_null_arrays), 0, "qsort was given a NULL array %d times",
                 atomic_load(&g_null_arrays));
    free(dir);
}
