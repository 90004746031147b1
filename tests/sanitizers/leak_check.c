/*
 * Sanitizer build only (JITGEMM_SANITIZE): fail a Criterion test that leaks, and check nothing
 * else of a test binary for leaks.
 *
 * LeakSanitizer checks at process exit, and Criterion runs each test in a child process that
 * exits after it has reported its result: a leak found then fails nothing, and ctest may end
 * the child before the report is even written. So every test body is wrapped (the link
 * redirects criterion_internal_test_main, which each Test() calls in its child, here) and a
 * leak check runs right after the body, while the test can still fail. Memory the test still
 * reaches (a fixture's context in a global, freed by .fini) is not a leak to LeakSanitizer.
 * Only Test() is handled: ParameterizedTest and Theory pass their body an argument, and the
 * suite uses neither.
 */
#include <criterion/criterion.h>
#include <sanitizer/lsan_interface.h>
#include <string.h>

void __real_criterion_internal_test_main(void (*fn)(void));
void __wrap_criterion_internal_test_main(void (*fn)(void));

static void (*g_body)(void); /* one test per child process */

/* LeakSanitizer scans the stack conservatively: a pointer the finished body left in its dead
 * frames would count as a reference and hide the leak. Overwrite that stack first. */
__attribute__((noinline)) static void clear_dead_stack(void) {
    volatile char scrub[64 * 1024];
    memset((char *)scrub, 0, sizeof(scrub));
}

static volatile int g_checking;

/* LeakSanitizer asks this before any leak check. A test binary is checked only right after
 * each test body, never at exit: at exit the only code left is Criterion's runner, which keeps
 * one allocation of its own to the end (libcriterion.so cannot be suppressed by name, since it
 * is on the stack of every allocation a test makes). The CLI and the examples do not link this
 * file and are checked at exit as usual. */
int __lsan_is_turned_off(void) {
    return !g_checking;
}

static void body_then_leak_check(void) {
    g_body();
    clear_dead_stack();
    g_checking = 1;
    int leaked = __lsan_do_recoverable_leak_check(); /* reports where ASan reports go */
    g_checking = 0;
    if (leaked)
        cr_assert_fail("LeakSanitizer: this test leaked memory (see its report)");
}

void __wrap_criterion_internal_test_main(void (*fn)(void)) {
    g_body = fn;
    __real_criterion_internal_test_main(body_then_leak_check);
}
