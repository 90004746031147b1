/*
 * The prewarm progress bar: one line on a terminal's stderr, redrawn in place with a carriage
 * return. The text is built separately from the drawing so it can be tested without a
 * terminal. The line is padded to the longest one drawn so far, so a shorter redraw never
 * leaves stale characters behind.
 */
#include <string.h>

#include "cli.h"

void jit__cli_progress_format(const jit__cli_progress_t *p, char *out, size_t outsz) {
    int width = p->width > 0 ? p->width : 30;
    char bar[129];
    if (width > (int)sizeof(bar) - 1)
        width = (int)sizeof(bar) - 1;
    /* Cells filled are rounded down, so a full bar means every problem has finished. */
    size_t fill = p->total ? (p->done * (size_t)width) / p->total : (size_t)width;
    for (int i = 0; i < width; i++)
        bar[i] = (size_t)i < fill ? '#' : ' ';
    bar[width] = '\0';
    snprintf(out, outsz, "[%s] %zu/%zu compiled %zu cached %zu failed %zu", bar, p->done, p->total,
             p->compiled, p->cached, p->failed);
}

void jit__cli_progress_draw(const jit__cli_progress_t *p, FILE *f, int final) {
    static size_t longest;
    char line[512];
    jit__cli_progress_format(p, line, sizeof(line));
    size_t len = strlen(line);
    if (len > longest)
        longest = len;
    fprintf(f, "\r%s%*s", line, (int)(longest - len), "");
    if (final)
        fputc('\n', f);
    fflush(f);
}
