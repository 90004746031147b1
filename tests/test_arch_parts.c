/*
 * The table of shipping parts and their SM counts (jit/arch_parts.c): it agrees row for row with
 * the one docs/plan.md publishes with its sources, every row names an arch profile, and the
 * distinct counts come out ascending and once each.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "arch_parts.h"
#include "support.h"

/* The section of docs/plan.md that holds the table, as a malloc'd string. */
static char *docs_section(void) {
    char *doc = jt_read_file(JITGEMM_SOURCE_DIR "/docs/plan.md", NULL);
    cr_assert_not_null(doc, "docs/plan.md");
    const char *start = strstr(doc, "\n## SM counts of the shipping parts\n");
    cr_assert_not_null(start, "docs/plan.md has no section 'SM counts of the shipping parts'");
    const char *end = strstr(start + 1, "\n## ");
    size_t len = end ? (size_t)(end - start) : strlen(start);
    char *out = malloc(len + 1);
    memcpy(out, start, len);
    out[len] = '\0';
    free(doc);
    return out;
}

Test(arch_parts, docs_table_is_the_code_table) {
    char *section = docs_section();
    int n;
    const jit__arch_part_t *parts = jit__arch_parts(&n);
    int row = 0;
    for (const char *line = section; (line = strstr(line, "\n| sm_")) != NULL; line++) {
        char arch[16], name[64];
        int sms = 0;
        cr_assert_eq(sscanf(line, "\n| %15[^ |] | %63[^|]| %d |", arch, name, &sms), 3,
                     "unreadable row: %.60s", line + 1);
        size_t len = strlen(name);
        while (len && name[len - 1] == ' ')
            name[--len] = '\0';
        cr_assert_lt(row, n, "docs/plan.md has more rows than jit/arch_parts.c: %s %s", arch, name);
        cr_expect_str_eq(arch, parts[row].arch, "row %d", row + 1);
        cr_expect_str_eq(name, parts[row].name, "row %d", row + 1);
        cr_expect_eq(sms, parts[row].sm_count, "row %d (%s)", row + 1, name);
        row++;
    }
    cr_expect_eq(row, n, "docs/plan.md lists %d parts, jit/arch_parts.c %d", row, n);
    free(section);
}

Test(arch_parts, every_row_names_a_profile_and_counts_are_distinct_and_ascending) {
    int n;
    const jit__arch_part_t *parts = jit__arch_parts(&n);
    cr_assert_gt(n, 0);
    for (int i = 0; i < n; i++) {
        cr_expect_not_null(jit__arch_find(parts[i].arch), "%s", parts[i].arch);
        cr_expect_gt(parts[i].sm_count, 0, "%s", parts[i].name);
    }
    int n_arch;
    const jit__arch_profile_t *all = jit__arch_all(&n_arch);
    for (int a = 0; a < n_arch; a++) {
        int counts[64];
        int k = jit__arch_part_sm_counts(&all[a], counts, 64);
        cr_assert_leq(k, 64);
        int rows = 0;
        for (int i = 0; i < n; i++)
            rows += strcmp(parts[i].arch, all[a].name) == 0;
        cr_expect_eq(k == 0, rows == 0, "%s", all[a].name);
        for (int i = 0; i < k; i++) {
            if (i > 0)
                cr_expect_gt(counts[i], counts[i - 1], "%s", all[a].name);
            /* Every count is some part's, and names at least that part. */
            char names[160];
            cr_expect_gt(strlen(jit__arch_part_names(&all[a], counts[i], names, sizeof(names))), 0,
                         "%s:%d", all[a].name, counts[i]);
        }
        /* Each part's count is among them. */
        for (int i = 0; i < n; i++) {
            if (strcmp(parts[i].arch, all[a].name) != 0)
                continue;
            int found = 0;
            for (int j = 0; j < k; j++)
                found |= counts[j] == parts[i].sm_count;
            cr_expect(found, "%s %s", parts[i].arch, parts[i].name);
        }
        /* An arch whose default SM count is a shipping part's plans the same kernels without
         * a device as on that part. */
        if (k > 0) {
            int found = 0;
            for (int j = 0; j < k; j++)
                found |= counts[j] == all[a].default_sm_count;
            cr_expect(found, "%s: default %d is no part's count", all[a].name,
                      all[a].default_sm_count);
        }
    }
}

Test(arch_parts, names_and_short_buffers) {
    const jit__arch_profile_t *hopper = jit__arch_find("sm_90a");
    char names[160];
    cr_expect_str_eq(jit__arch_part_names(hopper, 114, names, sizeof(names)), "H100 PCIe");
    cr_expect_str_eq(jit__arch_part_names(hopper, 132, names, sizeof(names)),
                     "H100 SXM5, H800 SXM5, H200 SXM, GH200");
    cr_expect_str_eq(jit__arch_part_names(hopper, 100, names, sizeof(names)), "");
    /* A buffer too small for every name keeps the names that fit, whole. */
    char small[21];
    cr_expect_str_eq(jit__arch_part_names(hopper, 132, small, sizeof(small)),
                     "H100 SXM5, H800 SXM5");
    cr_expect_str_eq(jit__arch_part_names(hopper, 132, small, sizeof(small) - 1), "H100 SXM5");
    int one;
    cr_expect_eq(jit__arch_part_sm_counts(hopper, &one, 1), 3, "three counts, one written");
    cr_expect_eq(one, 78);
    cr_expect_eq(jit__arch_part_sm_counts(NULL, &one, 1), 0);
}
