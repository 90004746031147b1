/*
 * Every planner at every SM count from 1 to 1024, on every arch profile: planning a problem
 * either succeeds or fails with a status and a message (never a signal), and whether it succeeds
 * does not depend on the SM count; a plan's cluster and grid are at least 1 and consistent (the
 * grid a whole number of clusters, and no larger than the SM count where the family promises a
 * grid of at most one CTA per SM); and a planned problem generates at a few SM counts. The
 * problems cover each op, each dtype and scale combination the descriptor names, and every token
 * band, from decode (M = 1) to the open last band.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "fp8_mma_sync/fp8_mma_sync.h"
#include "fp8_wgmma/fp8_wgmma.h"
#include "key.h"
#include "plan.h"
#include "tcgen05/tcgen05.h"
#include "tcgen05/launch.h"

#define MAX_SMS 1024

typedef struct dtypes {
    jit_dtype_t a, b, out;
    jit_scale_mode_t scales;
} dtypes_t;

/* Row-scaled FP8, then every block-scaled format: MXFP8 (E4M3 and E5M2, BF16 and FP32 out),
 * MXFP4, NVFP4, FP4 with UE5M3 scales (both vector sizes), and FP8 x FP4 either way round. */
static const dtypes_t k_dtypes[] = {
    {JIT_DTYPE_E4M3, JIT_DTYPE_E4M3, JIT_DTYPE_BF16, JIT_SCALE_ROW},
    {JIT_DTYPE_E4M3, JIT_DTYPE_E4M3, JIT_DTYPE_BF16, JIT_SCALE_UE8M0_32},
    {JIT_DTYPE_E5M2, JIT_DTYPE_E4M3, JIT_DTYPE_F32, JIT_SCALE_UE8M0_32},
    {JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_DTYPE_BF16, JIT_SCALE_UE8M0_32},
    {JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_DTYPE_BF16, JIT_SCALE_UE4M3_16},
    {JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_DTYPE_BF16, JIT_SCALE_UE5M3_16},
    {JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_DTYPE_F32, JIT_SCALE_UE5M3_32},
    {JIT_DTYPE_E4M3, JIT_DTYPE_E2M1, JIT_DTYPE_BF16, JIT_SCALE_UE8M0_32},
    {JIT_DTYPE_E2M1, JIT_DTYPE_E4M3, JIT_DTYPE_BF16, JIT_SCALE_UE8M0_32},
};
#define N_DTYPES (sizeof(k_dtypes) / sizeof(k_dtypes[0]))

static const jit_epilogue_t k_ops[] = {JIT_EPILOGUE_LINEAR, JIT_EPILOGUE_LINEAR_ADD,
                                       JIT_EPILOGUE_LINEAR_SWIGLU};
#define N_OPS (sizeof(k_ops) / sizeof(k_ops[0]))

/* A projection-sized shape and a narrow one (fewer N tiles than most SM counts). K is a
 * multiple of 128 so that every format's K rule holds. */
static const int64_t k_shapes[][2] = {{5120, 5120}, {192, 1024}};
#define N_SHAPES (sizeof(k_shapes) / sizeof(k_shapes[0]))

/* "": the registry's own choice; else only that family (JITGEMM_FAMILY), so that a family the
 * registry would not pick on an arch (mma.sync on sm_90a) is planned too. */
static const char *const k_family_modes[] = {"", "fp8_wgmma", "fp8_mma_sync",
                                             "tcgen05_blockscaled"};
#define N_MODES (sizeof(k_family_modes) / sizeof(k_family_modes[0]))

static void set_family(const char *mode) {
    if (*mode)
        setenv("JITGEMM_FAMILY", mode, 1);
    else
        unsetenv("JITGEMM_FAMILY");
}

static jit__gemm_spec_t spec_of(const dtypes_t *t, jit_epilogue_t op, const int64_t shape[2]) {
    jit__gemm_spec_t s = {.n = shape[0],
                          .k = shape[1],
                          .a = t->a,
                          .b = t->b,
                          .out = t->out,
                          .scales = t->scales,
                          .epilogue = op};
    return s;
}

/* Where a check is, spelled out only when it fails (building the text for every plan would
 * cost more than planning). */
