/*
 * The registry: the ordered table of kernel families and the functions that dispatch through
 * it. A problem goes to the first family whose supports() accepts it; families registered at
 * run time (tests, out-of-tree families) are asked before the built-in ones.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "families.h"
#include "family.h"

/* The built-in families, most specialised first: a family later in the table only sees the
 * problems the earlier ones declined. */
static const jit__family_t *const k_builtin[] = {
    &jit__family_quant_fp8_1x128, /* takes only its own op, which no GEMM family computes */
    &jit__family_fp8_grouped_wgmma,
    &jit__family_fp8_wgmma,
    &jit__family_fp8_block_wgmma,
    &jit__family_fp8_mma_sync,
    &jit__family_tcgen05,
};
#define N_BUILTIN (sizeof(k_builtin) / sizeof(k_builtin[0]))
#define MAX_REGISTERED 8

static const jit__family_t *g_table[MAX_REGISTERED + N_BUILTIN];
static size_t g_registered, g_count;

static void rebuild(void) {
    g_count = g_registered;
    for (size_t i = 0; i < N_BUILTIN; i++)
        g_table[g_count++] = k_builtin[i];
}

const jit__family_t *const *jit__families(size_t *count) {
    if (g_count == 0)
        rebuild();
    *count = g_count;
    return g_table;
}

jit_status_t jit__family_register(const jit__family_t *f) {
    if (!f || !f->name || !f->kernel_name || !f->supports || !f->plan || !f->key_fields ||
        !f->generate || !f->launch)
        return JIT_INVALID_ARGUMENT;
    if (g_registered == MAX_REGISTERED)
        return JIT_OUT_OF_MEMORY;
    /* Newest first: the last registration wins over earlier ones. */
    memmove(&g_table[1], &g_table[0], g_registered * sizeof(g_table[0]));
    g_table[0] = f;
    g_registered++;
    rebuild();
    return JIT_OK;
}

void jit__family_unregister(const jit__family_t *f) {
    for (size_t i = 0; i < g_registered; i++) {
        if (g_table[i] == f) {
            memmove(&g_table[i], &g_table[i + 1], (g_registered - i - 1) * sizeof(g_table[0]));
            g_registered--;
            break;
        }
    }
    rebuild();
}

const jit__family_t *jit__family_find(const char *name) {
    size_t n;
    const jit__family_t *const *t = jit__families(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i]->name, name) == 0)
            return t[i];
    return NULL;
}

/* The plan's reason line, unless its family wrote one: the winner against the runner-up. */
static void explain(jit__plan_t *p) {
    if (p->n_candidates == 0 || p->chosen < 0 || p->reason[0])
        return;
    const jit__plan_candidate_t *w = &p->candidates[p->chosen], *next = NULL;
    for (int i = 0; i < p->n_candidates; i++)
        if (i != p->chosen && (!next || p->candidates[i].modelled_us < next->modelled_us))
            next = &p->candidates[i];
    if (!next)
        snprintf(p->reason, sizeof(p->reason), "the only candidate: %s %dx%d, %.1f us at M=%lld",
                 w->route, w->tile_m, w->tile_n, w->modelled_us, (long long)p->model_m);
    else
        snprintf(p->reason, sizeof(p->reason),
                 "lowest modelled time at M=%lld: %s %dx%d %d stages %.1f us; next %s %dx%d "
                 "%d stages %.1f us",
                 (long long)p->model_m, w->route, w->tile_m, w->tile_n, w->stages, w->modelled_us,
                 next->route, next->tile_m, next->tile_n, next->stages, next->modelled_us);
}

/* The index of the candidate `force` ("route" or "route:MxN") names in the plan's list, or -1. */
static int forced_index(const jit__plan_t *p, const char *force) {
    char route[24] = "";
    int tm = 0, tn = 0;
    const char *colon = strchr(force, ':');
    size_t len = colon ? (size_t)(colon - force) : strlen(force);
    if (len == 0 || len >= sizeof(route))
        return -1;
    memcpy(route, force, len);
    if (colon && sscanf(colon + 1, "%dx%d", &tm, &tn) != 2)
        return -1;
    for (int i = 0; i < p->n_candidates; i++) {
        const jit__plan_candidate_t *c = &p->candidates[i];
        if (strcmp(c->route, route) == 0 && (!colon || (c->tile_m == tm && c->tile_n == tn)))
            return i;
    }
    return -1;
}

/* Plan the spec with one family into `out` (already zeroed and filled with the common
 * inputs). */
static jit_status_t plan_with(const jit__family_t *f, jit__plan_t *out, jit__diag_t *d) {
    out->family = f;
    out->chosen = -1;
    out->model_m = jit__token_band_model_m(out->token_band);
    jit_status_t st = f->plan(out, d);
    if (st == JIT_OK && out->modelled_us > 0 && out->n_candidates == 0) {
        jit__plan_add_candidate(out, f->name, out->tile_m, out->tile_n, out->stages,
                                out->modelled_us);
        out->chosen = 0;
    }
    return st;
}

