/*
 * Finding, identifying and loading NVRTC and nvJitLink at run time.
 *
 * A toolchain is identified (NVRTC and nvJitLink versions, NVRTC's target list) before it is
 * loaded: the target list decides which key a miss builds and the versions go into the entries
 * it makes, but a cache hit needs no compiler, and opening the two
 * libraries costs 5-15 ms per toolkit (they are over 100 MB each). So each directory's identity
 * is remembered in a record (kept by the store a context hands to jit__toolchain_remember_in:
 * toolchains.json, owned by cache/), checked against the libraries' device, inode, size and
 * mtime; only an unknown or changed library is opened to be identified. The function pointers are
 * bound on first use (jit__toolchain_load), i.e. only when something is compiled.
 *
 * NOTE: the libraries are opened with their full path and RTLD_LOCAL, so several toolkits can
 * live side by side in one process (the automatic choice compares them, and the driver
 * fallback in api/ may need an older one). Nothing is ever unloaded: function pointers into a
 * toolchain are handed out for the life of the process.
 */
#include "toolchain.h"
#include "toolkit_dirs.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TOOLCHAINS 16

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static jit__toolchain_t *g_known[MAX_TOOLCHAINS]; /* every directory identified so far */
static int g_n_known;
static int g_scanned;                         /* automatic candidates identified */
static const jit__toolchain_t *g_auto_choice; /* newest of the automatic candidates */
static jit__toolchain_store_t g_store;        /* where identities are remembered, once set */
static int g_have_store;
static char g_record_where[4200]; /* g_store.where, kept for the life of the process */

static const char *const k_nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                            NULL};
static const char *const k_link_names[] = {"libnvJitLink.so.13", "libnvJitLink.so.12",
                                           "libnvJitLink.so", NULL};

/* ---- locating and fingerprinting the libraries ----------------------------------------- */

/* The first existing library of `names` in dir, dir/lib or dir/lib64. */
static int locate(const char *dir, const char *const *names, char *out, size_t outsz,
                  struct stat *st) {
    static const char *const subdirs[] = {"", "/lib", "/lib64"};
    for (size_t s = 0; s < sizeof(subdirs) / sizeof(subdirs[0]); s++) {
        for (const char *const *n = names; *n; n++) {
            if (snprintf(out, outsz, "%s%s/%s", dir, subdirs[s], *n) >= (int)outsz)
                continue;
            if (stat(out, st) == 0 && S_ISREG(st->st_mode))
                return 1;
        }
    }
    return 0;
}

/* ---- binding ----------------------------------------------------------------------------- */

