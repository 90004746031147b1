/*
 * The shipping parts of each arch and their SM counts. docs/plan.md ("SM counts of the shipping
 * parts") gives the source of every row and what is left out: MIG slices (a slice is not a
 * part; prewarm its count with --target ARCH:N), parts whose count is not public (B100, every
 * Rubin part so far), and laptop and embedded parts. tests/test_arch_parts.c checks that the
 * page's table and this one agree row for row.
 */
#include "arch_parts.h"

#include <stdio.h>
#include <string.h>

static const jit__arch_part_t k_parts[] = {
    /* NVIDIA's H100 architecture whitepaper: SXM5 132 SMs, PCIe 114. The H200 and GH200 keep
     * the SXM5's configuration; H800 is the H100 with less NVLink bandwidth. H20: what CUDA
     * reports; NVIDIA publishes no SM count for it. */
    {"sm_90a", "H20", 78},
    {"sm_90a", "H100 PCIe", 114},
    {"sm_90a", "H100 SXM5", 132},
    {"sm_90a", "H800 SXM5", 132},
    {"sm_90a", "H200 SXM", 132},
    {"sm_90a", "GH200", 132},
    /* B200: 74 of each die's 80 SMs. GB200: what CUDA reports; NVIDIA's datasheets give no SM
     * count for either. */
    {"sm_100a", "B200", 148},
    {"sm_100a", "GB200", 152},
    /* Blackwell Ultra: NVIDIA gives 160 SMs for the whole chip; the parts enable fewer, and
     * these are what CUDA reports on them. */
    {"sm_103a", "B300", 148},
    {"sm_103a", "GB300", 152},
    /* NVIDIA's spec pages give CUDA cores; a Blackwell SM has 128 (the RTX Blackwell
     * architecture whitepaper, which also lists the RTX 5090 at 170 SMs and the RTX PRO 6000 at
     * 188). */
    {"sm_120a", "GeForce RTX 5050", 20},
    {"sm_120a", "GeForce RTX 5060", 30},
    {"sm_120a", "GeForce RTX 5060 Ti", 36},
    {"sm_120a", "GeForce RTX 5070", 48},
    {"sm_120a", "GeForce RTX 5070 Ti", 70},
    {"sm_120a", "RTX PRO 4000 Blackwell", 70},
    {"sm_120a", "RTX PRO 4500 Blackwell", 82},
    {"sm_120a", "GeForce RTX 5080", 84},
    {"sm_120a", "RTX PRO 5000 Blackwell", 110},
    {"sm_120a", "GeForce RTX 5090", 170},
    {"sm_120a", "RTX PRO 6000 Blackwell", 188},
};

#define N_PARTS ((int)(sizeof(k_parts) / sizeof(k_parts[0])))

const jit__arch_part_t *jit__arch_parts(int *count) {
    *count = N_PARTS;
    return k_parts;
}

int jit__arch_part_sm_counts(const jit__arch_profile_t *arch, int *out, int max) {
    /* Ascending by selection: the table is small, and a count is written once. */
    int n = 0, last = 0;
    for (;;) {
        int next = 0;
        for (int i = 0; i < N_PARTS; i++)
            if (arch && strcmp(k_parts[i].arch, arch->name) == 0 && k_parts[i].sm_count > last &&
                (next == 0 || k_parts[i].sm_count < next))
                next = k_parts[i].sm_count;
        if (next == 0)
            return n;
        if (n < max)
            out[n] = next;
        n++;
        last = next;
    }
}

const char *jit__arch_part_names(const jit__arch_profile_t *arch, int sm_count, char *out,
                                 size_t outsz) {
    size_t len = 0;
    if (outsz)
        out[0] = '\0';
    for (int i = 0; i < N_PARTS && arch; i++) {
        if (strcmp(k_parts[i].arch, arch->name) != 0 || k_parts[i].sm_count != sm_count)
            continue;
        int w = snprintf(out + len, outsz > len ? outsz - len : 0, "%s%s", len ? ", " : "",
                         k_parts[i].name);
        if (w < 0 || (size_t)w >= (outsz > len ? outsz - len : 0)) {
            /* No half names: the list ends with the last one that fit. */
            if (outsz > len)
                out[len] = '\0';
            break;
        }
        len += (size_t)w;
    }
    return out;
}
