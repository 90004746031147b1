/*
 * The launch state the families share (kernel_src/stream_workspace.c, kernel_src/tmap_cache.c),
 * against a recording driver table: a workspace per stream, found again without allocating, in
 * use by two streams' launches at the same time; captures, a full table and CU_STREAM_PER_THREAD;
 * a failed allocation that keeps nothing; and the per-thread tensor-map cache, which hits only
 * for the same arguments in the same thread.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "stream_workspace.h"
#include "tmap_cache.h"

/* ---- a recording driver, safe to call from several threads -------------------------------- */

static atomic_int g_allocs, g_frees, g_memsets, g_records, g_waits, g_syncs, g_encodes, g_attempts;
static atomic_int g_fail_allocs; /* the next this many allocations fail */
static atomic_uint_fast64_t g_next_ptr = 0x10000;
static size_t g_last_memset;

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes) {
    if (atomic_load(&g_fail_allocs) > 0) {
        atomic_fetch_sub(&g_fail_allocs, 1);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    atomic_fetch_add(&g_allocs, 1);
    *p = (CUdeviceptr)atomic_fetch_add(&g_next_ptr, (bytes + 0xfff) / 0x1000 * 0x1000 + 0x1000);
    return CUDA_SUCCESS;
}
static CUresult fake_free(CUdeviceptr p) {
    (void)p;
    atomic_fetch_add(&g_frees, 1);
    return CUDA_SUCCESS;
}
static CUresult fake_memset(CUdeviceptr p, unsigned char v, size_t n) {
    (void)p;
    cr_expect_eq(v, 0);
    g_last_memset = n;
    atomic_fetch_add(&g_memsets, 1);
    return CUDA_SUCCESS;
}
static CUresult fake_event_create(CUevent *e, unsigned flags) {
    (void)flags;
    *e = (CUevent)(uintptr_t)0x77;
    return CUDA_SUCCESS;
}
static CUresult fake_event_destroy(CUevent e) {
    (void)e;
    return CUDA_SUCCESS;
}
static CUresult fake_record(CUevent e, CUstream s) {
    (void)e, (void)s;
    atomic_fetch_add(&g_records, 1);
    return CUDA_SUCCESS;
}
static CUresult fake_wait(CUstream s, CUevent e, unsigned f) {
    (void)s, (void)e, (void)f;
    atomic_fetch_add(&g_waits, 1);
    return CUDA_SUCCESS;
}
static CUresult fake_sync(CUstream s) {
    (void)s;
    atomic_fetch_add(&g_syncs, 1);
    return CUDA_SUCCESS;
}
/* Streams whose handle is odd are "capturing", with the handle as the capture id. */
static CUresult fake_capture_info(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                  const CUgraphNode **deps, size_t *n) {
    (void)g, (void)deps, (void)n;
    uintptr_t h = (uintptr_t)s;
    *st = (h & 1) && s != CU_STREAM_LEGACY ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                           : CU_STREAM_CAPTURE_STATUS_NONE;
    *id = *st == CU_STREAM_CAPTURE_STATUS_ACTIVE ? (cuuint64_t)h : 0;
    return CUDA_SUCCESS;
}
static CUresult fake_error_name(CUresult r, const char **s) {
    *s = r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_UNKNOWN";
    return CUDA_SUCCESS;
}
static CUresult fake_encode(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                            const cuuint64_t *dims, const cuuint64_t *strides,
                            const cuuint32_t *box, const cuuint32_t *elem, CUtensorMapInterleave il,
                            CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                            CUtensorMapFloatOOBfill oob) {
    (void)dt, (void)rank, (void)strides, (void)box, (void)elem, (void)il, (void)sw, (void)l2;
    (void)oob;
    atomic_fetch_add(&g_attempts, 1);
    if (dims[1] == 0)
        return CUDA_ERROR_INVALID_VALUE;
    atomic_fetch_add(&g_encodes, 1);
    /* The map names its address and rows, so a test can tell which arguments it came from. */
    memset(map, 0, sizeof(*map));
    uint64_t words[2] = {(uint64_t)(uintptr_t)addr, dims[1]};
    memcpy(map, words, sizeof(words));
    return CUDA_SUCCESS;
}

static jit__driver_t fake_driver(void) {
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    drv.cuMemAlloc = fake_alloc;
    drv.cuMemFree = fake_free;
    drv.cuMemsetD8 = fake_memset;
    drv.cuEventCreate = fake_event_create;
    drv.cuEventDestroy = fake_event_destroy;
    drv.cuEventRecord = fake_record;
    drv.cuStreamWaitEvent = fake_wait;
    drv.cuStreamSynchronize = fake_sync;
    drv.cuStreamGetCaptureInfo = fake_capture_info;
    drv.cuGetErrorName = fake_error_name;
    drv.cuGetErrorString = fake_error_name;
    drv.cuTensorMapEncodeTiled = fake_encode;
    return drv;
}

/* ---- the launches ------------------------------------------------------------------------- */

/* What a launch saw: the workspace it was given. */
typedef struct seen {
    CUdeviceptr ws;
    CUstream stream;
    int calls;
} seen_t;

static jit_status_t remember(const jit__driver_t *drv, CUdeviceptr ws, CUstream stream, void *arg,
                             jit__diag_t *d) {
    (void)drv, (void)d;
    seen_t *s = arg;
    s->ws = ws;
    s->stream = stream;
    s->calls++;
    return JIT_OK;
}

static CUdeviceptr launch_on(const jit__driver_t *drv, jit__ws_set_t *set, uintptr_t stream) {
    seen_t s = {0, NULL, 0};
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__ws_launch(drv, set, (CUstream)stream, remember, &s, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(s.calls, 1);
    cr_assert_eq((uintptr_t)s.stream, stream);
    return s.ws;
}

static jit__ws_set_t *make_set(const jit__driver_t *drv, size_t bytes, size_t zero) {
    jit__ws_set_t *set = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__ws_set_create(drv, bytes, zero, &set, &d), JIT_OK, "%s", d.msg);
    return set;
}

/* The capture workspace is made with the set, zeroed and finished before anything is captured;
 * each stream's own comes with its first launch, its counters zeroed before that launch on that
 * stream (an event recorded on the legacy stream after the memset, waited on by the stream),
 * and later launches on the stream find it with no driver call at all. */
Test(ws, one_workspace_per_stream_found_again) {
    jit__driver_t drv = fake_driver();
    jit__ws_set_t *set = make_set(&drv, 4096, 256);
    cr_expect_eq(g_allocs, 1);
    cr_expect_eq(g_memsets, 1);
    cr_expect_eq(g_last_memset, 256u, "only the counters are zeroed");
    cr_expect_eq(g_syncs, 1, "the capture workspace is zero before any capture uses it");
    CUdeviceptr a = launch_on(&drv, set, 0x20);
    cr_expect_eq(g_allocs, 2);
    cr_expect_eq(g_memsets, 2);
    cr_expect_eq(g_records, 1);
    cr_expect_eq(g_waits, 1, "the stream waits for its workspace's memset");
    CUdeviceptr b = launch_on(&drv, set, 0x40);
    cr_expect_neq(a, b);
    int allocs = g_allocs, records = g_records, waits = g_waits;
    for (int i = 0; i < 10; i++) {
        cr_expect_eq(launch_on(&drv, set, 0x20), a);
        cr_expect_eq(launch_on(&drv, set, 0x40), b);
    }
    cr_expect_eq(g_allocs, allocs, "no allocation once a stream has its workspace");
    cr_expect_eq(g_records, records, "no event on the direct path");
    cr_expect_eq(g_waits, waits);
    cr_expect_eq(jit__ws_set_streams(set), 2);
    jit__ws_set_destroy(&drv, set);
    cr_expect_eq(g_frees, 3, "every workspace is freed");
}

/* Nothing may be allocated into a capture: a captured launch uses the capture workspace, and
 * waits on the last launch there only when the same capture recorded it (the driver refuses a
 * dependency on work outside the capture). */
Test(ws, captures_use_the_capture_workspace_in_order) {
    jit__driver_t drv = fake_driver();
    jit__ws_set_t *set = make_set(&drv, 4096, 256);
    CUdeviceptr direct = launch_on(&drv, set, 0x20);
    int allocs = g_allocs;
    g_records = g_waits = 0;
    CUdeviceptr c1 = launch_on(&drv, set, 0x11);
    cr_expect_neq(c1, direct);
    cr_expect_eq(g_allocs, allocs, "nothing allocated into a capture");
    cr_expect_eq(g_waits, 0, "the first launch of a capture waits on nothing outside it");
    cr_expect_eq(g_records, 1);
    cr_expect_eq(launch_on(&drv, set, 0x11), c1);
    cr_expect_eq(g_waits, 1, "ordered within the capture");
    cr_expect_eq(launch_on(&drv, set, 0x13), c1);
    cr_expect_eq(g_waits, 1, "no wait on another capture's record");
    cr_expect_eq(launch_on(&drv, set, 0x20), direct, "outside the capture: the stream's own");
    cr_expect_eq(g_waits, 1);
    jit__ws_set_destroy(&drv, set);
}

/* Past JIT_WS_STREAMS streams a launch shares the capture workspace, ordered by its event. */
Test(ws, a_full_table_shares_the_capture_workspace) {
    jit__driver_t drv = fake_driver();
    jit__ws_set_t *set = make_set(&drv, 4096, 0);
    CUdeviceptr ws[JIT_WS_STREAMS];
    for (int i = 0; i < JIT_WS_STREAMS; i++)
        ws[i] = launch_on(&drv, set, 0x100 + 0x20 * (uintptr_t)i);
    for (int i = 1; i < JIT_WS_STREAMS; i++)
        cr_expect_neq(ws[i], ws[i - 1]);
    cr_expect_eq(jit__ws_set_streams(set), JIT_WS_STREAMS);
    g_records = g_waits = 0;
    CUdeviceptr extra = launch_on(&drv, set, 0x20);
    CUdeviceptr again = launch_on(&drv, set, 0x40);
    cr_expect_eq(extra, again, "the streams past the table share one workspace");
    for (int i = 0; i < JIT_WS_STREAMS; i++)
        cr_expect_neq(extra, ws[i]);
    cr_expect_eq(g_records, 2);
    cr_expect_eq(g_waits, 1, "the second waits for the first");
    cr_expect_eq(launch_on(&drv, set, 0x100), ws[0], "the table's streams keep theirs");
    jit__ws_set_destroy(&drv, set);
}

/* A failed allocation fails the launch with a message, launches nothing, and keeps nothing: the
 * next launch on that stream tries again. */
Test(ws, a_failed_allocation_keeps_nothing) {
    jit__driver_t drv = fake_driver();
    jit__ws_set_t *set = make_set(&drv, 4096, 256);
    atomic_store(&g_fail_allocs, 1);
    seen_t s = {0, NULL, 0};
    jit__diag_t d;
    jit__diag_init(&d);
    cr_expect_eq(jit__ws_launch(&drv, set, (CUstream)0x20, remember, &s, &d), JIT_CUDA_ERROR);
    cr_expect(strstr(d.msg, "workspace") && strstr(d.msg, "OUT_OF_MEMORY"), "%s", d.msg);
    cr_expect_eq(s.calls, 0);
    cr_expect_eq(jit__ws_set_streams(set), 0);
    CUdeviceptr ws = launch_on(&drv, set, 0x20);
    cr_expect_neq(ws, 0u);
    cr_expect_eq(jit__ws_set_streams(set), 1);
    jit__ws_set_destroy(&drv, set);
    cr_expect_eq(g_frees, g_allocs);
}

/* ---- several threads ---------------------------------------------------------------------- */

typedef struct worker {
    const jit__driver_t *drv;
    jit__ws_set_t *set;
    uintptr_t stream;
    CUdeviceptr first;
    int same;       /* every launch got the first launch's workspace */
    int overlapped; /* the launch saw the other thread inside its own launch */
} worker_t;

static atomic_int g_inside;

/* A launch that stays inside until the other thread's launch is inside too (or 5 s pass): two
 * launches of one kernel on two streams must be able to run at once. */
static jit_status_t meet(const jit__driver_t *drv, CUdeviceptr ws, CUstream stream, void *arg,
                         jit__diag_t *d) {
    (void)drv, (void)ws, (void)stream, (void)d;
    worker_t *w = arg;
    atomic_fetch_add(&g_inside, 1);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (atomic_load(&g_inside) >= 2) {
            w->overlapped = 1;
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - t0.tv_sec < 5);
    return JIT_OK;
}

static void *meet_on_stream(void *arg) {
    worker_t *w = arg;
    jit__diag_t d;
    jit__diag_init(&d);
    jit__ws_launch(w->drv, w->set, (CUstream)w->stream, meet, w, &d);
    return NULL;
}

Test(ws, launches_on_two_streams_run_at_once) {
    jit__driver_t drv = fake_driver();
    jit__ws_set_t *set = make_set(&drv, 4096, 256);
    /* Each stream's workspace already made, and made on the launch itself: both cases. */
    launch_on(&drv, set, 0x20);
    worker_t w[2] = {{&drv, set, 0x20, 0, 0, 0}, {&drv, set, 0x40, 0, 0, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, meet_on_stream, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_expect(w[0].overlapped && w[1].overlapped,
              "a launch waited for another stream's launch to end");
    jit__ws_set_destroy(&drv, set);
}

static jit_status_t check_same(const jit__driver_t *drv, CUdeviceptr ws, CUstream stream, void *arg,
                               jit__diag_t *d) {
    (void)drv, (void)stream, (void)d;
    worker_t *w = arg;
    if (!w->first)
        w->first = ws;
    else if (ws != w->first)
        w->same = 0;
    return JIT_OK;
}

static void *many_launches(void *arg) {
    worker_t *w = arg;
    jit__diag_t d;
    jit__diag_init(&d);
    w->same = 1;
    for (int i = 0; i < 2000; i++)
        if (jit__ws_launch(w->drv, w->set, (CUstream)w->stream, check_same, w, &d) != JIT_OK)
            w->same = 0;
    return NULL;
}

/* Eight threads, a stream each, launching at once: one workspace per stream, made once, never
 * another stream's. CU_STREAM_PER_THREAD, one handle for a stream per thread, gets one per
 * thread. */
Test(ws, eight_threads_eight_streams) {
    for (int per_thread = 0; per_thread < 2; per_thread++) {
        jit__driver_t drv = fake_driver();
        jit__ws_set_t *set = make_set(&drv, 4096, 256);
        int allocs = g_allocs;
        worker_t w[8];
        pthread_t t[8];
        for (int i = 0; i < 8; i++) {
            memset(&w[i], 0, sizeof(w[i]));
            w[i].drv = &drv;
            w[i].set = set;
            w[i].stream =
                per_thread ? (uintptr_t)CU_STREAM_PER_THREAD : 0x1000 + 0x20 * (uintptr_t)i;
            cr_assert_eq(pthread_create(&t[i], NULL, many_launches, &w[i]), 0);
        }
        for (int i = 0; i < 8; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < 8; i++) {
            cr_expect(w[i].same, "thread %d saw another workspace", i);
            for (int j = 0; j < i; j++)
                cr_expect_neq(w[i].first, w[j].first, "threads %d and %d share one", i, j);
        }
        cr_expect_eq(g_allocs - allocs, 8, "one allocation per stream");
        cr_expect_eq(jit__ws_set_streams(set), 8);
        jit__ws_set_destroy(&drv, set);
    }
}

/* ---- the tensor-map cache ----------------------------------------------------------------- */

static jit__tmap_args_t map_args(const void *addr, uint64_t rows) {
    jit__tmap_args_t a;
    jit__tmap_args_init(&a);
    a.dtype = CU_TENSOR_MAP_DATA_TYPE_UINT8;
    a.rank = 2;
    a.addr = addr;
    a.dims[0] = 4096;
    a.dims[1] = rows;
    a.strides[0] = 4096;
    a.box[0] = 128;
    a.box[1] = 64;
    a.elem_strides[0] = a.elem_strides[1] = 1;
    a.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    return a;
}

static uint64_t encoded_rows(const jit__driver_t *drv, const jit__tmap_args_t *a,
                             const void **addr) {
    CUtensorMap map;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__tmap_encode_cached(drv, a, &map, "the map", &d), JIT_OK, "%s", d.msg);
    uint64_t words[2];
    memcpy(words, &map, sizeof(words));
    *addr = (const void *)(uintptr_t)words[0];
    return words[1];
}

/* The same arguments give the cached map without encoding; any other argument gives its own. */
Test(tmap, the_same_arguments_hit_and_any_other_misses) {
    jit__driver_t drv = fake_driver();
    static char bufs[300][16];
    const void *addr;
    jit__tmap_args_t a = map_args(bufs[0], 1024);
    cr_expect_eq(encoded_rows(&drv, &a, &addr), 1024u);
    cr_expect_eq(addr, bufs[0]);
    cr_expect_eq(g_encodes, 1);
    cr_expect_eq(encoded_rows(&drv, &a, &addr), 1024u);
    cr_expect_eq(g_encodes, 1, "a hit");
    jit__tmap_args_t b = map_args(bufs[0], 512);
    cr_expect_eq(encoded_rows(&drv, &b, &addr), 512u);
    cr_expect_eq(g_encodes, 2, "other rows");
    b = map_args(bufs[0], 1024);
    b.box[1] = 128;
    encoded_rows(&drv, &b, &addr);
    cr_expect_eq(g_encodes, 3, "another box");
    b = map_args(bufs[1], 1024);
    encoded_rows(&drv, &b, &addr);
    cr_expect_eq(addr, bufs[1]);
    cr_expect_eq(g_encodes, 4, "another address");
    /* More maps than the cache holds: the oldest go, and each is encoded again, right. */
    for (int i = 0; i < 300; i++) {
        jit__tmap_args_t c = map_args(bufs[i], 256);
        cr_expect_eq(encoded_rows(&drv, &c, &addr), 256u);
        cr_expect_eq(addr, bufs[i]);
    }
    jit__tmap_args_t c = map_args(bufs[299], 256);
    int before = g_encodes;
    encoded_rows(&drv, &c, &addr);
    cr_expect_eq(g_encodes, before, "the latest maps are still there");
}

/* A map encoded by another driver table is not reused, and a failed encode caches nothing. */
static CUresult other_encode(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                             const cuuint64_t *dims, const cuuint64_t *strides,
                             const cuuint32_t *box, const cuuint32_t *elem,
                             CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                             CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    return fake_encode(map, dt, rank, addr, dims, strides, box, elem, il, sw, l2, oob);
}

Test(tmap, another_encoder_misses_and_a_failure_is_not_kept) {
    jit__driver_t drv = fake_driver(), other = fake_driver();
    other.cuTensorMapEncodeTiled = other_encode;
    static char buf[16];
    const void *addr;
    jit__tmap_args_t a = map_args(buf, 64);
    encoded_rows(&drv, &a, &addr);
    encoded_rows(&other, &a, &addr);
    cr_expect_eq(g_encodes, 2, "each driver table encodes its own");
    jit__tmap_args_t bad = map_args(buf, 0);
    CUtensorMap map;
    jit__diag_t d;
    jit__diag_init(&d);
    int attempts = g_attempts;
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(jit__tmap_encode_cached(&drv, &bad, &map, "the bad map", &d), JIT_CUDA_ERROR);
        cr_expect(strstr(d.msg, "the bad map"), "%s", d.msg);
    }
    cr_expect_eq(g_attempts, attempts + 2, "a failed encode is tried again, not cached");
}

static void *encode_in_thread(void *arg) {
    const jit__driver_t *drv = arg;
    static char buf[16];
    const void *addr;
    jit__tmap_args_t a = map_args(buf, 64);
    encoded_rows(drv, &a, &addr);
    encoded_rows(drv, &a, &addr);
    return NULL;
}

/* Each thread has its own cache: a map cached by one thread is encoded once by another. */
Test(tmap, each_thread_has_its_own_cache) {
    jit__driver_t drv = fake_driver();
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, encode_in_thread, &drv), 0);
        pthread_join(t[i], NULL);
    }
    cr_expect_eq(g_encodes, 2, "one encode per thread, the second call a hit");
}