typedef struct where {
    const jit__arch_profile_t *arch;
    const char *mode;
    const jit__gemm_spec_t *spec;
    int band, sms;
    const jit__tc_variant_t *variant; /* NULL unless a forced tcgen05 variant */
} where_t;

static const char *where_text(const where_t *w) {
    static char buf[320];
    const jit__gemm_spec_t *s = w->spec;
    int len = snprintf(
        buf, sizeof(buf), "%s family '%s' %s x %s -> %s %s %s n=%lld k=%lld band %d, %d SMs",
        w->arch->name, w->mode, jit_dtype_name(s->a), jit_dtype_name(s->b), jit_dtype_name(s->out),
        jit_scale_mode_name(s->scales), jit_epilogue_name(s->epilogue), (long long)s->n,
        (long long)s->k, w->band, w->sms);
    if (w->variant && len > 0 && (size_t)len < sizeof(buf))
        snprintf(buf + len, sizeof(buf) - (size_t)len, ", cta_group %d tile_n %d breuse %d",
                 w->variant->cta_group, w->variant->tile_n, w->variant->breuse);
    return buf;
}

#define WHAT where_text(w)

/* The M a band's kernel must serve that the checks below launch at: its ends (the open band
 * at 2^20) and its model M. */
static void band_ms(int band, int64_t m[3]) {
    int64_t lo, hi;
    jit__token_band_range(band, &lo, &hi);
    m[0] = lo;
    m[1] = jit__token_band_model_m(band);
    m[2] = hi == INT64_MAX ? (int64_t)1 << 20 : hi;
}

static void check_wgmma(const jit__plan_t *p, const where_t *w) {
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(p);
    cr_assert(wp->cluster == 1 || wp->cluster == 2, "%s: cluster %d", WHAT, wp->cluster);
    cr_assert_eq(p->cluster_m, wp->cluster, "%s", WHAT);
    cr_assert_leq(wp->cluster, p->sm_count, "%s: a cluster of %d on %d SMs is never resident", WHAT,
                  wp->cluster, p->sm_count);
    int64_t ms[3];
    band_ms(p->token_band, ms);
    for (int i = 0; i < 3; i++) {
        if (wp->route == JIT_WGMMA_DECODE) {
            /* One CTA per work unit, not bounded by the SM count. */
            cr_assert_geq(jit__wgmma_grid(p, ms[i], 0), 1u, "%s: decode grid at M=%lld", WHAT,
                          (long long)ms[i]);
            continue;
        }
        /* The persistent grid: at most one CTA per SM, whole clusters; and so too when the
         * driver says fewer clusters are co-resident (down to one). */
        const int limits[] = {0, 1, p->sm_count / wp->cluster};
        for (int l = 0; l < 3; l++) {
            unsigned g = jit__wgmma_grid(p, ms[i], limits[l]);
            cr_assert_geq(g, 1u, "%s: grid 0 at M=%lld", WHAT, (long long)ms[i]);
            cr_assert_eq(g % (unsigned)wp->cluster, 0u, "%s: grid %u, cluster %d", WHAT, g,
                         wp->cluster);
            cr_assert_leq(g, (unsigned)p->sm_count, "%s: grid %u at M=%lld", WHAT, g,
                          (long long)ms[i]);
        }
    }
}

static void check_mma_sync(const jit__plan_t *p, const where_t *w) {
    cr_assert_eq(p->cluster_m * p->cluster_n, 1, "%s", WHAT);
    int64_t ms[3];
    band_ms(p->token_band, ms);
    for (int i = 0; i < 3; i++) {
        unsigned grid[3];
        jit__mma_sync_grid(p, ms[i], grid);
        cr_assert(grid[0] >= 1 && grid[1] >= 1 && grid[2] >= 1, "%s: grid %ux%ux%u", WHAT, grid[0],
                  grid[1], grid[2]);
    }
}

