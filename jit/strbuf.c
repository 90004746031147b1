/* A growable string with sticky allocation failure. */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jit__sb_init(jit__sb_t *sb) {
    memset(sb, 0, sizeof(*sb));
}

void jit__sb_free(jit__sb_t *sb) {
    free(sb->buf);
    jit__sb_init(sb);
}

static int sb_reserve(jit__sb_t *sb, size_t extra) {
    if (sb->failed)
        return 0;
    if (sb->len + extra + 1 <= sb->cap)
        return 1;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *p = realloc(sb->buf, cap);
    if (!p) {
        sb->failed = 1;
        return 0;
    }
    sb->buf = p;
    sb->cap = cap;
    return 1;
}

void jit__sb_appendn(jit__sb_t *sb, const char *s, size_t n) {
    if (!sb_reserve(sb, n))
        return;
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void jit__sb_append(jit__sb_t *sb, const char *s) {
    jit__sb_appendn(sb, s, strlen(s));
}

static void sb_vprintf(jit__sb_t *sb, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        sb->failed = 1;
        return;
    }
    if (!sb_reserve(sb, (size_t)n))
        return;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void jit__sb_printf(jit__sb_t *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void jit__sb_line(jit__sb_t *sb, int indent, const char *fmt, ...) {
    for (int i = 0; i < indent; i++)
        jit__sb_append(sb, "    ");
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(sb, fmt, ap);
    va_end(ap);
    jit__sb_append(sb, "\n");
}

int jit__sb_failed(const jit__sb_t *sb) {
    return sb->failed;
}

char *jit__sb_take(jit__sb_t *sb) {
    if (sb->failed) {
        jit__sb_free(sb);
        return NULL;
    }
    char *p = sb->buf;
    if (!p)
        p = calloc(1, 1);
    jit__sb_init(sb);
    return p;
}

void jit__sb_append_comment_safe(jit__sb_t *sb, const char *text) {
    for (const char *p = text; *p; p++) {
        jit__sb_appendn(sb, p, 1);
        if (p[0] == '*' && p[1] == '/')
            jit__sb_append(sb, " ");
    }
}
