/*
 * A program outside the project, built against an installed jitgemm: it proves the header, the
 * library and the link flags an install hands out are enough. Needs no GPU.
 *
 *   consumer EXPECTED_VERSION CACHE_DIR [prewarm]
 *
 * With "prewarm" it also compiles one kernel, which needs the library to find an NVRTC (no GPU).
 */
#include <jitgemm.h>
#include <stdio.h>
#include <string.h>

#define STR2(x) #x
#define STR(x) STR2(x)

int main(int argc, char **argv) {
    if (argc != 3 && !(argc == 4 && strcmp(argv[3], "prewarm") == 0)) {
        fprintf(stderr, "usage: consumer EXPECTED_VERSION CACHE_DIR [prewarm]\n");
        return 2;
    }
    const char *header =
        STR(JITGEMM_VERSION_MAJOR) "." STR(JITGEMM_VERSION_MINOR) "." STR(JITGEMM_VERSION_PATCH);
    printf("jitgemm %s (header %s)\n", jit_version(), header);
    if (strcmp(jit_version(), argv[1]) || strcmp(header, argv[1])) {
        fprintf(stderr, "consumer: expected version %s\n", argv[1]);
        return 1;
    }
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.arch = "sm_90a";
    opt.cache_dir = argv[2];
    jit_context_t *ctx = NULL;
    jit_status_t st = jit_context_create(&opt, &ctx);
    if (st != JIT_OK) {
        fprintf(stderr, "consumer: %s: %s\n", jit_status_name(st), jit_last_error(NULL));
        return 1;
    }
    printf("context for %s, %d SMs\n", jit_context_arch(ctx), jit_context_sm_count(ctx));
    int ok = strcmp(jit_context_arch(ctx), "sm_90a") == 0;
    if (ok && argc == 4) {
        jit_problem_t p;
        jit_problem_init(&p);
        p.m = 16;
        p.n = 128;
        p.k = 256;
        st = jit_prewarm(ctx, &p, 1, 1, NULL, NULL);
        if (st != JIT_OK)
            fprintf(stderr, "consumer: prewarm: %s: %s\n", jit_status_name(st),
                    jit_last_error(ctx));
        ok = st == JIT_OK;
    }
    jit_context_destroy(ctx);
    return ok ? 0 : 1;
}
