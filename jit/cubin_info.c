/* Reading EIATTR records out of a cubin's .nv.info section. */
#include "cubin_info.h"

#include <stdint.h>
#include <string.h>

/* Attribute records: u8 format, u8 attribute, u16 size (or a 16-bit value for format 3),
 * then `size` bytes for format 4 (EIFMT_SVAL). The two we read hold (symbol index, value). */
#define EIFMT_SVAL 4
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_REGCOUNT 0x2f

static uint16_t rd16(const unsigned char *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) {
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

int jit__cubin_resources(const void *cubin, size_t size, int *registers, int *frame_bytes) {
    const unsigned char *b = cubin;
    *registers = 0;
    *frame_bytes = 0;
    /* 64-bit little-endian ELF only: that is what every cubin of sm_50 and later is. */
    if (size < 64 || memcmp(b, "\177ELF", 4) != 0 || b[4] != 2 || b[5] != 1)
        return -1;
    uint64_t shoff = rd64(b + 0x28);
    uint16_t shentsize = rd16(b + 0x3A), shnum = rd16(b + 0x3C), shstrndx = rd16(b + 0x3E);
    if (shentsize < 64 || shstrndx >= shnum || shoff > size ||
        (uint64_t)shnum * shentsize > size - shoff)
        return -1;
    const unsigned char *strtab_hdr = b + shoff + (size_t)shstrndx * shentsize;
    uint64_t str_off = rd64(strtab_hdr + 0x18), str_size = rd64(strtab_hdr + 0x20);
    if (str_off > size || str_size > size - str_off)
        return -1;
    int found = 0;
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *sh = b + shoff + (size_t)i * shentsize;
        uint32_t name = rd32(sh);
        uint64_t off = rd64(sh + 0x18), len = rd64(sh + 0x20);
        if (name >= str_size || off > size || len > size - off)
            continue;
        const char *sname = (const char *)b + str_off + name;
        if (strnlen(sname, str_size - name) != 8 || memcmp(sname, ".nv.info", 8) != 0)
            continue;
        const unsigned char *p = b + off, *end = b + off + len;
        while (p + 4 <= end) {
            unsigned fmt = p[0], attr = p[1], n = rd16(p + 2);
            if (fmt != EIFMT_SVAL) {
                p += 4;
                continue;
            }
            if (p + 4 + n > end)
                break;
            if (n == 8 && (attr == EIATTR_REGCOUNT || attr == EIATTR_FRAME_SIZE)) {
                int v = (int)rd32(p + 8);
                if (attr == EIATTR_REGCOUNT && v > *registers) {
                    *registers = v;
                    found = 1;
                }
                if (attr == EIATTR_FRAME_SIZE && v > *frame_bytes)
                    *frame_bytes = v;
            }
            p += 4 + n;
        }
    }
    return found ? 0 : -1;
}
