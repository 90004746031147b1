/*
 * A compile unit's #include "NAME" lines, followed through its headers (kernel_dir.h). The
 * generated source names each device header by its path under kernel_src/, which is how the
 * library hands the headers to NVRTC; those names are the paths `inspect --out` writes the
 * headers at and `rebuild` reads them back from, and the names `inspect --source --full`
 * replaces by the files' text.
 *
 * Only the quoted form is followed (the device code uses no other), and a line counts only when
 * it does not begin inside a block comment, so a commented-out include is not taken for one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kernel_dir.h"
#include "strbuf.h"

#define NAME_MAX_LEN 512

typedef struct include_line {
    size_t start, end; /* the line's bytes, end past its newline */
    char name[NAME_MAX_LEN];
} include_line_t;

/* Carry the block-comment state across one line [p, end). String and character literals are
 * skipped whole, so a comment opener inside inline PTX text does not count. */
static int comment_after(const char *p, const char *end, int in_comment) {
    while (p < end) {
        if (in_comment) {
            if (p + 1 < end && p[0] == '*' && p[1] == '/') {
                in_comment = 0;
                p += 2;
            } else {
                p++;
            }
        } else if (p + 1 < end && p[0] == '/' && p[1] == '*') {
            in_comment = 1;
            p += 2;
        } else if (p + 1 < end && p[0] == '/' && p[1] == '/') {
            return 0;
        } else if (*p == '"' || *p == '\'') {
            char quote = *p++;
            while (p < end && *p != quote && *p != '\n')
                p += (*p == '\\' && p + 1 < end) ? 2 : 1;
            p++;
        } else {
            p++;
        }
    }
    return in_comment;
}

/* `#include "NAME"` at [p, end), into name; 1 if the line is one. */
static int include_name(const char *p, const char *end, char *name, size_t namesz) {
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || *p++ != '#')
        return 0;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if ((size_t)(end - p) < 7 || strncmp(p, "include", 7) != 0)
        return 0;
    p += 7;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || *p++ != '"')
        return 0;
    const char *q = p;
    while (q < end && *q != '"' && *q != '\n')
        q++;
    if (q == end || *q != '"' || q == p || (size_t)(q - p) >= namesz)
        return 0;
    snprintf(name, namesz, "%.*s", (int)(q - p), p);
    return 1;
}

/* The next include line of `text` at or after *pos; 1 if one was found. */
static int next_include(const char *text, size_t *pos, int *in_comment, include_line_t *inc) {
    while (text[*pos]) {
        const char *start = text + *pos;
        const char *nl = strchr(start, '\n');
        const char *end = nl ? nl + 1 : start + strlen(start);
        int was_in = *in_comment;
        *in_comment = comment_after(start, end, was_in);
        *pos = (size_t)(end - text);
        if (!was_in && include_name(start, end, inc->name, sizeof(inc->name))) {
            inc->start = (size_t)(start - text);
            inc->end = *pos;
            return 1;
        }
    }
    return 0;
}

/* The header of an include name, or NULL; a name that is not a plain relative path is never
 * asked for, so no resolver sees "../x" or "/etc/x". */
static const jit__device_file_t *resolve_name(const char *name, jit__cli_resolve_fn resolve,
                                              void *user) {
    return jit__cli_out_path_ok(name) ? resolve(name, user) : NULL;
}

static int listed(const jit__device_file_t *const *list, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i]->name, name))
            return 1;
    return 0;
}

static int collect(const char *text, const char *from, jit__cli_resolve_fn resolve, void *user,
                   int strict, const jit__device_file_t **out, size_t max, size_t *n) {
    size_t pos = 0;
    int in_comment = 0;
    include_line_t inc;
    while (next_include(text, &pos, &in_comment, &inc)) {
        if (listed(out, *n, inc.name))
            continue;
        const jit__device_file_t *h = resolve_name(inc.name, resolve, user);
        if (!h && strict) {
            jit__cli_error("%s includes \"%s\", which cannot be used (a header must be a file "
                           "under the directory, named by a relative path)",
                           from, inc.name);
            return JIT_CLI_FAILED;
        }
        if (!h)
            continue;
        if (*n == max) {
            jit__cli_error("%s: more than %zu headers", from, max);
            return JIT_CLI_FAILED;
        }
        out[(*n)++] = h;
        int rc = collect(h->text, h->name, resolve, user, strict, out, max, n);
        if (rc)
            return rc;
    }
    return 0;
}

int jit__cli_unit_headers(const char *source, jit__cli_resolve_fn resolve, void *user, int strict,
                          const jit__device_file_t **out, size_t max, size_t *n) {
    *n = 0;
    return collect(source, "kernel.cu", resolve, user, strict, out, max, n);
}

typedef struct inliner {
    jit__sb_t sb;
    jit__cli_resolve_fn resolve;
    void *user;
    const char *seen[JIT_MAX_DEVICE_FILES];
    size_t n_seen;
} inliner_t;

static void inline_text(inliner_t *in, const char *text) {
    size_t pos = 0, done = 0;
    int in_comment = 0;
    include_line_t inc;
    while (next_include(text, &pos, &in_comment, &inc)) {
        jit__sb_appendn(&in->sb, text + done, inc.start - done);
        done = inc.end;
        const jit__device_file_t *h = resolve_name(inc.name, in->resolve, in->user);
        int seen = 0;
        for (size_t i = 0; h && i < in->n_seen; i++)
            seen |= !strcmp(in->seen[i], h->name);
        if (!h || (!seen && in->n_seen == JIT_MAX_DEVICE_FILES)) {
            jit__sb_appendn(&in->sb, text + inc.start, inc.end - inc.start);
        } else if (seen) {
            jit__sb_printf(&in->sb, "/* #include \"%s\": inlined above */\n", h->name);
        } else {
            in->seen[in->n_seen++] = h->name;
            jit__sb_printf(&in->sb, "/* ==== #include \"%s\", inlined ==== */\n", h->name);
            inline_text(in, h->text);
            if (h->size && h->text[h->size - 1] != '\n')
                jit__sb_append(&in->sb, "\n");
            jit__sb_printf(&in->sb, "/* ==== end of \"%s\" ==== */\n", h->name);
        }
    }
    jit__sb_append(&in->sb, text + done);
}

char *jit__cli_unit_inline(const char *source, jit__cli_resolve_fn resolve, void *user) {
    inliner_t in;
    memset(&in, 0, sizeof(in));
    jit__sb_init(&in.sb);
    in.resolve = resolve;
    in.user = user;
    inline_text(&in, source);
    return jit__sb_take(&in.sb);
}

const jit__device_file_t *jit__cli_embedded_header(const char *name, void *user) {
    (void)user;
    return jit__device_file(name);
}
