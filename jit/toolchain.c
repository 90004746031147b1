/*
 * Finding and loading NVRTC and nvJitLink at run time.
 *
 * NOTE: the libraries are opened with their full path and RTLD_LOCAL, so several toolkits can
 * be loaded side by side in one process (the automatic choice compares their versions, and the
 * driver-compatibility fallback in api/ may need an older one). Loaded toolchains are never
 * unloaded: function pointers into them are handed out for the life of the process.
 */
#include "toolchain.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOOLCHAINS 16

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static jit__toolchain_t *g_loaded[MAX_TOOLCHAINS]; /* every distinct directory loaded so far */
static int g_n_loaded;
static int g_scanned;                         /* automatic candidates probed */
static const jit__toolchain_t *g_auto_choice; /* newest of the automatic candidates */

static void *open_lib(const char *dir, const char *const *names, char *found, size_t foundsz) {
    static const char *const subdirs[] = {"", "/lib", "/lib64"};
    for (size_t s = 0; s < sizeof(subdirs) / sizeof(subdirs[0]); s++) {
        for (const char *const *n = names; *n; n++) {
            char path[1024];
            if (*dir)
                snprintf(path, sizeof(path), "%s%s/%s", dir, subdirs[s], *n);
            else if (s == 0)
                snprintf(path, sizeof(path), "%s", *n);
            else
                continue;
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (h) {
                if (found)
                    snprintf(found, foundsz, "%s", path);
                return h;
            }
        }
    }
    return NULL;
}

#define LOAD_SYM(lib, field)                                                                       \
    do {                                                                                           \
        *(void **)(&tc->field) = dlsym(lib, #field);                                               \
        if (!tc->field) {                                                                          \
            snprintf(why, whysz, "symbol %s missing", #field);                                     \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Load the pair from one directory ("" = the loader's search path). NULL with `why` filled. */
static jit__toolchain_t *load_dir(const char *dir, char *why, size_t whysz) {
    static const char *const nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                              NULL};
    static const char *const link_names[] = {"libnvJitLink.so.13", "libnvJitLink.so.12",
                                             "libnvJitLink.so", NULL};
    jit__toolchain_t *tc = calloc(1, sizeof(*tc));
    if (!tc) {
        snprintf(why, whysz, "out of memory");
        return NULL;
    }
    snprintf(tc->dir, sizeof(tc->dir), "%s", dir);
    tc->nvrtc_lib = open_lib(dir, nvrtc_names, NULL, 0);
    if (!tc->nvrtc_lib) {
        snprintf(why, whysz, "no libnvrtc in '%s'", *dir ? dir : "<loader path>");
        goto fail;
    }
    tc->jitlink_lib = open_lib(dir, link_names, NULL, 0);
    if (!tc->jitlink_lib) {
        snprintf(why, whysz, "no libnvJitLink in '%s'", *dir ? dir : "<loader path>");
        goto fail;
    }
    LOAD_SYM(tc->nvrtc_lib, nvrtcGetErrorString);
    LOAD_SYM(tc->nvrtc_lib, nvrtcVersion);
    LOAD_SYM(tc->nvrtc_lib, nvrtcCreateProgram);
    LOAD_SYM(tc->nvrtc_lib, nvrtcDestroyProgram);
    LOAD_SYM(tc->nvrtc_lib, nvrtcCompileProgram);
    LOAD_SYM(tc->nvrtc_lib, nvrtcGetPTXSize);
    LOAD_SYM(tc->nvrtc_lib, nvrtcGetPTX);
    LOAD_SYM(tc->nvrtc_lib, nvrtcGetLTOIRSize);
    LOAD_SYM(tc->nvrtc_lib, nvrtcGetLTOIR);
    LOAD_SYM(tc->nvrtc_lib, nvrtcGetProgramLogSize);
    LOAD_SYM(tc->nvrtc_lib, nvrtcGetProgramLog);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkCreate);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkDestroy);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkAddData);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkComplete);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkGetLinkedCubinSize);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkGetLinkedCubin);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkGetErrorLogSize);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkGetErrorLog);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkGetInfoLogSize);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkGetInfoLog);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkGetLinkedPtxSize);
    LOAD_SYM(tc->jitlink_lib, nvJitLinkGetLinkedPtx);

    if (tc->nvrtcVersion(&tc->id.nvrtc_major, &tc->id.nvrtc_minor) != NVRTC_SUCCESS) {
        snprintf(why, whysz, "nvrtcVersion failed in '%s'", dir);
        goto fail;
    }
    nvJitLinkResult (*link_version)(unsigned *, unsigned *);
    *(void **)(&link_version) = dlsym(tc->jitlink_lib, "nvJitLinkVersion");
    unsigned lmaj = 0, lmin = 0;
    if (link_version && link_version(&lmaj, &lmin) == NVJITLINK_SUCCESS) {
        tc->id.nvjitlink_major = (int)lmaj;
        tc->id.nvjitlink_minor = (int)lmin;
    } else {
        snprintf(why, whysz, "nvJitLinkVersion missing in '%s' (needs CUDA 12.3 or later)", dir);
        goto fail;
    }
    /* NVRTC emits PTX for its own ISA version; an older nvJitLink could not assemble it. */
    if (tc->id.nvjitlink_major * 100 + tc->id.nvjitlink_minor <
        tc->id.nvrtc_major * 100 + tc->id.nvrtc_minor) {
        snprintf(why, whysz, "nvJitLink %d.%d is older than NVRTC %d.%d in '%s'",
                 tc->id.nvjitlink_major, tc->id.nvjitlink_minor, tc->id.nvrtc_major,
                 tc->id.nvrtc_minor, dir);
        goto fail;
    }
    nvrtcResult (*num_archs)(int *);
    nvrtcResult (*get_archs)(int *);
    *(void **)(&num_archs) = dlsym(tc->nvrtc_lib, "nvrtcGetNumSupportedArchs");
    *(void **)(&get_archs) = dlsym(tc->nvrtc_lib, "nvrtcGetSupportedArchs");
    int n = 0;
    if (num_archs && get_archs && num_archs(&n) == NVRTC_SUCCESS && n > 0 && n <= 64) {
        get_archs(tc->archs);
        tc->n_archs = n;
    }
    return tc;
