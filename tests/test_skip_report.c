/*
 * A GPU test binary on a machine without a GPU must exit JT_EXIT_NO_GPU, which ctest reports as
 * skipped (SKIP_RETURN_CODE); before, ctest showed such a run as "Passed", claiming GPU coverage
 * that never happened.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_main.h"
#include "support.h"

/* The test binaries are built side by side. Criterion marks the processes it runs tests in
 * through BXFI_MAP; a Criterion binary started from one with it set would think it is such a
 * worker rather than a runner. */
static void sibling(const char *name, char *out, size_t outsz) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    cr_assert(n > 0, "cannot read /proc/self/exe");
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    cr_assert(slash);
    *slash = '\0';
    cr_assert((size_t)snprintf(out, outsz, "%s/%s", self, name) < outsz);
    cr_assert(access(out, X_OK) == 0, "%s is not built", out);
    unsetenv("BXFI_MAP");
}

Test(skip_report, gpu_tests_without_a_gpu_exit_with_the_skip_code, .timeout = 300) {
    const char *why = NULL;
    if (jt_gpu_available(&why))
        cr_skip_test("a GPU is present; the skip code is checked on machines without one");
    char path[PATH_MAX + 32];
    sibling("test_gpu_fp8", path, sizeof(path));
    const char *argv[] = {path, "--jobs", "2", NULL};
    char *out = NULL, *err = NULL;
    int rc = jt_run(argv, NULL, NULL, &out, &err);
    cr_expect_eq(rc, JT_EXIT_NO_GPU, "exit %d\n%s\n%s", rc, out, err);
    cr_expect(strstr(err, "every test skipped") != NULL, "%s", err);
    free(out);
    free(err);
}

Test(skip_report, a_run_of_no_tests_is_not_a_skip) {
    /* Criterion answers a bad option with its usage and runs nothing; that must keep Criterion's
     * status, never become a skip that hides a broken test command. */
    char path[PATH_MAX + 32];
    sibling("test_gpu_fp8", path, sizeof(path));
    const char *argv[] = {path, "--no-such-criterion-option", NULL};
    char *out = NULL, *err = NULL;
    int rc = jt_run(argv, NULL, NULL, &out, &err);
    cr_expect(rc >= 0 && rc != JT_EXIT_NO_GPU, "exit %d\n%s\n%s", rc, out, err);
    cr_expect(strstr(err, "unrecognized option") != NULL, "%s", err);
    free(out);
    free(err);
}
