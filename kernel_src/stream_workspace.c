/*
 * Per-stream device workspaces (stream_workspace.h). The table is open-addressed by stream and
 * only ever grows while the set lives: an entry is written whole, then published with a release
 * store, and readers load it with acquire, so a reader sees either no entry or a complete one.
 */
#include "stream_workspace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct ws_entry {
    CUstream stream;
    uint64_t thread; /* the calling thread's number for CU_STREAM_PER_THREAD, else 0 */
    CUdeviceptr ptr;
} ws_entry_t;

struct jit__ws_set {
    size_t bytes, zero_bytes;
    _Atomic(ws_entry_t *) table[JIT_WS_STREAMS];
    atomic_int streams;
    /* Held to add a stream, and across each wait, launch and record on the capture workspace. */
    pthread_mutex_t lock;
    CUdeviceptr shared;
    CUevent done;
    int recorded;            /* `done` has been recorded at least once */
    cuuint64_t done_capture; /* the capture that recorded it last, 0 outside capture */
};

_Static_assert((JIT_WS_STREAMS & (JIT_WS_STREAMS - 1)) == 0, "a power of two");

static atomic_uint_fast64_t g_next_thread = 1;
static _Thread_local uint64_t t_thread;

/* A number of this thread's own, never reused in the process (a thread that exits keeps it). */
static uint64_t thread_number(void) {
    if (!t_thread)
        t_thread = (uint64_t)atomic_fetch_add(&g_next_thread, 1);
    return t_thread;
}

static unsigned slot_of(CUstream stream, uint64_t thread) {
    uint64_t h = (uint64_t)(uintptr_t)stream ^ (thread * 0x9e3779b97f4a7c15ull);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return (unsigned)(h & (JIT_WS_STREAMS - 1));
}

static ws_entry_t *find(jit__ws_set_t *set, CUstream stream, uint64_t thread) {
    unsigned h = slot_of(stream, thread);
    for (unsigned i = 0; i < JIT_WS_STREAMS; i++) {
        ws_entry_t *e =
            atomic_load_explicit(&set->table[(h + i) & (JIT_WS_STREAMS - 1)], memory_order_acquire);
        if (!e)
            return NULL;
        if (e->stream == stream && e->thread == thread)
            return e;
    }
    return NULL;
}

/* Zero the first n bytes of a new workspace before `stream`'s next launch. cuMemsetD8 runs on
 * the legacy default stream, which a stream made with CU_STREAM_NON_BLOCKING does not wait for,
 * so the stream waits for an event recorded after it. */
static CUresult zero_before(const jit__driver_t *drv, CUdeviceptr p, size_t n, CUstream stream) {
    if (n == 0)
        return CUDA_SUCCESS;
    CUresult r = drv->cuMemsetD8(p, 0, n);
    if (r != CUDA_SUCCESS)
        return r;
    CUevent zeroed = NULL;
    r = drv->cuEventCreate(&zeroed, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS)
        r = drv->cuEventRecord(zeroed, NULL);
    if (r == CUDA_SUCCESS)
        r = drv->cuStreamWaitEvent(stream, zeroed, 0);
    if (zeroed)
        drv->cuEventDestroy(zeroed); /* released by the driver once it has completed */
    return r;
}

/* The stream's workspace, made now; *out NULL when the table is full. Under the lock. */
static jit_status_t add(const jit__driver_t *drv, jit__ws_set_t *set, CUstream stream,
                        uint64_t thread, ws_entry_t **out, jit__diag_t *d) {
    *out = find(set, stream, thread); /* another thread may have added it meanwhile */
    if (*out)
        return JIT_OK;
    unsigned h = slot_of(stream, thread), slot = JIT_WS_STREAMS;
    for (unsigned i = 0; i < JIT_WS_STREAMS && slot == JIT_WS_STREAMS; i++)
        if (!atomic_load_explicit(&set->table[(h + i) & (JIT_WS_STREAMS - 1)],
                                  memory_order_relaxed))
            slot = (h + i) & (JIT_WS_STREAMS - 1);
    if (slot == JIT_WS_STREAMS)
        return JIT_OK;
    ws_entry_t *e = calloc(1, sizeof(*e));
    if (!e)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "a stream's workspace entry");
    e->stream = stream;
    e->thread = thread;
    CUresult r = drv->cuMemAlloc(&e->ptr, set->bytes);
    if (r == CUDA_SUCCESS)
        r = zero_before(drv, e->ptr, set->zero_bytes, stream);
    if (r != CUDA_SUCCESS) {
        if (e->ptr)
            drv->cuMemFree(e->ptr);
        free(e);
        return jit__cuda_fail(drv, r, "allocating a stream's workspace", d);
    }
    atomic_store_explicit(&set->table[slot], e, memory_order_release);
    atomic_fetch_add(&set->streams, 1);
    *out = e;
    return JIT_OK;
}

