/*
 * jitgemm: a JIT kernel service for block-scaled GEMM on NVIDIA GPUs.
 *
 * The first call for a problem builds a specialization key (shape N,K, dtypes, scale mode,
 * epilogue, token band, SM count, target arch, toolchain), generates CUDA C with inline PTX for
 * it, compiles it with NVRTC and nvJitLink, keeps the cubin in an on-disk cache indexed by a JSON
 * manifest, and launches it through the CUDA driver API. Later calls with the same key hit an
 * in-memory table and go straight to the launch.
 *
 * Conventions: every function that can fail returns a jit_status_t (0 = JIT_OK, negative =
 * error). The message of the last failure on a context is returned by jit_last_error(). The
 * library never exits or aborts. Structs passed in by the caller begin with `struct_size`, set
 * by the matching *_init() function, so fields can be added later without breaking the ABI.
 */
#ifndef JITGEMM_H
#define JITGEMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define JIT_EXTERN __attribute__((visibility("default")))
#else
#define JIT_EXTERN
#endif

/* The version this header belongs to; jit_version() says which library is loaded. Both come
 * from CMakeLists.txt's project(VERSION), and the build fails if they disagree. */
#define JITGEMM_VERSION_MAJOR 0
#define JITGEMM_VERSION_MINOR 1
#define JITGEMM_VERSION_PATCH 0

/* ---- status codes ------------------------------------------------------------------------ */

/* One table drives the enum, jit_status_string() and jit_status_name(). */
#define JIT_STATUS_MAP(X)                                                                      \
    X(OK, 0, "success")                                                                        \
    X(INVALID_ARGUMENT, -1, "invalid argument")                                                \
    X(INVALID_SHAPE, -2, "invalid problem shape")                                              \
    X(MISALIGNED, -3, "pointer, stride or size does not meet the kernel's alignment")          \
    X(UNSUPPORTED, -4, "unsupported dtype, scale or epilogue combination")                     \
    X(UNSUPPORTED_ARCH, -5, "not supported on this architecture")                              \
    X(UNKNOWN_ARCH, -6, "unknown target architecture")                                         \
    X(NO_GPU, -7, "no CUDA GPU or driver available")                                           \
    X(TOOLCHAIN_NOT_FOUND, -8, "NVRTC or nvJitLink not found")                                 \
    X(COMPILE_FAILED, -9, "NVRTC compilation failed")                                          \
    X(LINK_FAILED, -10, "nvJitLink failed")                                                    \
    X(PLAN_FAILED, -11, "no kernel plan fits this problem on this architecture")               \
    X(CACHE_ERROR, -12, "kernel cache error")                                                  \
    X(CUDA_ERROR, -13, "CUDA driver call failed")                                              \
    X(OUT_OF_MEMORY, -14, "out of host memory")                                                \
    X(PARSE_ERROR, -15, "malformed input")                                                     \
    X(IO_ERROR, -16, "file input/output failed")                                               \
    X(INTERNAL, -17, "internal error")                                                         \
    X(NOT_IN_CACHE, -18, "kernel not in the cache and compiling is off")

typedef enum jit_status {
#define JIT_STATUS_ENUM_(name, value, text) JIT_##name = value,
    JIT_STATUS_MAP(JIT_STATUS_ENUM_)
#undef JIT_STATUS_ENUM_
} jit_status_t;

/* Human-readable text of a status code, e.g. "invalid problem shape". Never NULL. */
JIT_EXTERN const char *jit_status_string(jit_status_t status);
/* The code's name, e.g. "JIT_INVALID_SHAPE". Never NULL. */
JIT_EXTERN const char *jit_status_name(jit_status_t status);

/* The loaded library's version, "MAJOR.MINOR.PATCH". Never NULL. A program built against one
 * header and run with another library can compare this with JITGEMM_VERSION_*. */
JIT_EXTERN const char *jit_version(void);

/* ---- problem description ----------------------------------------------------------------- */

typedef enum jit_dtype {
    JIT_DTYPE_NONE = 0,
    JIT_DTYPE_E4M3 = 1, /* FP8 E4M3 (float8_e4m3fn) */
    JIT_DTYPE_E5M2 = 2, /* FP8 E5M2 */
    JIT_DTYPE_E2M1 = 3, /* FP4 E2M1, two per byte, element 2i in the low nibble */
    JIT_DTYPE_BF16 = 4,
    JIT_DTYPE_F32 = 5,
} jit_dtype_t;

