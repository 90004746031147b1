/*
 * Source to cubin through NVRTC (CUDA C -> LTO-IR) and nvJitLink (LTO-IR -> cubin, and, when
 * asked, a second pass LTO-IR -> PTX for `inspect`).
 *
 * NOTE: the LTO route is deliberate. Handing nvJitLink PTX makes ptxas compile it as
 * relocatable code, which cost the mma.sync kernel up to 60% more registers (188 against 128
 * for the band-4 tile on sm_90a, and spills once its k32 loop is unrolled); link-time
 * optimisation of LTO-IR compiles the whole program and matches NVRTC's own cubin.
 * NOTE: family targets (sm_100f) take the PTX route instead: nvJitLink 13.0's LTO lowers
 * sm_100f to plain sm_100, where ptxas then rejects every tcgen05 instruction (13.5 keeps the
 * suffix). ptxas runs with -verbose, whose report gives registers, spills and shared memory
 * without a GPU.
 */
#include "compile.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cubin_info.h"
#include "device_files.h"
#include "strbuf.h"

void jit__compiled_free(jit__compiled_t *c) {
    if (!c)
        return;
    free(c->ptx);
    free(c->cubin);
    free(c->log);
    memset(c, 0, sizeof(*c));
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int jit__compile_options(const char *target, jit__compile_options_t *o) {
    memset(o, 0, sizeof(*o));
    size_t len = strlen(target), digits = strspn(target + 3, "0123456789");
    /* "sm_90a" -> "compute_90a"; "sm_100f" -> "compute_100f". */
    if (strncmp(target, "sm_", 3) != 0 || digits < 2 || digits > 4 || len - 3 - digits > 1 ||
        (len - 3 - digits == 1 && !islower((unsigned char)target[len - 1])))
        return -1;
    o->via_ptx = target[len - 1] == 'f';
    snprintf(o->nvrtc_arch, sizeof(o->nvrtc_arch), "--gpu-architecture=compute_%s", target + 3);
    snprintf(o->link_arch, sizeof(o->link_arch), "-arch=%s", target);
    o->nvrtc[o->n_nvrtc++] = o->nvrtc_arch;
    o->nvrtc[o->n_nvrtc++] = "-default-device";
    o->nvrtc[o->n_nvrtc++] = "-std=c++17";
    if (!o->via_ptx)
        o->nvrtc[o->n_nvrtc++] = "-dlto";
    o->link[o->n_link++] = o->link_arch;
    o->link[o->n_link++] = "-verbose";
    if (!o->via_ptx)
        o->link[o->n_link++] = "-lto";
    return 0;
}

static int find_int_before(const char *line, const char *suffix, int *value) {
    const char *p = strstr(line, suffix);
    if (!p)
        return 0;
    while (p > line && p[-1] == ' ')
        p--;
    const char *q = p;
    while (q > line && q[-1] >= '0' && q[-1] <= '9')
        q--;
    if (q == p)
        return 0;
    *value = atoi(q);
    return 1;
}

/* Read ptxas' -verbose lines ("Used 128 registers", "0 bytes spill stores", ...). With several
 * functions in one module the largest value of each counts. */
static void parse_ptxas_report(const char *log, jit__compiled_t *out) {
    const char *line = log;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[512];
        if (len >= sizeof(buf))
            len = sizeof(buf) - 1;
        memcpy(buf, line, len);
        buf[len] = '\0';
        if (strstr(buf, "ptxas")) {
            int v;
            if (find_int_before(buf, "registers", &v) && v > out->registers)
                out->registers = v;
            if (find_int_before(buf, "bytes spill stores", &v) && v > out->spill_stores)
                out->spill_stores = v;
            if (find_int_before(buf, "bytes spill loads", &v) && v > out->spill_loads)
                out->spill_loads = v;
            if (find_int_before(buf, "bytes stack frame", &v) && v > out->stack_bytes)
                out->stack_bytes = v;
            if (find_int_before(buf, "bytes smem", &v) && v > out->smem_static_bytes)
                out->smem_static_bytes = v;
        }
        line = end ? end + 1 : NULL;
    }
}

/* The first line of a log that says "error", for the one-line message. */
static void first_error_line(const char *log, char *out, size_t outsz) {
    const char *p = log ? strstr(log, "error") : NULL;
    if (!p) {
        snprintf(out, outsz, "see the log");
        return;
    }
    const char *start = p;
    while (start > log && start[-1] != '\n')
        start--;
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - start) : strlen(start);
    if (len >= outsz)
        len = outsz - 1;
    memcpy(out, start, len);
    out[len] = '\0';
}