static void check_tcgen05(const jit__plan_t *p, const where_t *w) {
    const jit__tc_plan_t *tc = jit__tc_of(p);
    const jit__tc_grid_t *g = &tc->grid;
    int psize = p->cluster_m * p->cluster_n;
    int fsize = p->fallback_cluster_m ? p->fallback_cluster_m * p->fallback_cluster_n : psize;
    cr_assert_leq(psize, p->sm_count, "%s: a %dx%d cluster on %d SMs", WHAT, p->cluster_m,
                  p->cluster_n, p->sm_count);
    cr_assert_eq(psize % fsize, 0, "%s: preferred %d, fallback %d", WHAT, psize, fsize);
    cr_assert_eq(g->x, p->cluster_m, "%s", WHAT);
    cr_assert_eq(g->y, p->cluster_n, "%s", WHAT);
    cr_assert_geq(g->z, 1, "%s: no preferred cluster", WHAT);
    cr_assert_eq(g->split_factor, psize / fsize, "%s", WHAT);
    /* The estimate: fallback capacity in whole fallback clusters, within the SMs, holding the
     * preferred clusters and the fallback clusters beside them in whole groups. */
    cr_assert_leq(g->fallback_capacity, p->sm_count, "%s", WHAT);
    cr_assert_eq(g->fallback_capacity % fsize, 0, "%s", WHAT);
    cr_assert_geq(g->fallback_clusters, 0, "%s", WHAT);
    cr_assert_leq(g->z * psize + g->fallback_clusters * fsize, g->fallback_capacity, "%s", WHAT);
    cr_assert(g->fallback_groups_whole, "%s: %d fallback clusters in groups of %d", WHAT,
              g->fallback_clusters, g->split_factor);
    /* The launch sized as jit_gemm sizes it, for a device whose occupancy is one CTA per SM:
     * every cluster shape the plan names fits, and the grid does too. */
    jit__tc_launch_dims_t dims;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__tc_launch_dims(p, p->sm_count / psize, p->sm_count / fsize, &dims, &d),
                 JIT_OK, "%s: %s", WHAT, d.msg);
    unsigned ctas = dims.grid[0] * dims.grid[1] * dims.grid[2];
    cr_assert(ctas >= 1 && ctas <= (unsigned)p->sm_count, "%s: %u CTAs", WHAT, ctas);
    unsigned csize = dims.cluster[0] * dims.cluster[1] * dims.cluster[2];
    cr_assert(csize >= 1 && ctas % csize == 0, "%s: %u CTAs, cluster %u", WHAT, ctas, csize);
}

/* What every plan promises, then its family's grid. */
static void check_plan(const jit__plan_t *p, int sms, const where_t *w) {
    cr_assert_eq(p->sm_count, sms, "%s", WHAT);
    cr_assert(p->tile_m >= 1 && p->tile_n >= 1 && p->tile_k >= 1, "%s", WHAT);
    cr_assert(p->stages >= 1 && p->threads >= 1, "%s", WHAT);
    cr_assert_leq(p->smem_bytes, p->arch->smem_per_cta, "%s", WHAT);
    cr_assert(p->cluster_m >= 1 && p->cluster_n >= 1, "%s: cluster %dx%d", WHAT, p->cluster_m,
              p->cluster_n);
    cr_assert((p->fallback_cluster_m == 0) == (p->fallback_cluster_n == 0), "%s", WHAT);
    if (p->n_candidates > 0)
        cr_assert(p->chosen >= 0 && p->chosen < p->n_candidates, "%s", WHAT);
    if (p->family == &jit__family_fp8_wgmma)
        check_wgmma(p, w);
    else if (p->family == &jit__family_fp8_mma_sync)
        check_mma_sync(p, w);
    else if (p->family == &jit__family_tcgen05)
        check_tcgen05(p, w);
    else
        cr_assert_fail("%s: unknown family %s", WHAT, p->family ? p->family->name : "(none)");
}

/* The key (which runs the generator to hash the code) and the source, for the arch's native
 * target. */
static void check_generates(const jit__plan_t *p, const where_t *w) {
    jit__key_t key;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__key_make(p, p->arch->native_target, 0, &key, &d), JIT_OK, "%s: %s", WHAT,
                 d.msg);
    char *src = NULL;
    cr_assert_eq(jit__generate(p, &key, &src, &d), JIT_OK, "%s: %s", WHAT, d.msg);
    cr_assert(src && strstr(src, "__global__"), "%s", WHAT);
    free(src);
    jit__diag_clear(&d);
}