/* How A and B are scaled. ROW: FP32 per row of A (per token, M entries) and FP32 per row of B
 * (per output channel, N entries). The 8-bit block modes scale every `block` consecutive K
 * elements with one 8-bit scale, stored in the 128x4 tiled layout (see jit_scale_tile_offset).
 * 128x128 scales 128 consecutive K elements of a row of A, and a 128x128 block of B, with FP32
 * scales in plain row-major arrays. */
typedef enum jit_scale_mode {
    JIT_SCALE_NONE = 0,
    JIT_SCALE_ROW = 1,        /* "row":      FP32 sa[M], sb[N] */
    JIT_SCALE_UE8M0_32 = 2,   /* "ue8m0/32": MXFP8, MXFP4, mixed */
    JIT_SCALE_UE4M3_16 = 3,   /* "ue4m3/16": NVFP4 (with an FP32 global scale in alpha) */
    JIT_SCALE_UE5M3_16 = 4,   /* "ue5m3/16": sm_107a only */
    JIT_SCALE_UE5M3_32 = 5,   /* "ue5m3/32": sm_107a only */
    /* "128x128": E4M3 x E4M3 with FP32 scales, one per 1x128 group of A (a token's 128
     * consecutive K) and one per 128x128 block of B (DeepSeek-V3 style), sm_90a. scale_a is SFA,
     * ceil(K/128) scales per row of A stored as problem.sfa_layout says; scale_b is SFB,
     * [ceil(N/128)][ceil(K/128)] row-major. A partial last group of K (or N) has its own scale. */
    JIT_SCALE_BLOCK_1X128_128X128 = 6,
} jit_scale_mode_t;

/* How SFA (scale_a of the 128x128 mode) is stored; kb = k / 128. */
typedef enum jit_sfa_layout {
    JIT_SFA_K_MAJOR = 0, /* "k-major": sfa[m * ld_sfa + kb], ld_sfa >= ceil(K/128) */
    JIT_SFA_M_MAJOR = 1, /* "m-major": sfa[kb * ld_sfa + m], ld_sfa >= M (DeepGEMM, torch) */
} jit_sfa_layout_t;

/* The element type of the 128x128 mode's scales. The other modes name their own (DEFAULT). */
typedef enum jit_scale_type {
    JIT_SCALE_TYPE_DEFAULT = 0, /* "default": the mode's own; FP32 for 128x128 */
    JIT_SCALE_TYPE_F32 = 1,     /* "f32" */
    JIT_SCALE_TYPE_UE8M0 = 2,   /* "ue8m0": powers of two, one byte each; no kernel takes it yet */
} jit_scale_type_t;

typedef enum jit_epilogue {
    JIT_EPILOGUE_NONE = 0,
    JIT_EPILOGUE_LINEAR = 1,     /* D = acc */
    JIT_EPILOGUE_LINEAR_ADD = 2, /* D = acc + residual (BF16 [M, N]), rounded once */
    /* B holds N rows as gate/up pairs: row 2j is gate_j, row 2j+1 is up_j. The output has N/2
     * columns: D[m, j] = silu(acc[m, 2j]) * acc[m, 2j+1], each acc already scaled. */
    JIT_EPILOGUE_LINEAR_SWIGLU = 3,
    /* Not a GEMM: the activation quantizer (jit_quantize_fp8_1x128 below), "quantize_fp8_1x128".
     * A problem with this op names the quantizer's kernel for jit_inspect and jit_prewarm too. */
    JIT_EPILOGUE_QUANTIZE_FP8_1X128 = 4,
} jit_epilogue_t;

/* How the A rows of a grouped GEMM (jit_gemm_grouped) are laid out by expert. */
typedef enum jit_group_layout {
    JIT_GROUPS_NONE = 0, /* not grouped: jit_gemm's problems */
    /* "contiguous": A [m, K] holds the rows of expert 0, then expert 1, ...; a device int32
     * offsets[G + 1] gives expert g the rows offsets[g] .. offsets[g + 1] - 1 (any count,
     * 0 included, no padding). D is [m, Nout] in the same rows, scale_a [m]. m is the rows of
     * the buffers, which may be more than offsets[G]: the rows past it are not written. */
    JIT_GROUPS_CONTIGUOUS = 1,
    /* "masked": A [G, max_M, K] with max_M = m / G; a device int32 counts[G] says how many of
     * expert g's max_M rows are real. D is [G, max_M, Nout], scale_a [G, max_M]; the rows past
     * an expert's count are neither read for the result nor written. */
    JIT_GROUPS_MASKED = 2,
} jit_group_layout_t;

