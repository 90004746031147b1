/* The FP8 mma.sync family's planner and the spec checks shared by every family. On sm_120a
 * (mma.sync is its only FP8 path) every row-scaled problem goes to this family. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "families.h"
#include "family.h"
#include "fp8_mma_sync/fp8_mma_sync.h"
#include "plan.h"

static jit__gemm_spec_t row_spec(int64_t n, int64_t k, jit_epilogue_t epi) {
    jit__gemm_spec_t s = {.n = n,
                          .k = k,
                          .a = JIT_DTYPE_E4M3,
                          .b = JIT_DTYPE_E4M3,
                          .out = JIT_DTYPE_BF16,
                          .scales = JIT_SCALE_ROW,
                          .epilogue = epi};
    return s;
}

static jit_status_t plan(const jit__gemm_spec_t *s, int band, const char *arch, jit__plan_t *p,
                         jit__diag_t *d) {
    jit__diag_init(d);
    return jit__plan_make(s, band, 132, jit__arch_find(arch), p, d);
}

Test(plan, mma_sync_table_per_band) {
    const int expect[JIT_TOKEN_BANDS][5] = {{16, 64, 1, 4, 4},
                                            {32, 128, 1, 4, 3},
                                            {64, 128, 2, 4, 2},
                                            {64, 128, 2, 4, 2},
                                            {64, 128, 2, 4, 2},
                                            {128, 128, 2, 4, 2}};
    jit__gemm_spec_t s = row_spec(5120, 5120, JIT_EPILOGUE_LINEAR);
    for (int b = 0; b < JIT_TOKEN_BANDS; b++) {
        jit__plan_t p;
        jit__diag_t d;
        cr_assert_eq(plan(&s, b, "sm_120a", &p, &d), JIT_OK, "%s", d.msg);
        cr_assert_eq(p.family, &jit__family_fp8_mma_sync);
        const jit__mma_sync_plan_t *mp = jit__mma_sync_cof(&p);
        cr_assert_eq(p.tile_m, expect[b][0]);
        cr_assert_eq(p.tile_n, expect[b][1]);
        cr_assert_eq(mp->warps_m, expect[b][2]);
        cr_assert_eq(mp->warps_n, expect[b][3]);
        cr_assert_eq(p.stages, expect[b][4]);
        cr_assert_eq(p.threads, 32 * mp->warps_m * mp->warps_n);
        cr_assert_eq(p.smem_bytes, (uint32_t)(p.stages * (p.tile_m + p.tile_n) * 128));
    }
}

Test(plan, every_arch_plans_the_mma_sync_route) {
    int n;
    const jit__arch_profile_t *all = jit__arch_all(&n);
    jit__gemm_spec_t s = row_spec(1000, 1040, JIT_EPILOGUE_LINEAR_SWIGLU);
    for (int i = 0; i < n; i++) {
        jit__plan_t p;
        jit__diag_t d;
        cr_assert_eq(plan(&s, 4, all[i].name, &p, &d), JIT_OK, "%s: %s", all[i].name, d.msg);
        cr_assert_leq(p.smem_bytes, all[i].smem_per_cta);
    }
}

Test(plan, bad_specs_get_specific_errors) {
    jit__plan_t p;
    jit__diag_t d;
    jit__gemm_spec_t s = row_spec(0, 128, JIT_EPILOGUE_LINEAR);
    cr_assert_eq(plan(&s, 0, "sm_90a", &p, &d), JIT_INVALID_SHAPE);
    s = row_spec(128, -16, JIT_EPILOGUE_LINEAR);
    cr_assert_eq(plan(&s, 0, "sm_90a", &p, &d), JIT_INVALID_SHAPE);
    s = row_spec(128, 120, JIT_EPILOGUE_LINEAR);
    cr_assert_eq(plan(&s, 0, "sm_90a", &p, &d), JIT_MISALIGNED);
    cr_assert(strstr(d.msg, "multiple of 16"), "%s", d.msg);
    s = row_spec(127, 128, JIT_EPILOGUE_LINEAR_SWIGLU);
    cr_assert_eq(plan(&s, 0, "sm_90a", &p, &d), JIT_INVALID_SHAPE);
    cr_assert(strstr(d.msg, "even"), "%s", d.msg);
    s = row_spec(128, 128, JIT_EPILOGUE_LINEAR);
    s.a = JIT_DTYPE_E2M1;
    cr_assert_eq(plan(&s, 0, "sm_90a", &p, &d), JIT_UNSUPPORTED);
    s = row_spec(128, 128, JIT_EPILOGUE_LINEAR);
    s.out = JIT_DTYPE_F32;
    cr_assert_eq(plan(&s, 0, "sm_90a", &p, &d), JIT_UNSUPPORTED);
    s = row_spec(128, 128, (jit_epilogue_t)9);
    cr_assert_eq(plan(&s, 0, "sm_90a", &p, &d), JIT_UNSUPPORTED);
    s = row_spec(128, 128, JIT_EPILOGUE_LINEAR);
    cr_assert_eq(plan(&s, 7, "sm_90a", &p, &d), JIT_INVALID_ARGUMENT);
    jit__diag_init(&d);
    cr_assert_eq(jit__plan_make(&s, 0, 132, NULL, &p, &d), JIT_UNKNOWN_ARCH);
}

Test(plan, grid_covers_ragged_m_and_n) {
    jit__plan_t p;
    jit__diag_t d;
    jit__gemm_spec_t s = row_spec(1000, 1024, JIT_EPILOGUE_LINEAR);
    cr_assert_eq(plan(&s, JIT_TOKEN_BANDS - 1, "sm_120a", &p, &d), JIT_OK);
    unsigned g[3];
    jit__mma_sync_grid(&p, 4001, g);
    cr_assert_eq(g[0], 8u);  /* ceil(1000 / 128) */
    cr_assert_eq(g[1], 32u); /* ceil(4001 / 128) */
    cr_assert_eq(g[2], 1u);
}

Test(plan, json_has_the_documented_fields) {
    jit__plan_t p;
    jit__diag_t d;
    jit__gemm_spec_t s = row_spec(5120, 5120, JIT_EPILOGUE_LINEAR_ADD);
    cr_assert_eq(plan(&s, 1, "sm_120a", &p, &d), JIT_OK);
    char *text = jit__plan_to_json(&p);
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    cr_assert_not_null(o, "plan JSON does not parse: %s", err.text);
    cr_assert_str_eq(json_string_value(json_object_get(o, "family")), "fp8_mma_sync");
    cr_assert_str_eq(json_string_value(json_object_get(o, "arch")), "sm_120a");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(o, "warps"), "n")), 4);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(o, "tile"), "m")), 32);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(o, "token_band"), "m_min")),
                 17);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "spec"), "epilogue")),
                     "linear_add");
    cr_assert_eq(json_integer_value(json_object_get(o, "smem_bytes")), (json_int_t)p.smem_bytes);
    json_decref(o);
    free(text);
}
