/*
 * The prewarm progress bar's text and redraw, without a terminal: the CLI only draws it when
 * stderr is a TTY, which the end-to-end tests never are, so its format is checked here against
 * the source directly.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../api/cli/progress.c"

static size_t count_char(const char *s, char c) {
    size_t n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

Test(progress, format_counts_and_fill) {
    jit__cli_progress_t p = {.total = 40, .done = 12, .compiled = 9, .cached = 3, .width = 10};
    char line[256];
    jit__cli_progress_format(&p, line, sizeof(line));
    cr_expect_str_eq(line, "[###       ] 12/40 compiled 9 cached 3 failed 0");

    p.done = 0;
    p.compiled = p.cached = 0;
    jit__cli_progress_format(&p, line, sizeof(line));
    cr_expect_str_eq(line, "[          ] 0/40 compiled 0 cached 0 failed 0");

    /* Rounded down: one problem short of the end never shows a full bar. */
    p.done = 39;
    p.compiled = 37;
    p.failed = 2;
    jit__cli_progress_format(&p, line, sizeof(line));
    cr_expect_eq(count_char(line, '#'), 9);
    p.done = 40;
    jit__cli_progress_format(&p, line, sizeof(line));
    cr_expect_eq(count_char(line, '#'), 10);
    cr_expect(strstr(line, "40/40 compiled 37 cached 0 failed 2") != NULL, "%s", line);
}

Test(progress, default_width_and_empty_total) {
    jit__cli_progress_t p = {.total = 0};
    char line[256];
    jit__cli_progress_format(&p, line, sizeof(line));
    /* Nothing to do is complete, not divided by zero. */
    cr_expect_eq(count_char(line, '#'), 30);
    cr_expect(strstr(line, "] 0/0 ") != NULL, "%s", line);
}

Test(progress, redraw_returns_the_carriage_and_pads_shorter_lines) {
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    jit__cli_progress_t p = {.total = 100, .done = 100, .compiled = 100, .width = 4};
    jit__cli_progress_draw(&p, f, 0);
    jit__cli_progress_t q = {.total = 100, .done = 5, .compiled = 5, .width = 4};
    jit__cli_progress_draw(&q, f, 1);
    rewind(f);
    char buf[512] = "";
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    const char *second = strchr(buf + 1, '\r');
    cr_assert_not_null(second, "no second redraw: %s", buf);
    cr_expect_eq(buf[0], '\r');
    size_t first_len = (size_t)(second - buf) - 1;
    cr_expect_eq(strlen(second + 1), first_len + 1, "shorter line not padded to cover the old one");
    cr_expect_eq(buf[n - 1], '\n', "the final draw ends the line");
    cr_expect(strncmp(second + 1, "[    ] 5/100 compiled 5", 23) == 0, "%s", second + 1);
}