typedef struct tally {
    long planned, refused, generated;
} tally_t;

static const int k_gen_sms[] = {1, 2, 3, 7, 132, MAX_SMS};

/* The SM count after `sms`: every one for a problem that plans; for one refused at the default
 * count, 1 to 16 and then every eighth (a refusal comes before the SM count is read, so a dense
 * sweep of refusals would only cost time). */
static int next_sm_count(int sms, int planned) {
    return planned || sms < 16 ? sms + 1 : sms + 8;
}

/* One (arch, family mode, spec, band) over every SM count. */
static void sweep(const jit__arch_profile_t *arch, const char *mode, const jit__gemm_spec_t *s,
                  int band, tally_t *t) {
    jit__plan_t *p = malloc(sizeof(*p));
    cr_assert_not_null(p);
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t ref = jit__plan_make(s, band, arch->default_sm_count, arch, p, &d);
    cr_assert(ref == JIT_OK || d.msg[0], "%s: status %d without a message",
              where_text(&(where_t){arch, mode, s, band, arch->default_sm_count, NULL}), (int)ref);
    jit__diag_clear(&d);
    for (int sms = 1; sms <= MAX_SMS; sms = next_sm_count(sms, ref == JIT_OK)) {
        jit__diag_init(&d);
        jit_status_t st = jit__plan_make(s, band, sms, arch, p, &d);
        const where_t here = {arch, mode, s, band, sms, NULL}, *w = &here;
        /* The SM count sizes a plan; it never decides whether there is one. */
        cr_assert_eq(st, ref, "%s: status %s, %s at %d SMs (%s)", WHAT, jit_status_name(st),
                     jit_status_name(ref), arch->default_sm_count, d.msg);
        if (st != JIT_OK) {
            cr_assert(d.msg[0], "%s: %s without a message", WHAT, jit_status_name(st));
            t->refused++;
            jit__diag_clear(&d);
            continue;
        }
        t->planned++;
        check_plan(p, sms, w);
        for (size_t g = 0; g < sizeof(k_gen_sms) / sizeof(k_gen_sms[0]); g++)
            if (k_gen_sms[g] == sms && s->n == k_shapes[0][0] && band % 2 == 0) {
                check_generates(p, w);
                t->generated++;
            }
        jit__diag_clear(&d);
    }
    free(p);
}

/* The family the registry picks for a spec and band at the arch's default SM count, or NULL. */
static const jit__family_t *default_family(const jit__arch_profile_t *arch,
                                           const jit__gemm_spec_t *s, int band, jit__plan_t *p) {
    jit__diag_t d;
    jit__diag_init(&d);
    unsetenv("JITGEMM_FAMILY");
    jit_status_t st = jit__plan_make(s, band, arch->default_sm_count, arch, p, &d);
    jit__diag_clear(&d);
    return st == JIT_OK ? p->family : NULL;
}

static void sweep_arch(const char *name) {
    const jit__arch_profile_t *arch = jit__arch_find(name);
    cr_assert_not_null(arch, "%s", name);
    jit__plan_t *p = malloc(sizeof(*p));
    cr_assert_not_null(p);
    tally_t t = {0, 0, 0};
    for (size_t i = 0; i < N_DTYPES; i++)
        for (size_t o = 0; o < N_OPS; o++)
            for (size_t sh = 0; sh < N_SHAPES; sh++)
                for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
                    jit__gemm_spec_t s = spec_of(&k_dtypes[i], k_ops[o], k_shapes[sh]);
                    const jit__family_t *chosen = default_family(arch, &s, band, p);
                    for (size_t m = 0; m < N_MODES; m++) {
                        /* Forcing the family the registry picks anyway plans the same. */
                        if (*k_family_modes[m] && chosen &&
                            strcmp(chosen->name, k_family_modes[m]) == 0)
                            continue;
                        set_family(k_family_modes[m]);
                        sweep(arch, k_family_modes[m], &s, band, &t);
                    }
                }
    unsetenv("JITGEMM_FAMILY");
    free(p);
    /* Each arch plans something with some family, so the sweep checked real plans. */
    cr_assert_gt(t.planned, 0, "%s: nothing planned", name);
    cr_assert_gt(t.generated, 0, "%s: nothing generated", name);
    cr_log_info("%s: %ld plans checked, %ld refusals, %ld sources generated", name, t.planned,
                t.refused, t.generated);
}