/* The most experts one grouped call may have. */
#define JIT_MAX_GROUPS 1024

/* D[M, Nout] = epilogue(alpha * sum_k A[m, k] * B[n, k] * scales). A is [M, K] and B is [N, K],
 * both K-major (row-major with K contiguous); D is row-major. Strides are in elements; 0 means
 * packed. M is a runtime value: problems that differ only in M within one token band share a
 * kernel. */
typedef struct jit_problem {
    uint32_t struct_size; /* set by jit_problem_init */
    int64_t m, n, k;
    jit_dtype_t a_dtype, b_dtype, out_dtype;
    jit_scale_mode_t scale_mode;
    jit_epilogue_t epilogue;
    int64_t lda, ldb, ldd, ld_residual;
    float alpha; /* FP32 multiplier on the result (NVFP4 global scale); 1 by default */
    /* The 128x128 mode's scales (left 0 by the other modes): SFA's layout, its leading
     * dimension in elements (0: packed, ceil(K/128) k-major or M m-major; a caller may pad it,
     * e.g. to a multiple of 4), and the scales' element type. */
    jit_sfa_layout_t sfa_layout;
    int64_t ld_sfa;
    jit_scale_type_t scale_type;
    /* Grouped GEMM (jit_gemm_grouped); all 0 for jit_gemm. `groups` is G, the number of
     * experts: B is [G, N, K] (expert g's [N, K] matrix ldb * N bytes after expert g - 1's),
     * scale_b [G, N]. `m` is the number of A rows: the total for contiguous, G x max_M for
     * masked. The rows per expert live on the device (operands) and are never read on the
     * host: one kernel serves every routing. `expected_m` is a planning hint only, the rows an
     * expert is expected to have (0: m / G); it picks the token band and so the kernel. */
    int64_t groups;
    jit_group_layout_t layout;
    int64_t expected_m;
    /* Reserved for later forms of the grouped call (A rows gathered by token index, the
     * block-scaled formats); must be 0. */
    uint32_t group_flags;
} jit_problem_t;

/* Fill `p` with defaults: E4M3 x E4M3, row scales, BF16 out, linear epilogue, alpha 1. */
JIT_EXTERN void jit_problem_init(jit_problem_t *p);

/* The *_init functions below are also macros that pass the caller's sizeof: the structs grow
 * at their ends from one release to the next, and a program built against an older jitgemm.h
 * must not have a newer library write past its struct. The plain functions stay exported for
 * bindings that call them by name; they write the library's whole struct (struct_size tells how
 * much), so a binding gives them a buffer at least that large. */
JIT_EXTERN void jit_problem_init_sized(jit_problem_t *p, size_t size);
#define jit_problem_init(p) jit_problem_init_sized((p), sizeof(*(p)))

/* Device pointers for one call. */
typedef struct jit_operands {
    uint32_t struct_size; /* set by jit_operands_init */
    const void *a, *b;
    /* row and 128x128 modes: const float*; the 8-bit block modes: tiled bytes */
    const void *scale_a, *scale_b;
    const void *residual;          /* linear_add only */
    void *d;
    /* Grouped GEMM only (jit_gemm_grouped), device memory read by the kernel: contiguous
     * layout, offsets[G + 1] (int32, non-decreasing, offsets[G] <= m); masked layout,
     * counts[G] (int32, each clamped to 0 .. max_M). */
    const int32_t *group_offsets;
    const int32_t *group_counts;
    /* Reserved: A row index per routed token, for a later gathering form; must be NULL. */
    const int32_t *gather_index;
} jit_operands_t;

JIT_EXTERN void jit_operands_init(jit_operands_t *o);
JIT_EXTERN void jit_operands_init_sized(jit_operands_t *o, size_t size);
#define jit_operands_init(o) jit_operands_init_sized((o), sizeof(*(o)))

/* ---- context ----------------------------------------------------------------------------- */

typedef struct jit_context jit_context_t;

typedef enum jit_log_level {
    JIT_LOG_SILENT = 0,
    JIT_LOG_ERROR = 1,
    JIT_LOG_WARN = 2, /* default */
    JIT_LOG_INFO = 3,
    JIT_LOG_DEBUG = 4,
} jit_log_level_t;

