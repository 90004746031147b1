/*
 * Text from files printed on a terminal. A cache's names come from sidecars and archives that
 * someone else may have written (an imported archive, a shared layer, a file put in kernels/),
 * and a terminal obeys the control bytes in what it is shown: an escape sequence in a kernel
 * name could set the window title, move the cursor over earlier lines, or on some terminals
 * write to the clipboard. So every such name is printed through jit__cli_escape: control bytes
 * (C0, DEL, the C1 range in UTF-8), invalid UTF-8 and the bidirectional controls that reorder
 * what a reader sees become \xNN, and a backslash becomes \\ so that the escaped text reads back
 * unambiguously. Printable UTF-8 passes unchanged.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if it is not one. */
static size_t utf8_length(const unsigned char *p, unsigned *cp) {
    size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 0;
    if (n == 0 || p[0] > 0xf4)
        return 0;
    unsigned v = p[0] & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3f);
    }
    static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0; /* overlong, out of range, or a surrogate */
    *cp = v;
    return n;
}

/* Code points a terminal acts on or that change how the text around them reads. */
static int unsafe_code_point(unsigned cp) {
    if (cp >= 0x80 && cp <= 0x9f)
        return 1; /* C1 controls: CSI, OSC, ... */
    if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
        return 1; /* bidirectional embeddings, overrides and isolates */
    return cp == 0x200e || cp == 0x200f || cp == 0x2028 || cp == 0x2029; /* marks, separators */
}

const char *jit__cli_escape(const char *s, char *out, size_t outsz) {
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p && outsz > 0) {
        char piece[20];
        size_t take = 1, plen;
        unsigned cp = 0;
        size_t n = *p >= 0x80 ? utf8_length(p, &cp) : 0;
        if (*p == '\\') {
            plen = (size_t)snprintf(piece, sizeof(piece), "\\\\");
        } else if (*p < 0x20 || *p == 0x7f) {
            plen = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", *p);
        } else if (*p < 0x80) {
            piece[0] = (char)*p;
            plen = 1;
        } else if (n && !unsafe_code_point(cp)) {
            memcpy(piece, p, n);
            plen = take = n;
        } else {
            take = n ? n : 1; /* every byte of an unsafe sequence, or the one bad byte */
            plen = 0;
            for (size_t i = 0; i < take; i++)
                plen += (size_t)snprintf(piece + plen, sizeof(piece) - plen, "\\x%02x", p[i]);
        }
        if (o + plen + 1 > outsz)
            break; /* cut before a piece, never inside one */
        memcpy(out + o, piece, plen);
        o += plen;
        p += take;
    }
    if (outsz > 0)
        out[o] = '\0';
    return out;
}
