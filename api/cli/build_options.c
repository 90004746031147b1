/*
 * build-options.txt of a kernel directory (kernel_dir.h): how the library compiles kernel.cu
 * into a cubin, one "field value" line each, for a person to read and for `jitgemm rebuild` to
 * follow. The option lines are printed from jit__compile_options, the very table jit__compile
 * uses, so they cannot drift from what the library does; rebuild checks them against that table
 * again rather than passing them on, since it compiles through the library's own calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "kernel_dir.h"
#include "strbuf.h"

static void append_words(jit__sb_t *sb, const char *const *words, int n) {
    for (int i = 0; i < n; i++)
        jit__sb_printf(sb, "%s%s", i ? " " : "", words[i]);
    jit__sb_append(sb, "\n");
}

char *jit__cli_build_options_format(const jit__cli_build_options_t *b, const char *toolchain_note) {
    jit__compile_options_t o;
    if (jit__compile_options(b->target, &o) != 0)
        return NULL;
    jit__sb_t sb;
    jit__sb_init(&sb);
    jit__sb_append(&sb,
                   "# How the library compiles kernel.cu into its cubin. `jitgemm rebuild DIR`\n"
                   "# compiles DIR/kernel.cu through the library's own calls: NVRTC with these\n"
                   "# options and the headers under DIR handed over in memory, named by their\n"
                   "# #include paths, then nvJitLink with these options on NVRTC's output\n"
                   "# (`input`). The option lines are the library's for this target; rebuild\n"
                   "# refuses edited ones.\n");
    jit__sb_printf(&sb, "target    %s\n", b->target);
    jit__sb_printf(&sb, "kernel    %s\n", b->kernel);
    if (b->has_toolchain)
        jit__sb_printf(&sb, "toolchain nvrtc %d.%d nvjitlink %d.%d%s%s%s\n",
                       b->toolchain.nvrtc_major, b->toolchain.nvrtc_minor,
                       b->toolchain.nvjitlink_major, b->toolchain.nvjitlink_minor,
                       toolchain_note ? " (" : "", toolchain_note ? toolchain_note : "",
                       toolchain_note ? ")" : "");
    else
        jit__sb_append(&sb, "toolchain none found\n");
    jit__sb_append(&sb, "nvrtc     ");
    append_words(&sb, o.nvrtc, o.n_nvrtc);
    jit__sb_append(&sb, "nvjitlink ");
    append_words(&sb, o.link, o.n_link);
    jit__sb_printf(&sb, "input     %s\n", o.via_ptx ? "ptx" : "ltoir");
    return jit__sb_take(&sb);
}

/* 1 if the whitespace-separated words of `value` are exactly words[0..n). */
static int same_words(const char *value, const char *const *words, int n) {
    const char *p = value;
    for (int i = 0; i < n; i++) {
        p += strspn(p, " \t");
        size_t len = strcspn(p, " \t");
        if (len != strlen(words[i]) || strncmp(p, words[i], len) != 0)
            return 0;
        p += len;
    }
    return p[strspn(p, " \t")] == '\0';
}

static int valid_kernel_name(const char *s) {
    size_t n = strlen(s);
    return n > 0 && n < 64 &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
                     "0123456789") == n &&
           !(s[0] >= '0' && s[0] <= '9');
}

enum { F_TARGET, F_KERNEL, F_TOOLCHAIN, F_NVRTC, F_NVJITLINK, F_INPUT, N_FIELDS };
static const char *const k_fields[N_FIELDS] = {"target", "kernel",    "toolchain",
                                               "nvrtc",  "nvjitlink", "input"};

/* Split the text into the six fields' values (copies in vals, malloc'd); 0, or -1 and why. */
static int read_fields(const char *text, char *vals[N_FIELDS], char *why, size_t whysz) {
    int line_no = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        line_no++;
        const char *p = line + strspn(line, " \t");
        size_t word = strcspn(p, " \t\n");
        if (p < line + len && *p != '#') {
            int f = 0;
            while (f < N_FIELDS &&
                   (strlen(k_fields[f]) != word || strncmp(p, k_fields[f], word) != 0))
                f++;
            if (f == N_FIELDS || vals[f]) {
                snprintf(why, whysz, "line %d: %s field '%.*s'", line_no,
                         f == N_FIELDS ? "unknown" : "a second", (int)word, p);
                return -1;
            }
            const char *v = p + word;
            v += strspn(v, " \t");
            size_t vlen = (size_t)(line + len - v);
            while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t' || v[vlen - 1] == '\r'))
                vlen--;
            vals[f] = strndup(v, vlen);
            if (!vals[f]) {
                snprintf(why, whysz, "out of memory");
                return -1;
            }
        }
        line = nl ? nl + 1 : line + len;
    }
    for (int f = 0; f < N_FIELDS; f++)
        if (!vals[f] && f != F_TOOLCHAIN) {
            snprintf(why, whysz, "no '%s' line", k_fields[f]);
            return -1;
        }
    return 0;
}

/* Check the fields against the library's options for the target, filling b. */
static int check_fields(char *const vals[N_FIELDS], jit__cli_build_options_t *b, char *why,
                        size_t whysz) {
    jit__compile_options_t o;
    if (strlen(vals[F_TARGET]) >= sizeof(b->target) || jit__compile_options(vals[F_TARGET], &o)) {
        snprintf(why, whysz, "target '%s' is not a compile target (sm_90a, sm_100f, ...)",
                 vals[F_TARGET]);
        return -1;
    }
    snprintf(b->target, sizeof(b->target), "%s", vals[F_TARGET]);
    if (!valid_kernel_name(vals[F_KERNEL])) {
        snprintf(why, whysz, "kernel '%s' is not a C identifier", vals[F_KERNEL]);
        return -1;
    }
    snprintf(b->kernel, sizeof(b->kernel), "%s", vals[F_KERNEL]);
    const char *input = o.via_ptx ? "ptx" : "ltoir";
    const char *bad = !same_words(vals[F_NVRTC], o.nvrtc, o.n_nvrtc)     ? "nvrtc"
                      : !same_words(vals[F_NVJITLINK], o.link, o.n_link) ? "nvjitlink"
                      : strcmp(vals[F_INPUT], input) != 0                ? "input"
                                                                         : NULL;
    if (bad) {
        snprintf(why, whysz,
                 "its '%s' line is not what this library uses for %s; rebuild compiles "
                 "only as the library does (write the file again with jitgemm inspect --out)",
                 bad, b->target);
        return -1;
    }
    jit__toolchain_id_t *t = &b->toolchain;
    b->has_toolchain = vals[F_TOOLCHAIN] &&
                       sscanf(vals[F_TOOLCHAIN], "nvrtc %d.%d nvjitlink %d.%d", &t->nvrtc_major,
                              &t->nvrtc_minor, &t->nvjitlink_major, &t->nvjitlink_minor) == 4;
    return 0;
}

int jit__cli_build_options_parse(const char *text, jit__cli_build_options_t *b, char *why,
                                 size_t whysz) {
    memset(b, 0, sizeof(*b));
    char *vals[N_FIELDS] = {0};
    int rc = read_fields(text, vals, why, whysz);
    if (rc == 0)
        rc = check_fields(vals, b, why, whysz);
    for (int f = 0; f < N_FIELDS; f++)
        free(vals[f]);
    return rc;
}