/* What a context does with a kernel it finds neither in memory nor in the disk cache. */
typedef enum jit_compile_mode {
    JIT_COMPILE_ALWAYS = 0, /* compile it (default) */
    /* Fail with JIT_NOT_IN_CACHE, naming the key: for a serving host whose cache was prewarmed,
     * where a compile on a request is a bug to report rather than seconds of latency to hide. */
    JIT_COMPILE_NEVER = 1,
} jit_compile_mode_t;

typedef struct jit_context_options {
    uint32_t struct_size;  /* set by jit_context_options_init */
    const char *cache_dir; /* NULL: $JITGEMM_CACHE_DIR, $XDG_CACHE_HOME/jitgemm, ~/.cache/jitgemm */
    const char *arch;      /* NULL: the current device's arch; else "sm_90a", "sm_107a", ... */
    int sm_count;          /* 0: the current device's, else the arch profile's default */
    jit_log_level_t log_level;
    const char *toolkit_dir; /* NULL: $JITGEMM_TOOLKIT_DIR, else the newest NVRTC found */
    int64_t cache_max_bytes; /* 0: $JITGEMM_CACHE_MAX_BYTES, else 4 GiB */
    /* NEVER if this or $JITGEMM_COMPILE ("always" or "never") says never: either can turn
     * compiles off, neither can turn them back on. A caller built with the header before this
     * field (struct_size ending at cache_max_bytes) gets ALWAYS. */
    jit_compile_mode_t compile_mode;
} jit_context_options_t;

JIT_EXTERN void jit_context_options_init(jit_context_options_t *opt);
JIT_EXTERN void jit_context_options_init_sized(jit_context_options_t *opt, size_t size);
#define jit_context_options_init(opt) jit_context_options_init_sized((opt), sizeof(*(opt)))

/* Create a context. `opt` may be NULL. A context may be used from several threads at once.
 * Creating one needs no GPU: compile-only work (prewarm, inspect) runs without a driver. On
 * failure *out is NULL and the message is available from jit_last_error(NULL). */
JIT_EXTERN jit_status_t jit_context_create(const jit_context_options_t *opt, jit_context_t **out);
JIT_EXTERN void jit_context_destroy(jit_context_t *ctx);

/* Message of the last failure on `ctx` in the calling thread (ctx NULL: of the last failed
 * jit_context_create in this thread). Empty string if none. Valid until the next call. */
JIT_EXTERN const char *jit_last_error(const jit_context_t *ctx);

/* The arch and SM count the context targets, e.g. "sm_90a", 132. */
JIT_EXTERN const char *jit_context_arch(const jit_context_t *ctx);
JIT_EXTERN int jit_context_sm_count(const jit_context_t *ctx);

/* Where a context's kernels came from since it was created, counted per kernel request that
 * reached the lookup (jit_prewarm: once per distinct key; jit_inspect of the PTX or the entry;
 * jit_gemm: once per kernel per CUDA context, when it is first loaded there). The jit_gemm hot
 * path, a kernel already loaded, is not counted: it stays free of shared writes. */
typedef struct jit_stats {
    uint32_t struct_size;   /* set by jit_stats_init */
    uint64_t memory_hits;   /* found in this context's memory */
    uint64_t disk_hits;     /* read from the disk cache */
    uint64_t compiles;      /* compiled (and published to the disk cache) */
    double compile_seconds; /* NVRTC + nvJitLink time of those compiles */
    uint64_t not_in_cache;  /* misses refused by JIT_COMPILE_NEVER (JIT_NOT_IN_CACHE) */
    uint64_t failures;      /* requests that failed otherwise: compile, link or cache errors */
} jit_stats_t;

JIT_EXTERN void jit_stats_init(jit_stats_t *stats);
JIT_EXTERN void jit_stats_init_sized(jit_stats_t *stats, size_t size);
#define jit_stats_init(stats) jit_stats_init_sized((stats), sizeof(*(stats)))
/* Copy the context's counters into *out (struct_size set by jit_stats_init). Safe while other
 * threads use the context; each counter is read atomically, not all at one instant. */
JIT_EXTERN jit_status_t jit_context_stats(const jit_context_t *ctx, jit_stats_t *out);

/* ---- the call ---------------------------------------------------------------------------- */

/* Run D = op(A, B) on `stream` (a CUstream; NULL = the default stream) in the CUDA context that
 * is current on the calling thread (the device's primary context if none is). The first call
 * for a key compiles (or loads from the disk cache); later calls only launch. */