/* One test per arch row of jit/arch.c, so a failure names its arch; the last test checks that
 * no row was left out. */
static const char *const k_archs[] = {"sm_90a", "sm_100a", "sm_103a", "sm_107a", "sm_120a"};

Test(plan_sm_counts, sm_90a) {
    sweep_arch("sm_90a");
}

Test(plan_sm_counts, sm_100a) {
    sweep_arch("sm_100a");
}

Test(plan_sm_counts, sm_103a) {
    sweep_arch("sm_103a");
}

Test(plan_sm_counts, sm_107a) {
    sweep_arch("sm_107a");
}

Test(plan_sm_counts, sm_120a) {
    sweep_arch("sm_120a");
}

Test(plan_sm_counts, every_arch_row_is_swept) {
    int n;
    const jit__arch_profile_t *all = jit__arch_all(&n);
    cr_assert_eq((size_t)n, sizeof(k_archs) / sizeof(k_archs[0]),
                 "jit/arch.c has %d rows; add the new one to this test", n);
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (size_t j = 0; j < sizeof(k_archs) / sizeof(k_archs[0]); j++)
            found |= strcmp(all[i].name, k_archs[j]) == 0;
        cr_assert(found, "%s is not swept", all[i].name);
    }
}

/* The forced tcgen05 variants (the compile matrix plans them): a CTA pair needs two SMs, and is
 * refused with a message on one; otherwise a variant plans at every SM count exactly when it
 * plans at 64, with a consistent grid. */
static void sweep_variant(const jit__arch_profile_t *arch, const jit__gemm_spec_t *s, int band,
                          const jit__tc_variant_t *v, jit__plan_t *p, long *planned) {
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t ref = jit__plan_tc_make_variant(s, band, 64, arch, v, p, &d);
    jit__diag_clear(&d);
    for (int sms = 1; sms <= 64; sms++) {
        jit__diag_init(&d);
        jit_status_t st = jit__plan_tc_make_variant(s, band, sms, arch, v, p, &d);
        const where_t here = {arch, "tcgen05 variant", s, band, sms, v}, *w = &here;
        if (v->cta_group == 2 && sms < 2) {
            cr_assert_eq(st, JIT_PLAN_FAILED, "%s: %s", WHAT, jit_status_name(st));
            cr_assert(strstr(d.msg, "2 SMs"), "%s: %s", WHAT, d.msg);
        } else {
            cr_assert_eq(st, ref, "%s: %s (%s)", WHAT, jit_status_name(st), d.msg);
            cr_assert(st == JIT_OK || d.msg[0], "%s: %s without a message", WHAT,
                      jit_status_name(st));
        }
        if (st == JIT_OK) {
            check_tcgen05(p, w);
            (*planned)++;
        }
        jit__diag_clear(&d);
    }
}

Test(plan_sm_counts, tcgen05_forced_variants) {
    static const char *const archs[] = {"sm_100a", "sm_107a"};
    static const int tiles[] = {64, 128, 192, 256};
    jit__gemm_spec_t s = spec_of(&k_dtypes[4], JIT_EPILOGUE_LINEAR, k_shapes[0]);
    jit__plan_t *p = malloc(sizeof(*p));
    cr_assert_not_null(p);
    long planned = 0;
    for (size_t a = 0; a < sizeof(archs) / sizeof(archs[0]); a++)
        for (int cg = 1; cg <= 2; cg++)
            for (size_t ti = 0; ti < sizeof(tiles) / sizeof(tiles[0]); ti++)
                for (int br = -1; br <= 1; br += 2)
                    for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
                        jit__tc_variant_t v = {cg, tiles[ti], br};
                        sweep_variant(jit__arch_find(archs[a]), &s, band, &v, p, &planned);
                    }
    free(p);
    cr_assert_gt(planned, 0);
}
