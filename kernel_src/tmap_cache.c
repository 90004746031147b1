/*
 * The per-thread tensor-map cache (tmap_cache.h). 32 sets of 4 maps, each set filled in turn;
 * the set is chosen from the address and the row count, which differ between the operands of a
 * call and between the weights of a model.
 */
#include "tmap_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SETS 32
#define WAYS 4

/* Everything a map depends on, zero-padded so that memcmp compares exactly the fields. */
typedef struct tmap_key {
    void *encoder;
    jit__tmap_args_t args;
} tmap_key_t;

typedef struct tmap_entry {
    CUtensorMap map;
    tmap_key_t key;
    int valid;
} tmap_entry_t;

typedef struct tmap_cache {
    tmap_entry_t entry[SETS][WAYS];
    unsigned char next[SETS]; /* the way the set fills next */
} tmap_cache_t;

static _Thread_local tmap_cache_t *t_cache;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static int g_key_made;

static void make_key(void) {
    /* The key's destructor frees a thread's cache when the thread exits. */
    g_key_made = pthread_key_create(&g_key, free) == 0;
}

/* This thread's cache, allocated on first use; NULL when that fails (maps are then encoded for
 * every call, as without a cache). */
static tmap_cache_t *thread_cache(void) {
    if (t_cache)
        return t_cache;
    pthread_once(&g_once, make_key);
    if (!g_key_made)
        return NULL;
    tmap_cache_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    if (pthread_setspecific(g_key, c) != 0) {
        free(c);
        return NULL;
    }
    t_cache = c;
    return c;
}

void jit__tmap_args_init(jit__tmap_args_t *args) {
    memset(args, 0, sizeof(*args));
}

static void key_of(const jit__driver_t *drv, const jit__tmap_args_t *a, tmap_key_t *k) {
    memset(k, 0, sizeof(*k));
    k->encoder = (void *)drv->cuTensorMapEncodeTiled;
    k->args.dtype = a->dtype;
    k->args.rank = a->rank;
    k->args.addr = a->addr;
    memcpy(k->args.dims, a->dims, sizeof(a->dims));
    memcpy(k->args.strides, a->strides, sizeof(a->strides));
    memcpy(k->args.box, a->box, sizeof(a->box));
    memcpy(k->args.elem_strides, a->elem_strides, sizeof(a->elem_strides));
    k->args.interleave = a->interleave;
    k->args.swizzle = a->swizzle;
    k->args.l2 = a->l2;
    k->args.oob = a->oob;
}

static unsigned set_of(const tmap_key_t *k) {
    uint64_t h = (uint64_t)(uintptr_t)k->args.addr ^ (k->args.dims[1] * 0x9e3779b97f4a7c15ull);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (unsigned)(h % SETS);
}

static CUresult encode(const jit__driver_t *drv, const jit__tmap_args_t *a, CUtensorMap *map) {
    cuuint64_t dims[3], strides[2];
    cuuint32_t box[3], elem[3];
    for (int i = 0; i < 3; i++) {
        dims[i] = a->dims[i];
        box[i] = a->box[i];
        elem[i] = a->elem_strides[i];
    }
    strides[0] = a->strides[0];
    strides[1] = a->strides[1];
    return drv->cuTensorMapEncodeTiled(map, a->dtype, a->rank, (void *)(uintptr_t)a->addr, dims,
                                       strides, box, elem, a->interleave, a->swizzle, a->l2,
                                       a->oob);
}

jit_status_t jit__tmap_encode_cached(const jit__driver_t *drv, const jit__tmap_args_t *args,
                                     void *out, const char *what, jit__diag_t *d) {
    _Static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap is 128 bytes");
    tmap_key_t key;
    key_of(drv, args, &key);
    tmap_cache_t *c = thread_cache();
    unsigned set = set_of(&key);
    if (c) {
        for (int w = 0; w < WAYS; w++) {
            tmap_entry_t *e = &c->entry[set][w];
            if (e->valid && memcmp(&e->key, &key, sizeof(key)) == 0) {
                memcpy(out, &e->map, sizeof(e->map));
                return JIT_OK;
            }
        }
    }
    CUtensorMap map;
    CUresult r = encode(drv, args, &map);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, what, d);
    memcpy(out, &map, sizeof(map));
    if (c) {
        tmap_entry_t *e = &c->entry[set][c->next[set]];
        c->next[set] = (unsigned char)((c->next[set] + 1) % WAYS);
        memcpy(&e->map, &map, sizeof(map));
        memcpy(&e->key, &key, sizeof(key));
        e->valid = 1;
    }
    return JIT_OK;
}