JIT_EXTERN jit_status_t jit_gemm(jit_context_t *ctx, const jit_problem_t *problem,
                                 const jit_operands_t *operands, void *stream);

/* ---- the activation quantizer ----------------------------------------------------------- */

/* Where jit_quantize_fp8_1x128 reads and writes (device pointers), and how it rounds scales. */
typedef struct jit_quantize_operands {
    uint32_t struct_size; /* set by jit_quantize_operands_init */
    const void *x;        /* BF16 X [M, K], row stride problem.lda (16-byte aligned) */
    void *q;              /* E4M3 Q [M, K], row stride problem.ldd (16-byte aligned) */
    float *scales;        /* SFA, as problem.sfa_layout and ld_sfa say (4-byte aligned) */
    /* 0: scale = amax / 448. 1: that rounded up to a power of two, at least 2^-126 (UE8M0
     * values in FP32, as DeepSeek-V3.1-style checkpoints store them). */
    int pow2_scales;
} jit_quantize_operands_t;

JIT_EXTERN void jit_quantize_operands_init(jit_quantize_operands_t *o);
JIT_EXTERN void jit_quantize_operands_init_sized(jit_quantize_operands_t *o, size_t size);
#define jit_quantize_operands_init(o) jit_quantize_operands_init_sized((o), sizeof(*(o)))

/* Quantize a BF16 activation X [M, K] to the A operand of JIT_SCALE_BLOCK_1X128_128X128: for
 * each row and each 128 consecutive K (a partial last group has its own scale),
 * scale = amax|x| / 448 (1 for a group of zeros) and Q = E4M3(x / scale), rounded to nearest
 * even and saturated to +-448 (docs/kernels-quantize.md). problem.epilogue must be
 * JIT_EPILOGUE_QUANTIZE_FP8_1X128; it reads m, k (a multiple of 16), lda (X's row stride, 0:
 * K, a multiple of 8), ldd (Q's, 0: K, a multiple of 16), sfa_layout and ld_sfa (as the GEMM
 * reads them: 0 packed; m-major needs ld_sfa >= M) and scale_type (default or f32); the op fixes
 * the formats, so n, the dtypes and scale_mode are not read. Runs on `stream` like jit_gemm. */
JIT_EXTERN jit_status_t jit_quantize_fp8_1x128(jit_context_t *ctx, const jit_problem_t *problem,
                                               const jit_quantize_operands_t *operands,
                                               void *stream);
/* Grouped GEMM for mixture-of-experts: one call computes every expert g,
 *   D_g = op(A_g, B_g)   for the rows of A that belong to expert g,
 * with the problem's groups, layout and expected_m set (jit_group_layout_t says where expert
 * g's rows are). Row scales only: scale_a per A row, scale_b [G, N]. Epilogues linear and
 * linear_swiglu (B rows as gate/up pairs, as for jit_gemm). The rows per expert are read by the
 * kernel from operands.group_offsets or group_counts, never on the host, so the call may be
 * captured in a CUDA graph and replayed with other counts in the same buffer, and changing the
 * counts never compiles a new kernel. An expert with no rows costs no weight reads. */
JIT_EXTERN jit_status_t jit_gemm_grouped(jit_context_t *ctx, const jit_problem_t *problem,
                                         const jit_operands_t *operands, void *stream);

/* ---- prewarm ----------------------------------------------------------------------------- */

typedef enum jit_prewarm_result {
    JIT_PREWARM_COMPILED = 0,
    JIT_PREWARM_CACHED = 1,
    JIT_PREWARM_FAILED = 2,
} jit_prewarm_result_t;

typedef struct jit_prewarm_event {
    size_t index, total;      /* index of the problem just finished, number of problems */
    const jit_problem_t *problem;
    jit_prewarm_result_t result;
    jit_status_t status;
    double seconds;
    const char *key_hash;     /* 32 hex digits, or "" if planning failed */
    const char *error;        /* "" unless failed */
} jit_prewarm_event_t;

typedef void (*jit_progress_fn)(const jit_prewarm_event_t *event, void *user);

/* Compile (or find in the cache) the kernel of every problem, `jobs` at a time (0: one per
 * core). Problems that map to one key are compiled once. `progress` is called once per problem,
 * from one thread at a time. Returns JIT_OK if every problem succeeded, else the status of the
 * first failure. Needs no GPU. */