fail:
    if (tc->nvrtc_lib)
        dlclose(tc->nvrtc_lib);
    if (tc->jitlink_lib)
        dlclose(tc->jitlink_lib);
    free(tc);
    return NULL;
}

static int version_of(const jit__toolchain_t *tc) {
    return tc->id.nvrtc_major * 100 + tc->id.nvrtc_minor;
}

/* Caller holds g_lock. */
static jit__toolchain_t *find_or_load(const char *dir, char *why, size_t whysz) {
    for (int i = 0; i < g_n_loaded; i++)
        if (strcmp(g_loaded[i]->dir, dir) == 0)
            return g_loaded[i];
    if (g_n_loaded == MAX_TOOLCHAINS) {
        snprintf(why, whysz, "too many toolkit directories");
        return NULL;
    }
    jit__toolchain_t *tc = load_dir(dir, why, whysz);
    if (tc)
        g_loaded[g_n_loaded++] = tc;
    return tc;
}

/* Caller holds g_lock. Probe every automatic candidate once. */
static void scan_candidates(void) {
    if (g_scanned)
        return;
    g_scanned = 1;
    char why[512];
    /* The project-local folder scripts/setup.sh fills: one sub-folder per toolkit version. */
    DIR *deps = opendir(JITGEMM_DEPS_DIR);
    if (deps) {
        struct dirent *e;
        char names[16][256];
        int n = 0;
        while ((e = readdir(deps)) && n < 16)
            if (strncmp(e->d_name, "cuda-", 5) == 0)
                snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
        closedir(deps);
        for (int i = 0; i < n; i++) {
            char dir[sizeof(((jit__toolchain_t *)0)->dir)];
            if (snprintf(dir, sizeof(dir), "%s/%s", JITGEMM_DEPS_DIR, names[i]) <
                (int)sizeof(dir))
                find_or_load(dir, why, sizeof(why));
        }
    }
    const char *envs[] = {"CUDA_HOME", "CUDA_PATH"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(envs[i]);
        if (v && *v)
            find_or_load(v, why, sizeof(why));
    }
    find_or_load("/usr/local/cuda", why, sizeof(why));
    find_or_load("", why, sizeof(why));
    const jit__toolchain_t *best = NULL;
    for (int i = 0; i < g_n_loaded; i++)
        if (!best || version_of(g_loaded[i]) > version_of(best))
            best = g_loaded[i];
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
        tc = find_or_load(dir, why, sizeof(why));
    } else {
        scan_candidates();
        tc = g_auto_choice;
        if (!tc)
            snprintf(why, sizeof(why),
                     "searched %s/cuda-*, $CUDA_HOME, $CUDA_PATH, /usr/local/cuda and the loader "
                     "path; run scripts/setup.sh or set JITGEMM_TOOLKIT_DIR",
                     JITGEMM_DEPS_DIR);
    }
    pthread_mutex_unlock(&g_lock);
    if (!tc)
        return jit__fail(d, JIT_TOOLCHAIN_NOT_FOUND, "NVRTC/nvJitLink not found: %s", why);
    *out = tc;
    return JIT_OK;
}

const jit__toolchain_t *jit__toolchain_newest_up_to(int major, int minor) {
    pthread_mutex_lock(&g_lock);
    scan_candidates();
    const jit__toolchain_t *best = NULL;
    for (int i = 0; i < g_n_loaded; i++) {
        int v = version_of(g_loaded[i]);
        if (v <= major * 100 + minor && (!best || v > version_of(best)))
            best = g_loaded[i];
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
