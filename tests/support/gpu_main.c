/*
 * See gpu_main.h. Criterion forks a process per test, so the reason a test skipped is not seen
 * here; the runner asks for a GPU itself after the tests, when no child can inherit a driver
 * state from it, and only an all-skipped run on a GPU-less machine counts as "skipped".
 */
#include "gpu_main.h"

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>

#include "support.h"

static struct {
    int seen;
    size_t tests, skipped, failed, crashed;
} g_stats;

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
    g_stats.seen = 1;
    g_stats.tests = stats->nb_tests;
    g_stats.skipped = stats->tests_skipped;
    g_stats.failed = stats->tests_failed;
    g_stats.crashed = stats->tests_crashed;
}

int jt_gpu_test_main(int argc, char **argv) {
    struct criterion_test_set *tests = criterion_initialize();
    /* As Criterion's own main: > 0 run, 0 done (e.g. --help), < 0 a bad argument. */
    int args = criterion_handle_args(argc, argv, true);
    int ran = args > 0;
    int status = args < 0;
    if (ran)
        status = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    if (!ran || status != 0 || !g_stats.seen || g_stats.tests == 0 ||
        g_stats.skipped != g_stats.tests || g_stats.failed || g_stats.crashed)
        return status;
    const char *why = NULL;
    if (jt_gpu_available(&why))
        return status;
    fprintf(stderr, "every test skipped: %s; exit %d so ctest reports them as skipped\n",
            why ? why : "no GPU", JT_EXIT_NO_GPU);
    return JT_EXIT_NO_GPU;
}