/* The environment every plan reads: JITGEMM_FAMILY (`only`) must name a family, and each
 * family's comparison switches must hold a value it builds, whatever family plans the problem,
 * so that a misspelt switch fails every plan rather than build the default under its name. */
static jit_status_t check_environment(const jit__family_t *const *t, size_t n, const char *only,
                                      jit__diag_t *d) {
    if (only && *only && !jit__family_find(only)) {
        char names[256] = "";
        for (size_t i = 0; i < n; i++)
            snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
                     t[i]->name);
        return jit__fail(d, JIT_INVALID_ARGUMENT, "JITGEMM_FAMILY=%s names no family (known: %s)",
                         only, names);
    }
    for (size_t i = 0; i < n; i++) {
        jit_status_t st = t[i]->check_switches ? t[i]->check_switches(d) : JIT_OK;
        if (st != JIT_OK)
            return st;
    }
    return JIT_OK;
}

/* No family planned the problem: the first refusal with a message says why best (it comes from
 * the family that computes such problems, only not this one or not here), else none takes it. */
static jit_status_t refuse(const jit__gemm_spec_t *spec, const jit__arch_profile_t *arch,
                           jit__diag_t *first, jit__diag_t *d) {
    if (first->status != JIT_OK) {
        jit_status_t st = jit__fail(d, first->status, "%s", first->msg);
        jit__diag_clear(first);
        return st;
    }
    return jit__fail(d, JIT_UNSUPPORTED,
                     "no kernel family computes %s%s x %s with %s scales and %s output on %s",
                     spec->groups > 0 ? "grouped " : "", jit_dtype_name(spec->a),
                     jit_dtype_name(spec->b),
                     jit_scale_mode_name(spec->scales), jit_dtype_name(spec->out), arch->name);
}

jit_status_t jit__plan_make(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                            const jit__arch_profile_t *arch, jit__plan_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    if (!arch)
        return jit__fail(d, JIT_UNKNOWN_ARCH, "no arch profile");
    jit_status_t st = jit__spec_check(spec, token_band, sm_count, d);
    if (st != JIT_OK)
        return st;
    size_t n;
    const jit__family_t *const *t = jit__families(&n);
    /* JITGEMM_FAMILY restricts the choice to one family: for comparing families on one
     * problem, and for tests that must exercise a family the model would not pick. */
    const char *only = getenv("JITGEMM_FAMILY");
    if ((st = check_environment(t, n, only, d)) != JIT_OK)
        return st;
    /* JITGEMM_FORCE_CANDIDATE=route:MxN takes that candidate whatever the model says, so the
     * sweep benchmark can time every candidate the models weigh. */
    const char *force = getenv("JITGEMM_FORCE_CANDIDATE");
    if (force && !*force)
        force = NULL;
    int forced = 0;
    jit_status_t force_st = JIT_OK;
    /* Families with a cost model compete on modelled time and pool their candidates; a family
     * without one (modelled_us 0) is taken when no earlier family planned the problem. The
     * first refusal with a message explains a problem nobody takes best: it comes from the
     * family that computes such problems, only not this one or not here. */
    jit__plan_t *cand = malloc(sizeof(*cand));
    jit__plan_candidate_t *pool = calloc(JIT_PLAN_MAX_CANDIDATES, sizeof(*pool));
    if (!cand || !pool) {
        free(cand);
        free(pool);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "planning");
    }
    int have = 0, n_pool = 0, chosen = -1;
    jit__diag_t first, why;
    jit__diag_init(&first);
    for (size_t i = 0; i < n; i++) {
        if (only && *only && strcmp(only, t[i]->name) != 0)
            continue;
        if ((spec->groups > 0) != (t[i]->grouped != 0))
            continue;
        jit__diag_init(&why);
        st = t[i]->supports(spec, arch, &why);
        if (st == JIT_OK) {
            memset(cand, 0, sizeof(*cand));
            cand->arch = arch;
            cand->spec = *spec;
            cand->token_band = token_band;
            cand->sm_count = sm_count;
            st = plan_with(t[i], cand, &why);
        }
        if (st != JIT_OK) {
            if (why.msg[0] && first.status == JIT_OK)
                first = why;
            else
                jit__diag_clear(&why);
            continue;
        }
        if (cand->modelled_us <= 0) {
            if (!have) {
                *out = *cand;
                have = 1;
            }
            break;
        }
        int base = n_pool, hit = force && !forced ? forced_index(cand, force) : -1;
        for (int c = 0; c < cand->n_candidates && n_pool < JIT_PLAN_MAX_CANDIDATES; c++)
            pool[n_pool++] = cand->candidates[c];
        if (hit >= 0) {
            if (hit != cand->chosen && !t[i]->replan) {
                force_st = jit__fail(d, JIT_INVALID_ARGUMENT,
                                     "JITGEMM_FORCE_CANDIDATE: family %s cannot be forced",
                                     t[i]->name);
                break;
            }
            if (hit != cand->chosen && (force_st = t[i]->replan(cand, hit, d)) != JIT_OK)
                break;
            cand->chosen = hit;
            forced = 1;
        }
        if (!have || (hit >= 0) || (!forced && cand->modelled_us < out->modelled_us)) {
            *out = *cand;
            chosen = base + cand->chosen;
            have = 1;
        }
    }
    if (have && chosen >= 0) {
        memcpy(out->candidates, pool, sizeof(*pool) * (size_t)n_pool);
        out->n_candidates = n_pool;
        out->chosen = chosen < n_pool ? chosen : -1;
        explain(out);
    }
    free(cand);
    free(pool);
    if (force_st != JIT_OK) {
        jit__diag_clear(&first);
        memset(out, 0, sizeof(*out));
        return force_st;
    }
    if (force && !forced && have) {
        jit__diag_clear(&first);
        memset(out, 0, sizeof(*out));
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "JITGEMM_FORCE_CANDIDATE=%s matches no candidate of this problem", force);
    }
    if (have) {
        jit__diag_clear(&first);
        return JIT_OK;
    }
    memset(out, 0, sizeof(*out));
    return refuse(spec, arch, &first, d);
}