static jit_status_t shared_launch(const jit__driver_t *drv, jit__ws_set_t *set, CUstream stream,
                                  cuuint64_t capture, jit__ws_launch_fn fn, void *arg,
                                  jit__diag_t *d) {
    jit_status_t st = JIT_OK;
    pthread_mutex_lock(&set->lock);
    CUresult r = CUDA_SUCCESS;
    if (set->recorded && set->done_capture == capture)
        r = drv->cuStreamWaitEvent(stream, set->done, 0);
    if (r == CUDA_SUCCESS)
        st = fn(drv, set->shared, stream, arg, d);
    if (r == CUDA_SUCCESS && st == JIT_OK)
        r = drv->cuEventRecord(set->done, stream);
    if (r == CUDA_SUCCESS && st == JIT_OK) {
        set->recorded = 1;
        set->done_capture = capture;
    }
    pthread_mutex_unlock(&set->lock);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "ordering launches on the shared workspace", d);
    return st;
}

jit_status_t jit__ws_launch(const jit__driver_t *drv, jit__ws_set_t *set, CUstream stream,
                            jit__ws_launch_fn fn, void *arg, jit__diag_t *d) {
    CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t capture = 0;
    if (drv->cuStreamGetCaptureInfo) {
        CUresult r = drv->cuStreamGetCaptureInfo(stream, &capturing, &capture, NULL, NULL, NULL);
        if (r != CUDA_SUCCESS)
            return jit__cuda_fail(drv, r, "cuStreamGetCaptureInfo", d);
    }
    if (capturing != CU_STREAM_CAPTURE_STATUS_NONE)
        return shared_launch(drv, set, stream, capture, fn, arg, d);
    uint64_t thread = stream == CU_STREAM_PER_THREAD ? thread_number() : 0;
    ws_entry_t *e = find(set, stream, thread);
    if (!e) {
        pthread_mutex_lock(&set->lock);
        jit_status_t st = add(drv, set, stream, thread, &e, d);
        pthread_mutex_unlock(&set->lock);
        if (st != JIT_OK)
            return st;
        if (!e) /* the table is full */
            return shared_launch(drv, set, stream, 0, fn, arg, d);
    }
    return fn(drv, e->ptr, stream, arg, d);
}

jit_status_t jit__ws_set_create(const jit__driver_t *drv, size_t bytes, size_t zero_bytes,
                                jit__ws_set_t **out, jit__diag_t *d) {
    *out = NULL;
    jit__ws_set_t *set = calloc(1, sizeof(*set));
    if (!set)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "a kernel's workspace set");
    set->bytes = bytes;
    set->zero_bytes = zero_bytes < bytes ? zero_bytes : bytes;
    pthread_mutex_init(&set->lock, NULL);
    CUresult r = drv->cuMemAlloc(&set->shared, bytes);
    /* Zeroed before any capture can use it: the memset runs on the legacy stream, and a
     * capture's launches may later be replayed on any stream. */
    if (r == CUDA_SUCCESS && set->zero_bytes)
        r = drv->cuMemsetD8(set->shared, 0, set->zero_bytes);
    if (r == CUDA_SUCCESS && set->zero_bytes)
        r = drv->cuStreamSynchronize(NULL);
    if (r == CUDA_SUCCESS)
        r = drv->cuEventCreate(&set->done, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) {
        jit_status_t st = jit__cuda_fail(drv, r, "allocating a kernel's workspace", d);
        jit__ws_set_destroy(drv, set);
        return st;
    }
    *out = set;
    return JIT_OK;
}

void jit__ws_set_destroy(const jit__driver_t *drv, jit__ws_set_t *set) {
    if (!set)
        return;
    for (unsigned i = 0; i < JIT_WS_STREAMS; i++) {
        ws_entry_t *e = atomic_load_explicit(&set->table[i], memory_order_relaxed);
        if (e) {
            drv->cuMemFree(e->ptr);
            free(e);
        }
    }
    if (set->done)
        drv->cuEventDestroy(set->done);
    if (set->shared)
        drv->cuMemFree(set->shared);
    pthread_mutex_destroy(&set->lock);
    free(set);
}

int jit__ws_set_streams(jit__ws_set_t *set) {
    return atomic_load_explicit(&set->streams, memory_order_relaxed);
}