JIT_EXTERN jit_status_t jit_prewarm(jit_context_t *ctx, const jit_problem_t *problems, size_t count,
                                    int jobs, jit_progress_fn progress, void *user);

/* ---- inspect ----------------------------------------------------------------------------- */

typedef enum jit_inspect_what {
    JIT_INSPECT_KEY = 1,    /* canonical key text and its hash */
    JIT_INSPECT_PLAN = 2,   /* the plan, as JSON */
    JIT_INSPECT_SOURCE = 3, /* the generated CUDA C */
    JIT_INSPECT_PTX = 4,    /* the PTX NVRTC produced (compiles if needed) */
    JIT_INSPECT_ENTRY = 5,  /* the manifest entry, as JSON (compiles if needed) */
} jit_inspect_what_t;

/* Run the pipeline for `problem` up to the stage `what` names and return what that stage holds
 * as a NUL-terminated string in *out (free with jit_free). Needs no GPU. */
JIT_EXTERN jit_status_t jit_inspect(jit_context_t *ctx, const jit_problem_t *problem,
                                    jit_inspect_what_t what, char **out);

/* The cubin of `problem`'s kernel (compiled if it is not cached, unless compiling is off) into
 * *cubin (*size bytes; free with jit_free), for a disassembler or a loader of one's own. Needs
 * no GPU. */
JIT_EXTERN jit_status_t jit_inspect_cubin(jit_context_t *ctx, const jit_problem_t *problem,
                                          void **cubin, size_t *size);

JIT_EXTERN void jit_free(void *p);

/* ---- helpers for block-scaled operands ---------------------------------------------------- */

/* Byte offset of scale (row, kblock) in the 128x4 tiled layout that TMA and tcgen05.cp expect:
 * rows padded to 128, scale columns to 4, each 128x4 tile 512 contiguous bytes. */
JIT_EXTERN size_t jit_scale_tile_offset(int64_t row, int64_t kblock, int64_t n_kblocks);
/* Bytes of a tiled scale array for `rows` rows and `n_kblocks` scales per row. */
JIT_EXTERN size_t jit_scale_tile_bytes(int64_t rows, int64_t n_kblocks);
/* Convert row-major scales src[rows][n_kblocks] to the tiled layout in dst (jit_scale_tile_bytes
 * bytes). The padded scales of real rows (K blocks n_kblocks .. a multiple of 4) are always
 * 0x00, a finite scale in every format: the kernel reads them with zero data, and a NaN pad
 * would make 0 x NaN. Rows past `rows` are filled with `pad`. */
JIT_EXTERN void jit_scale_to_tiled(const uint8_t *src, int64_t rows, int64_t n_kblocks, uint8_t pad,
                                   uint8_t *dst);

/* ---- names ------------------------------------------------------------------------------- */

/* Parse and print the words the shape list and the CLI use ("e4m3", "ue8m0/32", "linear_add").
 * The parsers return JIT_INVALID_ARGUMENT for an unknown word. */
JIT_EXTERN const char *jit_dtype_name(jit_dtype_t d);
JIT_EXTERN const char *jit_scale_mode_name(jit_scale_mode_t s);
JIT_EXTERN const char *jit_epilogue_name(jit_epilogue_t e);
JIT_EXTERN jit_status_t jit_dtype_parse(const char *s, jit_dtype_t *out);
JIT_EXTERN jit_status_t jit_scale_mode_parse(const char *s, jit_scale_mode_t *out);
JIT_EXTERN jit_status_t jit_epilogue_parse(const char *s, jit_epilogue_t *out);
/* "k-major", "m-major"; "default", "f32", "ue8m0". */
JIT_EXTERN const char *jit_sfa_layout_name(jit_sfa_layout_t l);
JIT_EXTERN const char *jit_scale_type_name(jit_scale_type_t t);
JIT_EXTERN jit_status_t jit_sfa_layout_parse(const char *s, jit_sfa_layout_t *out);
JIT_EXTERN jit_status_t jit_scale_type_parse(const char *s, jit_scale_type_t *out);
/* "none", "contiguous", "masked". */
JIT_EXTERN const char *jit_group_layout_name(jit_group_layout_t l);
JIT_EXTERN jit_status_t jit_group_layout_parse(const char *s, jit_group_layout_t *out);

#ifdef __cplusplus
}
#endif
#endif /* JITGEMM_H */