const char *jit__plan_kernel_name(const jit__plan_t *plan) {
    return plan->family->kernel_name;
}

jit_status_t jit__generate(const jit__plan_t *plan, const jit__key_t *key, char **source,
                           jit__diag_t *d) {
    *source = NULL;
    if (!plan->family)
        return jit__fail(d, JIT_INTERNAL, "plan has no family");
    return plan->family->generate(plan, key, source, d);
}

static json_t *pair(int a, int b) {
    return json_pack("[ii]", a, b);
}

char *jit__plan_to_json(const jit__plan_t *p) {
    int64_t lo, hi;
    jit__token_band_range(p->token_band, &lo, &hi);
    const jit__gemm_spec_t *s = &p->spec;
    json_t *o = json_object();
    json_object_set_new(o, "family", json_string(p->family->name));
    json_object_set_new(o, "arch", json_string(p->arch->name));
    json_object_set_new(o, "kernel", json_string(p->family->kernel_name));
    json_object_set_new(o, "spec",
                        json_pack("{sIsIssssssssss}", "n", (json_int_t)s->n, "k", (json_int_t)s->k,
                                  "a", jit_dtype_name(s->a), "b", jit_dtype_name(s->b), "out",
                                  jit_dtype_name(s->out), "scales", jit_scale_mode_name(s->scales),
                                  "epilogue", jit_epilogue_name(s->epilogue)));
    json_object_set_new(o, "token_band",
                        json_pack("{sisIso}", "index", p->token_band, "m_min", (json_int_t)lo,
                                  "m_max", hi == INT64_MAX ? json_null() : json_integer(hi)));
    json_object_set_new(o, "sm_count", json_integer(p->sm_count));
    json_object_set_new(o, "tile",
                        json_pack("{sisisi}", "m", p->tile_m, "n", p->tile_n, "k", p->tile_k));
    json_object_set_new(o, "stages", json_integer(p->stages));
    json_object_set_new(o, "threads", json_integer(p->threads));
    json_object_set_new(o, "smem_bytes", json_integer(p->smem_bytes));
    json_object_set_new(o, "persistent", json_boolean(p->persistent));
    json_object_set_new(
        o, "cluster",
        json_pack("{soso}", "preferred", pair(p->cluster_m, p->cluster_n), "fallback",
                  p->fallback_cluster_m ? pair(p->fallback_cluster_m, p->fallback_cluster_n)
                                        : json_null()));
    json_object_set_new(o, "grid",
                        json_pack("{sIss}", "x_tiles",
                                  (json_int_t)((s->n + p->tile_n - 1) / p->tile_n), "policy",
                                  p->persistent ? "persistent" : "one CTA per output tile"));
    if (p->n_candidates > 0 && p->chosen >= 0) {
        json_t *cands = json_array();
        for (int i = 0; i < p->n_candidates; i++) {
            const jit__plan_candidate_t *c = &p->candidates[i];
            json_array_append_new(cands, json_pack("{sss{sisi}sisf}", "route", c->route, "tile",
                                                   "m", c->tile_m, "n", c->tile_n, "stages",
                                                   c->stages, "modelled_us", c->modelled_us));
        }
        const jit__plan_candidate_t *w = &p->candidates[p->chosen];
        json_object_set_new(o, "model_m", json_integer((json_int_t)p->model_m));
        json_object_set_new(o, "candidates", cands);
        json_object_set_new(o, "chosen",
                            json_pack("{sisss{sisi}sisfss}", "index", p->chosen, "route", w->route,
                                      "tile", "m", w->tile_m, "n", w->tile_n, "stages", w->stages,
                                      "modelled_us", w->modelled_us, "reason", p->reason));
    }
    if (p->family->plan_to_json && p->family->plan_to_json(p, o) != 0) {
        json_decref(o);
        return NULL;
    }
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}
