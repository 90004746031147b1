/*
 * The public API end to end, on any machine: create a context for a target, describe an FP8
 * row-scaled GEMM, look at its key and plan, compile it into the cache (the first call's work,
 * done ahead of time as a build host would), and see how a bad problem is reported.
 *
 * It links only libjitgemm, not CUDA, so it cannot allocate device memory; an application that
 * has its operands on the GPU passes their device pointers in a jit_operands_t to jit_gemm (the
 * README shows that call). The last step calls jit_gemm with a problem that is wrong on purpose,
 * which is refused before anything needs a GPU.
 *
 *   example_basic_gemm [ARCH]        ARCH defaults to sm_90a; try sm_107a or sm_120a
 */
#include <stdio.h>
#include <stdlib.h>

#include "jitgemm.h"

static void on_progress(const jit_prewarm_event_t *ev, void *user) {
    (void)user;
    static const char *const what[] = {"compiled", "already cached", "failed"};
    printf("  %s in %.3f s, key %s%s%s\n", what[ev->result], ev->seconds, ev->key_hash,
           ev->error[0] ? ": " : "", ev->error);
}

static int show(jit_context_t *ctx, const jit_problem_t *p, jit_inspect_what_t what,
                const char *title) {
    char *text = NULL;
    jit_status_t st = jit_inspect(ctx, p, what, &text);
    if (st != JIT_OK) {
        fprintf(stderr, "%s: %s: %s\n", title, jit_status_name(st), jit_last_error(ctx));
        return -1;
    }
    printf("%s:\n%s\n\n", title, text);
    jit_free(text);
    return 0;
}

int main(int argc, char **argv) {
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    /* An explicit target, so the example runs the same with or without a GPU. */
    opt.arch = argc > 1 ? argv[1] : "sm_90a";

    jit_context_t *ctx = NULL;
    if (jit_context_create(&opt, &ctx) != JIT_OK) {
        fprintf(stderr, "context: %s\n", jit_last_error(NULL));
        return 1;
    }
    printf("target %s with %d SMs\n\n", jit_context_arch(ctx), jit_context_sm_count(ctx));

    /* D[1024, 5120] = (A[1024, 5120] . B[5120, 5120]^T) * sa[m] * sb[n], E4M3 in, BF16 out. */
    jit_problem_t p;
    jit_problem_init(&p);
    p.m = 1024;
    p.n = 5120;
    p.k = 5120;
    p.epilogue = JIT_EPILOGUE_LINEAR;

    int rc = 0;
    if (show(ctx, &p, JIT_INSPECT_KEY, "key") || show(ctx, &p, JIT_INSPECT_PLAN, "plan"))
        rc = 1;

    /* Every M in the same token band shares this kernel, so prewarming one M covers them. */
    printf("prewarm:\n");
    jit_status_t st = jit_prewarm(ctx, &p, 1, 1, on_progress, NULL);
    if (st != JIT_OK) {
        fprintf(stderr, "prewarm: %s: %s\n", jit_status_name(st), jit_last_error(ctx));
        rc = 1;
    }

    /* K = 0 is refused with a specific status and a message, before any GPU work. */
    jit_problem_t bad = p;
    bad.k = 0;
    jit_operands_t o;
    jit_operands_init(&o);
    st = jit_gemm(ctx, &bad, &o, NULL);
    printf("\njit_gemm with k=0: %s (%s)\n  %s\n", jit_status_name(st), jit_status_string(st),
           jit_last_error(ctx));
    if (st == JIT_OK)
        rc = 1;

    jit_context_destroy(ctx);
    return rc;
}