static char *nvrtc_log(const jit__toolchain_t *tc, nvrtcProgram prog) {
    size_t n = 0;
    if (tc->nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0)
        return strdup("");
    char *log = malloc(n + 1);
    if (!log)
        return NULL;
    if (tc->nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
        log[0] = '\0';
    log[n] = '\0';
    return log;
}

static char *jitlink_log(const jit__toolchain_t *tc, nvJitLinkHandle h, int error_log) {
    size_t n = 0;
    nvJitLinkResult r =
        error_log ? tc->nvJitLinkGetErrorLogSize(h, &n) : tc->nvJitLinkGetInfoLogSize(h, &n);
    if (r != NVJITLINK_SUCCESS || n == 0)
        return strdup("");
    char *log = malloc(n + 1);
    if (!log)
        return NULL;
    r = error_log ? tc->nvJitLinkGetErrorLog(h, log) : tc->nvJitLinkGetInfoLog(h, log);
    if (r != NVJITLINK_SUCCESS)
        log[0] = '\0';
    log[n] = '\0';
    return log;
}

/* NVRTC to LTO-IR, or on the PTX route to PTX; *ir receives it (PTX NUL-terminated). */
static jit_status_t run_nvrtc(const jit__toolchain_t *tc, const char *source, const char *name,
                              const char *target, const jit__compile_options_t *opt,
                              const jit__device_file_t *files, size_t n_files, char **ir,
                              size_t *ir_size, jit__sb_t *log, jit__diag_t *d) {
    const int via_ptx = opt->via_ptx;
    char file[96];
    snprintf(file, sizeof(file), "%s.cu", name);
    /* The device files go in as in-memory headers: NVRTC reads no file and needs no include
     * path, and the source includes only what it uses. */
    const char *texts[JIT_MAX_DEVICE_FILES], *names[JIT_MAX_DEVICE_FILES];
    if (n_files > JIT_MAX_DEVICE_FILES)
        return jit__fail(d, JIT_INTERNAL, "%zu device headers, at most %d", n_files,
                         JIT_MAX_DEVICE_FILES);
    for (size_t i = 0; i < n_files; i++) {
        texts[i] = files[i].text;
        names[i] = files[i].name;
    }
    nvrtcProgram prog;
    nvrtcResult r = tc->nvrtcCreateProgram(&prog, source, file, (int)n_files, texts, names);
    if (r != NVRTC_SUCCESS)
        return jit__fail(d, JIT_COMPILE_FAILED, "nvrtcCreateProgram: %s",
                         tc->nvrtcGetErrorString(r));
    r = tc->nvrtcCompileProgram(prog, opt->n_nvrtc, opt->nvrtc);
    char *plog = nvrtc_log(tc, prog);
    if (plog && *plog) {
        jit__sb_append(log, plog);
        if (plog[strlen(plog) - 1] != '\n')
            jit__sb_append(log, "\n");
    }
    jit_status_t st = JIT_OK;
    if (r != NVRTC_SUCCESS) {
        char first[256];
        first_error_line(plog, first, sizeof(first));
        jit__diag_set_log(d, plog);
        st = jit__fail(d, JIT_COMPILE_FAILED, "NVRTC %d.%d could not compile %s for %s: %s",
                       tc->id.nvrtc_major, tc->id.nvrtc_minor, name, target, first);
    } else {
        size_t n = 0;
        if (via_ptx)
            tc->nvrtcGetPTXSize(prog, &n);
        else
            tc->nvrtcGetLTOIRSize(prog, &n);
        *ir = malloc(n + 1);
        if (!*ir) {
            st = jit__fail(d, JIT_OUT_OF_MEMORY, "NVRTC output buffer of %zu bytes", n);
        } else {
            if (via_ptx)
                tc->nvrtcGetPTX(prog, *ir);
            else
                tc->nvrtcGetLTOIR(prog, *ir);
            (*ir)[n] = '\0';
            *ir_size = via_ptx ? strlen(*ir) : n;
        }
    }
    free(plog);
    tc->nvrtcDestroyProgram(&prog);
    return st;
}

/* One nvJitLink pass: a cubin (want_ptx 0, with ptxas' report) or, from LTO-IR, the PTX. */
static jit_status_t run_jitlink(const jit__toolchain_t *tc, const char *name, const char *target,
                                const jit__compile_options_t *opt, const char *ir, size_t ir_size,
                                int want_ptx, int keep_cubin, jit__compiled_t *out, jit__sb_t *log,
                                jit__diag_t *d) {
    const int ir_is_ptx = opt->via_ptx;
    /* The cubin pass takes the options as they are; the PTX pass (from LTO-IR only) asks for
     * PTX where the cubin pass asks for ptxas' report. */
    const char *opts[4];
    uint32_t n_opts = (uint32_t)opt->n_link;
    memcpy(opts, opt->link, sizeof(opt->link));
    if (want_ptx)
        opts[1] = "-ptx";
    nvJitLinkHandle h;
    nvJitLinkResult r = tc->nvJitLinkCreate(&h, n_opts, opts);
    if (r != NVJITLINK_SUCCESS)
        return jit__fail(d, JIT_LINK_FAILED, "nvJitLinkCreate(%s) failed with code %d", target,
                         (int)r);
    char file[96];
    snprintf(file, sizeof(file), "%s.%s", name, ir_is_ptx ? "ptx" : "ltoir");
    jit_status_t st = JIT_OK;
    r = tc->nvJitLinkAddData(h, ir_is_ptx ? NVJITLINK_INPUT_PTX : NVJITLINK_INPUT_LTOIR, ir,
                             ir_size, file);
    if (r == NVJITLINK_SUCCESS)
        r = tc->nvJitLinkComplete(h);
    char *info = jitlink_log(tc, h, 0);
    if (info && !want_ptx) {
        jit__sb_append(log, info);
        parse_ptxas_report(info, out);
    }
    if (r != NVJITLINK_SUCCESS) {
        char *err = jitlink_log(tc, h, 1);
        char first[256];
        first_error_line(err, first, sizeof(first));
        if (err)
            jit__sb_append(log, err);
        jit__diag_set_log(d, log->buf ? log->buf : "");
        st = jit__fail(d, JIT_LINK_FAILED, "nvJitLink %d.%d could not %s %s for %s: %s",
                       tc->id.nvjitlink_major, tc->id.nvjitlink_minor,
                       want_ptx ? "emit PTX of" : "assemble", name, target, first);
        free(err);
    } else if (want_ptx) {
        size_t n = 0;
        tc->nvJitLinkGetLinkedPtxSize(h, &n);
        out->ptx = malloc(n + 1);
        if (!out->ptx) {
            st = jit__fail(d, JIT_OUT_OF_MEMORY, "PTX buffer of %zu bytes", n);
        } else {
            tc->nvJitLinkGetLinkedPtx(h, out->ptx);
            out->ptx[n] = '\0';
            out->ptx_size = strlen(out->ptx);
        }
    } else if (keep_cubin) {
        size_t n = 0;
        tc->nvJitLinkGetLinkedCubinSize(h, &n);
        out->cubin = malloc(n ? n : 1);
        if (!out->cubin) {
            st = jit__fail(d, JIT_OUT_OF_MEMORY, "cubin buffer of %zu bytes", n);
        } else {
            tc->nvJitLinkGetLinkedCubin(h, out->cubin);
            out->cubin_size = n;
        }
    }
    free(info);
    tc->nvJitLinkDestroy(&h);
    return st;
}

/* The cubin's own attributes are authoritative for registers and the stack frame. ptxas'
 * report, when nvJitLink prints one, adds the spill counts; without it, a zero frame proves
 * there are no spills and a non-zero one leaves them unknown (-1). */
static void take_resources_from_cubin(jit__compiled_t *out) {
    int regs = 0, frame = 0;
    int had_report = out->registers > 0;
    if (jit__cubin_resources(out->cubin, out->cubin_size, &regs, &frame) != 0)
        return;
    out->registers = regs;
    out->stack_bytes = frame;
    if (!had_report)
        out->spill_stores = out->spill_loads = frame == 0 ? 0 : -1;
}

jit_status_t jit__compile(const jit__toolchain_t *tc, const char *source, const char *name,
                          const char *target, jit__compile_what_t what, jit__compiled_t *out,
                          jit__diag_t *d) {
    size_t n_files;
    const jit__device_file_t *files = jit__device_files(&n_files);
    return jit__compile_with_headers(tc, source, name, target, what, files, n_files, out, d);
}

jit_status_t jit__compile_with_headers(const jit__toolchain_t *tc, const char *source,
                                       const char *name, const char *target,
                                       jit__compile_what_t what, const jit__device_file_t *files,
                                       size_t n_files, jit__compiled_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    snprintf(out->target, sizeof(out->target), "%s", target);
    jit__compile_options_t opt;
    if (jit__compile_options(target, &opt) != 0)
        return jit__fail(d, JIT_UNKNOWN_ARCH, "compile target '%s' is not of the form sm_NN",
                         target);
    jit_status_t loaded = jit__toolchain_load(tc, d);
    if (loaded != JIT_OK)
        return loaded;
    double t0 = now_seconds();
    jit__sb_t log;
    jit__sb_init(&log);
    const int via_ptx = opt.via_ptx;
    char *ir = NULL;
    size_t ir_size = 0;
    jit_status_t st =
        run_nvrtc(tc, source, name, target, &opt, files, n_files, &ir, &ir_size, &log, d);
    const int want_cubin = what == JIT__COMPILE_CUBIN_AND_PTX || what == JIT__COMPILE_CUBIN;
    const int want_ptx = what == JIT__COMPILE_CUBIN_AND_PTX || what == JIT__COMPILE_PTX;
    /* The check still assembles through nvJitLink (ptxas catches what NVRTC lets through);
     * it keeps no cubin. */
    if (st == JIT_OK && what != JIT__COMPILE_PTX)
        st = run_jitlink(tc, name, target, &opt, ir, ir_size, 0, want_cubin, out, &log, d);
    if (st == JIT_OK && via_ptx && want_ptx) {
        out->ptx = ir;
        out->ptx_size = ir_size;
        ir = NULL;
    } else if (st == JIT_OK && want_ptx) {
        st = run_jitlink(tc, name, target, &opt, ir, ir_size, 1, 0, out, &log, d);
    }
    free(ir);
    if (st == JIT_OK && out->cubin)
        take_resources_from_cubin(out);
    out->seconds = now_seconds() - t0;
    out->log = jit__sb_take(&log);
    if (st != JIT_OK) {
        char *keep_log = out->log;
        out->log = NULL;
        jit__compiled_free(out);
        out->log = keep_log;
    }
    return st;
}
