/*
 * A growable NUL-terminated string, used by the code generators, the key builder and the
 * manifest. Allocation failure is sticky: later appends do nothing and jit__sb_failed() is true,
 * so generators can append freely and check once at the end.
 */
#ifndef JIT_STRBUF_H
#define JIT_STRBUF_H

#include <stddef.h>

typedef struct jit__sb {
    char *buf;
    size_t len, cap;
    int failed;
} jit__sb_t;

void jit__sb_init(jit__sb_t *sb);
void jit__sb_free(jit__sb_t *sb);
void jit__sb_append(jit__sb_t *sb, const char *s);
void jit__sb_appendn(jit__sb_t *sb, const char *s, size_t n);
void jit__sb_printf(jit__sb_t *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append `indent` levels of four spaces, then the formatted text, then a newline. */
void jit__sb_line(jit__sb_t *sb, int indent, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Append text that goes inside a block comment (a key, a plan's reason): a stray comment
 * terminator would end the comment early, so each one gets a space written after it. */
void jit__sb_append_comment_safe(jit__sb_t *sb, const char *text);
int jit__sb_failed(const jit__sb_t *sb);
/* Hand the buffer to the caller (free with free()); the builder is reset. NULL on failure. */
char *jit__sb_take(jit__sb_t *sb);

#endif