#define BIND(lib, field)                                                                           \
    do {                                                                                           \
        *(void **)(&tc->field) = dlsym(lib, #field);                                               \
        if (!tc->field) {                                                                          \
            snprintf(why, whysz, "symbol %s missing in %.300s", #field, tc->dir);                  \
            return 0;                                                                              \
        }                                                                                          \
    } while (0)

/* NVRTC opens libnvrtc-builtins.so.<major>.<minor> by name on its first compile and relies on
 * its own RPATH ($ORIGIN) to find it. That breaks whenever dlopen's caller is not NVRTC itself,
 * as under AddressSanitizer, whose dlopen interceptor makes the runtime the caller. Opening the
 * file beside nvrtc_path by full path first makes NVRTC's later by-name open resolve to the
 * already loaded library (the loader matches sonames), so the builtins always come from the
 * toolkit this search chose. Missing builtins are left for NVRTC to report. Caller holds g_lock. */
static void preload_builtins(jit__toolchain_t *tc) {
    int major = 0, minor = 0;
    const char *slash = strrchr(tc->nvrtc_path, '/');
    if (tc->builtins_lib || !slash || tc->nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
        return;
    char path[sizeof(tc->nvrtc_path) + 64];
    snprintf(path, sizeof(path), "%.*s/libnvrtc-builtins.so.%d.%d", (int)(slash - tc->nvrtc_path),
             tc->nvrtc_path, major, minor);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        tc->builtins_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* Open both libraries of tc (paths set) and bind every entry point. Caller holds g_lock. */
static int bind_libraries(jit__toolchain_t *tc, char *why, size_t whysz) {
    if (!tc->nvrtc_lib)
        tc->nvrtc_lib = dlopen(tc->nvrtc_path, RTLD_NOW | RTLD_LOCAL);
    if (!tc->nvrtc_lib) {
        snprintf(why, whysz, "cannot load %.300s: %.150s", tc->nvrtc_path, dlerror());
        return 0;
    }
    if (!tc->jitlink_lib)
        tc->jitlink_lib = dlopen(tc->jitlink_path, RTLD_NOW | RTLD_LOCAL);
    if (!tc->jitlink_lib) {
        snprintf(why, whysz, "cannot load %.300s: %.150s", tc->jitlink_path, dlerror());
        return 0;
    }
    BIND(tc->nvrtc_lib, nvrtcGetErrorString);
    BIND(tc->nvrtc_lib, nvrtcVersion);
    BIND(tc->nvrtc_lib, nvrtcCreateProgram);
    BIND(tc->nvrtc_lib, nvrtcDestroyProgram);
    BIND(tc->nvrtc_lib, nvrtcCompileProgram);
    BIND(tc->nvrtc_lib, nvrtcGetPTXSize);
    BIND(tc->nvrtc_lib, nvrtcGetPTX);
    BIND(tc->nvrtc_lib, nvrtcGetLTOIRSize);
    BIND(tc->nvrtc_lib, nvrtcGetLTOIR);
    BIND(tc->nvrtc_lib, nvrtcGetProgramLogSize);
    BIND(tc->nvrtc_lib, nvrtcGetProgramLog);
    BIND(tc->jitlink_lib, nvJitLinkCreate);
    BIND(tc->jitlink_lib, nvJitLinkDestroy);
    BIND(tc->jitlink_lib, nvJitLinkAddData);
    BIND(tc->jitlink_lib, nvJitLinkComplete);
    BIND(tc->jitlink_lib, nvJitLinkGetLinkedCubinSize);
    BIND(tc->jitlink_lib, nvJitLinkGetLinkedCubin);
    BIND(tc->jitlink_lib, nvJitLinkGetErrorLogSize);
    BIND(tc->jitlink_lib, nvJitLinkGetErrorLog);
    BIND(tc->jitlink_lib, nvJitLinkGetInfoLogSize);
    BIND(tc->jitlink_lib, nvJitLinkGetInfoLog);
    BIND(tc->jitlink_lib, nvJitLinkGetLinkedPtxSize);
    BIND(tc->jitlink_lib, nvJitLinkGetLinkedPtx);
    preload_builtins(tc);
    return 1;
}

/* Ask the loaded libraries who they are. Caller holds g_lock. */
static int query_identity(jit__toolchain_t *tc, jit__toolchain_id_t *id, int *archs, int *n_archs,
                          char *why, size_t whysz) {
    if (tc->nvrtcVersion(&id->nvrtc_major, &id->nvrtc_minor) != NVRTC_SUCCESS) {
        snprintf(why, whysz, "nvrtcVersion failed in '%.300s'", tc->dir);
        return 0;
    }
    nvJitLinkResult (*link_version)(unsigned *, unsigned *);
    *(void **)(&link_version) = dlsym(tc->jitlink_lib, "nvJitLinkVersion");
    unsigned lmaj = 0, lmin = 0;
    if (!link_version || link_version(&lmaj, &lmin) != NVJITLINK_SUCCESS) {
        snprintf(why, whysz, "nvJitLinkVersion missing in '%.300s' (needs CUDA 12.3 or later)",
                 tc->dir);
        return 0;
    }
    id->nvjitlink_major = (int)lmaj;
    id->nvjitlink_minor = (int)lmin;
    nvrtcResult (*num_archs)(int *);
    nvrtcResult (*get_archs)(int *);
    *(void **)(&num_archs) = dlsym(tc->nvrtc_lib, "nvrtcGetNumSupportedArchs");
    *(void **)(&get_archs) = dlsym(tc->nvrtc_lib, "nvrtcGetSupportedArchs");
    int n = 0;
    *n_archs = 0;
    if (num_archs && get_archs && num_archs(&n) == NVRTC_SUCCESS && n > 0 && n <= 64) {
        get_archs(archs);
        *n_archs = n;
    }
    return 1;
}

static int compatible_pair(const jit__toolchain_t *tc, char *why, size_t whysz) {
    /* NVRTC emits IR for its own version; an older nvJitLink could not read it. */
    if (tc->id.nvjitlink_major * 100 + tc->id.nvjitlink_minor <
        tc->id.nvrtc_major * 100 + tc->id.nvrtc_minor) {
        snprintf(why, whysz, "nvJitLink %d.%d is older than NVRTC %d.%d in '%.300s'",
                 tc->id.nvjitlink_major, tc->id.nvjitlink_minor, tc->id.nvrtc_major,
                 tc->id.nvrtc_minor, tc->dir);
        return 0;
    }
    return 1;
}

/* ---- the identity record ----------------------------------------------------------------- */

static jit__file_print_t print_of(const struct stat *st) {
    /* dev and inode are stored as signed 64-bit numbers; only equality matters. */
    return (jit__file_print_t){(int64_t)st->st_dev, (int64_t)st->st_ino, (int64_t)st->st_size,
                               (int64_t)st->st_mtim.tv_sec, (int64_t)st->st_mtim.tv_nsec};
}

static int same_print(const jit__file_print_t *a, const jit__file_print_t *b) {
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec;
}

/* The store's entry for these two files, if their fingerprints still match. The store has
 * checked every field's type and bounds; what a record describes is decided here. */
static int record_lookup(const jit__toolchain_t *tc, const struct stat *sn, const struct stat *sl,
                         jit__toolchain_t *out) {
    if (!g_have_store)
        return 0;
    jit__toolchain_record_t *recs = NULL;
    size_t n = 0;
    g_store.read(g_store.self, &recs, &n);
    jit__file_print_t want_n = print_of(sn), want_l = print_of(sl);
    int hit = 0;
    for (size_t i = 0; i < n && !hit; i++) {
        const jit__toolchain_record_t *r = &recs[i];
        if (strcmp(r->nvrtc_path, tc->nvrtc_path) || strcmp(r->nvjitlink_path, tc->jitlink_path) ||
            !same_print(&r->nvrtc_file, &want_n) || !same_print(&r->nvjitlink_file, &want_l) ||
            r->n_archs > (int)(sizeof(out->archs) / sizeof(out->archs[0])))
            continue;
        out->id = r->id;
        out->n_archs = r->n_archs;
        memcpy(out->archs, r->archs, (size_t)r->n_archs * sizeof(out->archs[0]));
        hit = 1;
    }
    free(recs);
    return hit;
}

/* Failing to save costs a probe next time, nothing else. */
static void record_store(const jit__toolchain_t *tc, const struct stat *sn, const struct stat *sl) {
    if (!g_have_store)
        return;
    jit__toolchain_record_t *r = calloc(1, sizeof(*r));
    if (!r)
        return;
    snprintf(r->nvrtc_path, sizeof(r->nvrtc_path), "%s", tc->nvrtc_path);
    snprintf(r->nvjitlink_path, sizeof(r->nvjitlink_path), "%s", tc->jitlink_path);
    r->nvrtc_file = print_of(sn);
    r->nvjitlink_file = print_of(sl);
    r->id = tc->id;
    r->n_archs = tc->n_archs < JIT__TOOLCHAIN_MAX_ARCHS ? tc->n_archs : JIT__TOOLCHAIN_MAX_ARCHS;
    memcpy(r->archs, tc->archs, (size_t)r->n_archs * sizeof(r->archs[0]));
    g_store.save(g_store.self, r);
    free(r);
}

int jit__toolchain_remember_in(const jit__toolchain_store_t *store) {
    int taken = 0;
    pthread_mutex_lock(&g_lock);
    if (!g_have_store && store && store->read && store->save) {
        g_store = *store;
        snprintf(g_record_where, sizeof(g_record_where), "%s",
                 store->where ? store->where : "the toolchain record");
        g_store.where = g_record_where;
        g_have_store = taken = 1;
    }
    pthread_mutex_unlock(&g_lock);
    return taken;
}

/* ---- identifying a directory ------------------------------------------------------------- */

/* Forget a toolchain that was never handed out. */
static void discard(jit__toolchain_t *tc) {
    if (tc->nvrtc_lib)
        dlclose(tc->nvrtc_lib);
    if (tc->jitlink_lib)
        dlclose(tc->jitlink_lib);
    if (tc->builtins_lib)
        dlclose(tc->builtins_lib);
    free(tc);
}

/* Identify the toolchain in `dir` ("" = the loader's search path): from the record when its
 * fingerprints match, else by loading it. Caller holds g_lock. NULL with `why` filled. */
static jit__toolchain_t *identify(const char *dir, char *why, size_t whysz) {
    jit__toolchain_t *tc = calloc(1, sizeof(*tc));
    if (!tc) {
        snprintf(why, whysz, "out of memory");
        return NULL;
    }
    snprintf(tc->dir, sizeof(tc->dir), "%s", dir);
    struct stat sn, sl;
    if (*dir) {
        if (!locate(dir, k_nvrtc_names, tc->nvrtc_path, sizeof(tc->nvrtc_path), &sn)) {
            snprintf(why, whysz, "no libnvrtc in '%.300s'", dir);
            goto fail;
        }
        if (!locate(dir, k_link_names, tc->jitlink_path, sizeof(tc->jitlink_path), &sl)) {
            snprintf(why, whysz, "no libnvJitLink in '%.300s'", dir);
            goto fail;
        }
        if (record_lookup(tc, &sn, &sl, tc))
            return tc;
    } else {
        /* The loader's own search: let dlopen find the files, then ask it where they were. */
        for (const char *const *n = k_nvrtc_names; *n && !tc->nvrtc_lib; n++)
            tc->nvrtc_lib = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
        for (const char *const *n = k_link_names; *n && !tc->jitlink_lib; n++)
            tc->jitlink_lib = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
        if (!tc->nvrtc_lib || !tc->jitlink_lib) {
            snprintf(why, whysz, "no libnvrtc/libnvJitLink on the loader's path");
            goto fail;
        }
        snprintf(tc->nvrtc_path, sizeof(tc->nvrtc_path), "<loader path>");
        snprintf(tc->jitlink_path, sizeof(tc->jitlink_path), "<loader path>");
    }
    if (!bind_libraries(tc, why, whysz) ||
        !query_identity(tc, &tc->id, tc->archs, &tc->n_archs, why, whysz))
        goto fail;
    tc->loaded = 1;
    if (*dir)
        record_store(tc, &sn, &sl);
    return tc;
fail:
    discard(tc);
    return NULL;
}

static int version_of(const jit__toolchain_t *tc) {
    return tc->id.nvrtc_major * 100 + tc->id.nvrtc_minor;
}

/* Caller holds g_lock. */
static jit__toolchain_t *find_or_identify(const char *dir, char *why, size_t whysz) {
    for (int i = 0; i < g_n_known; i++)
        if (strcmp(g_known[i]->dir, dir) == 0)
            return g_known[i];
    if (g_n_known == MAX_TOOLCHAINS) {
        snprintf(why, whysz, "too many toolkit directories");
        return NULL;
    }
    jit__toolchain_t *tc = identify(dir, why, whysz);
    if (tc && !compatible_pair(tc, why, whysz)) {
        /* Identified but unusable: remember nothing, so it is never chosen. */
        discard(tc);
        return NULL;
    }
    if (tc)
        g_known[g_n_known++] = tc;
    return tc;
}

/* Caller holds g_lock. Identify every cuda-* folder of a project-local root. */
static void scan_root(const char *root, char *why, size_t whysz) {
    DIR *deps = opendir(root);
    if (!deps)
        return;
    struct dirent *e;
    char names[16][256];
    int n = 0;
    while ((e = readdir(deps)) && n < 16)
        if (strncmp(e->d_name, "cuda-", 5) == 0)
            snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
    closedir(deps);
    for (int i = 0; i < n; i++) {
        char dir[sizeof(((jit__toolchain_t *)0)->dir)];
        if (snprintf(dir, sizeof(dir), "%s/%s", root, names[i]) < (int)sizeof(dir))
            find_or_identify(dir, why, whysz);
    }
}

/* Caller holds g_lock. Identify every automatic candidate once. */
static void scan_candidates(void) {
    if (g_scanned)
        return;
    g_scanned = 1;
    char why[512];
    /* The project-local folders (scripts/setup.sh fills one in a source tree, an install may
     * hold one): one sub-folder per toolkit version. */
    char roots[JIT__TOOLKIT_ROOTS_MAX][JIT__TOOLKIT_ROOT_LEN];
    int n_roots = jit__toolkit_roots(roots, JIT__TOOLKIT_ROOTS_MAX);
    for (int r = 0; r < n_roots; r++)
        scan_root(roots[r], why, sizeof(why));
    const char *envs[] = {"CUDA_HOME", "CUDA_PATH"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(envs[i]);
        if (v && *v)
            find_or_identify(v, why, sizeof(why));
    }
    find_or_identify("/usr/local/cuda", why, sizeof(why));
    /* The loader's path needs the libraries opened to be identified; it is asked only when no
     * directory holds a toolkit. */
    if (g_n_known == 0)
        find_or_identify("", why, sizeof(why));
    const jit__toolchain_t *best = NULL;
    for (int i = 0; i < g_n_known; i++)
        if (!best || version_of(g_known[i]) > version_of(best))
            best = g_known[i];
    g_auto_choice = best;
}

jit_status_t jit__toolchain_get(const char *dir, const jit__toolchain_t **out, jit__diag_t *d) {
    *out = NULL;
    if (!dir || !*dir) {
        const char *env = getenv("JITGEMM_TOOLKIT_DIR");
        if (env && *env)
            dir = env;
    }
    pthread_mutex_lock(&g_lock);
    char why[512] = "";
    const jit__toolchain_t *tc = NULL;
    if (dir && *dir) {
        tc = find_or_identify(dir, why, sizeof(why));
    } else {
        scan_candidates();
        tc = g_auto_choice;
        if (!tc)
            snprintf(why, sizeof(why),
                     "searched " JIT__TOOLKITS_FOLDER "/cuda-* beside the library or program (and "
                     "in its lib folder), $CUDA_HOME, $CUDA_PATH, /usr/local/cuda and the loader "
                     "path; run scripts/setup.sh or set JITGEMM_TOOLKIT_DIR");
    }
    pthread_mutex_unlock(&g_lock);
    if (!tc)
        return jit__fail(d, JIT_TOOLCHAIN_NOT_FOUND, "NVRTC/nvJitLink not found: %s", why);
    *out = tc;
    return JIT_OK;
}

jit_status_t jit__toolchain_load(const jit__toolchain_t *ctc, jit__diag_t *d) {
    jit__toolchain_t *tc = (jit__toolchain_t *)ctc;
    if (atomic_load_explicit(&tc->loaded, memory_order_acquire))
        return JIT_OK;
    char why[512] = "";
    jit_status_t st = JIT_OK;
    pthread_mutex_lock(&g_lock);
    if (!atomic_load_explicit(&tc->loaded, memory_order_relaxed)) {
        jit__toolchain_id_t real;
        int archs[64], n_archs = 0;
        if (!bind_libraries(tc, why, sizeof(why)) ||
            !query_identity(tc, &real, archs, &n_archs, why, sizeof(why)))
            st = JIT_TOOLCHAIN_NOT_FOUND;
        else if (memcmp(&real, &tc->id, sizeof(real)) != 0) {
            /* The files changed in a way their fingerprints did not show: refuse rather than
             * record the wrong version in the entries, or build for targets it lacks. */
            snprintf(why, sizeof(why),
                     "%.200s is NVRTC %d.%d now but was recorded as %d.%d; remove %.200s and retry",
                     tc->nvrtc_path, real.nvrtc_major, real.nvrtc_minor, tc->id.nvrtc_major,
                     tc->id.nvrtc_minor, g_record_where);
            st = JIT_TOOLCHAIN_NOT_FOUND;
        } else {
            atomic_store_explicit(&tc->loaded, 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&g_lock);
    if (st != JIT_OK)
        return jit__fail(d, st, "loading NVRTC/nvJitLink: %s", why);
    return JIT_OK;
}

const jit__toolchain_t *jit__toolchain_newest_up_to(int major, int minor) {
    pthread_mutex_lock(&g_lock);
    scan_candidates();
    const jit__toolchain_t *best = NULL;
    for (int i = 0; i < g_n_known; i++) {
        int v = version_of(g_known[i]);
        if (v <= major * 100 + minor && (!best || v > version_of(best)))
            best = g_known[i];
    }
    pthread_mutex_unlock(&g_lock);
    return best;
}

int jit__toolchain_supports(const jit__toolchain_t *tc, int sm) {
    for (int i = 0; i < tc->n_archs; i++)
        if (tc->archs[i] == sm)
            return 1;
    return 0;
}
