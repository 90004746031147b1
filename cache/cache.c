/*
 * Opening the cache: where it lives, whether this user may trust it, whether it can be written.
 *
 * The directory may be a colon-separated list: the first is this user's writable cache, the rest
 * read-only layers searched after it (an image's cache, a site-wide one). Layers are opened but
 * never created, written, locked, compacted or evicted.
 *
 * Opening never fails because of the directory. A cache is an optimisation, so a directory that
 * cannot be created, that another user owns or can write, or that is read-only leaves a working
 * cache object that simply keeps nothing on disk, and says so once. Permission is judged from
 * the mode bits rather than access(): as root access() reports every directory writable, yet a
 * directory someone made 0500 is plainly meant to be left alone.
 */
#include "cache_private.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

static const char *nonempty_env(const char *name) {
    const char *v = getenv(name);
    return (v && *v) ? v : NULL;
}

/* The list the user gave: `dir`, else $JITGEMM_CACHE_DIR; NULL if neither. */
static const char *given_list(const char *dir) {
    return (dir && *dir) ? dir : nonempty_env("JITGEMM_CACHE_DIR");
}

/* Copy `path` (len bytes) into out without trailing slashes: "/a/b/" and "/a/b" are the same
 * cache; keep one spelling for messages. */
static jit_status_t set_path(const char *path, size_t len, const char *suffix, char *out,
                             size_t outsz, jit__diag_t *d) {
    int n = snprintf(out, outsz, "%.*s%s", (int)len, path, suffix);
    if (n < 0 || (size_t)n >= outsz) {
        out[0] = '\0';
        return jit__fail(d, JIT_INVALID_ARGUMENT, "cache directory path too long: %.*s%s", (int)len,
                         path, suffix);
    }
    while (n > 1 && out[n - 1] == '/')
        out[--n] = '\0';
    return JIT_OK;
}

jit_status_t jit__cache_resolve_dir(const char *dir, char *out, size_t outsz, jit__diag_t *d) {
    if (!out || outsz == 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "cache directory: no output buffer");
    out[0] = '\0';
    const char *list = given_list(dir);
    /* The first directory of a colon-separated list is the writable one; an empty first
     * element (":/opt/image-cache") means the default location. */
    if (list && *list != ':')
        return set_path(list, strcspn(list, ":"), "", out, outsz, d);
    const char *base = NULL, *suffix = "";
    if ((base = nonempty_env("XDG_CACHE_HOME")) && base[0] == '/') {
        /* The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored. */
        suffix = "/jitgemm";
    } else {
        base = nonempty_env("HOME");
        if (!base) {
            struct passwd *pw = getpwuid(geteuid());
            base = (pw && pw->pw_dir && *pw->pw_dir) ? pw->pw_dir : NULL;
        }
        if (!base)
            return jit__fail(d, JIT_CACHE_ERROR,
                             "cache directory: none given, and neither JITGEMM_CACHE_DIR, "
                             "XDG_CACHE_HOME nor HOME is set");
        suffix = "/.cache/jitgemm";
    }
    return set_path(base, strlen(base), suffix, out, outsz, d);
}

/* A decimal byte count with an optional binary suffix: 1048576, 512M, 4G. */
static int parse_bytes(const char *s, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v <= 0)
        return -1;
    int shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    case 't':
    case 'T':
        shift = 40;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'i' || *end == 'I') /* accept "MiB"-style spellings */
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0' || v > (INT64_MAX >> shift))
        return -1;
    *out = (int64_t)v << shift;
    return 0;
}

static void warn_once(jit__cache_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_once(jit__cache_t *c, const char *fmt, ...) {
    if (atomic_exchange(&c->warned, 1))
        return;
    char msg[JIT__CACHE_PATH_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    jit__log(c->log_level, JIT_LOG_WARN, "%s", msg);
}

int jit__cache_errno_readonly(int err) {
    return err == EACCES || err == EROFS || err == EPERM;
}

void jit__cache_set_readonly(jit__cache_t *c, const char *what, int err) {
    atomic_store(&c->writable, 0);
    warn_once(c, "kernel cache %s cannot be written (%s: %s); new kernels are kept in memory only",
              c->dir, what, strerror(err));
}

int jit__cache_report_once(jit__cache_t *c, const char *hash, const char *fmt, ...) {
    int fresh = 1;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_reported && fresh; i++)
        fresh = strcmp(c->reported[i], hash) != 0;
    if (fresh) {
        if (c->n_reported == c->cap_reported) {
            size_t cap = c->cap_reported ? 2 * c->cap_reported : 16;
            void *p = realloc(c->reported, cap * sizeof(*c->reported));
            if (p) {
                c->reported = p;
                c->cap_reported = cap;
            }
        }
        /* Out of memory only means the same problem may be reported again. */
        if (c->n_reported < c->cap_reported)
            snprintf(c->reported[c->n_reported++], JIT_KEY_HASH_LEN + 1, "%s", hash);
    }
    pthread_mutex_unlock(&c->mu);
    if (fresh) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        jit__log(c->log_level, JIT_LOG_WARN, "%s", msg);
    }
    return fresh;
}

/* mkdir -p with mode 0700 for every directory created. 0 or an errno. */
static int make_dirs(const char *path) {
    char p[JIT__CACHE_PATH_MAX];
    snprintf(p, sizeof(p), "%s", path);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char saved = *s;
        *s = '\0';
        if (mkdir(p, 0700) == 0) {
            /* The umask may have stripped owner bits; the cache needs exactly rwx------. */
            chmod(p, 0700);
        } else if (errno != EEXIST) {
            return errno;
        }
        *s = saved;
        if (saved == '\0')
            return 0;
    }
}

/* Check (and, when writable, create) one subdirectory. Returns 0 if usable, else a reason. */
static const char *vet_subdir(jit__cache_t *c, const char *sub, char *why, size_t whysz,
                              int *readonly) {
    struct stat st;
    if (atomic_load(&c->writable)) {
        if (mkdirat(c->dirfd, sub, 0700) == 0) {
            /* Undo what the umask took. Should this fail, the mode check below judges the
             * directory as it is. */
            if (fchmodat(c->dirfd, sub, 0700, 0) != 0 && jit__cache_errno_readonly(errno))
                *readonly = 1;
        } else if (errno != EEXIST && jit__cache_errno_readonly(errno)) {
            *readonly = 1;
        }
    }
    if (fstatat(c->dirfd, sub, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return NULL; /* absent in a read-only cache: simply empty */
    const char *bad = jit__cache_distrust(&st, 1, why, whysz);
    if (bad)
        return bad;
    if (st.st_uid != geteuid() || !(st.st_mode & S_IWUSR))
        *readonly = 1;
    return NULL;
}

/* A read-only layer: never created, never written; trusted when the directory and its
 * kernels/ are owned by root or this user and not writable by group or others. An untrusted or
 * unusable layer is skipped with one warning that names it and says why. */
static void open_layer(jit__cache_t *c) {
    char why[JIT__CACHE_WHY_MAX + 32], detail[JIT__CACHE_WHY_MAX];
    int bad = 1;
    struct stat st;
    c->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->dirfd < 0)
        snprintf(why, sizeof(why), "it cannot be opened: %s", strerror(errno));
    else if (fstat(c->dirfd, &st) != 0)
        snprintf(why, sizeof(why), "fstat: %s", strerror(errno));
    else if (jit__cache_distrust(&st, 1, detail, sizeof(detail)))
        snprintf(why, sizeof(why), "%s", detail);
    else if (fstatat(c->dirfd, "kernels", &st, AT_SYMLINK_NOFOLLOW) != 0)
        snprintf(why, sizeof(why), "it has no kernels/ directory");
    else if (jit__cache_distrust(&st, 1, detail, sizeof(detail)))
        snprintf(why, sizeof(why), "kernels/ is %s", detail);
    else
        bad = 0;
    if (bad) {
        warn_once(c, "kernel cache layer %s is skipped (%s)", c->dir, why);
        if (c->dirfd >= 0)
            close(c->dirfd);
        c->dirfd = -1;
        return;
    }
    c->readable = 1;
}

static void open_directory(jit__cache_t *c) {
    char why[JIT__CACHE_WHY_MAX];
    int err = make_dirs(c->dir);
    if (err) {
        warn_once(c, "kernel cache %s cannot be created (%s); kernels are kept in memory only",
                  c->dir, strerror(err));
        return;
    }
    c->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->dirfd < 0) {
        warn_once(c, "kernel cache %s cannot be opened (%s); kernels are kept in memory only",
                  c->dir, strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(c->dirfd, &st) != 0 || jit__cache_distrust(&st, 1, why, sizeof(why))) {
        warn_once(c,
                  "kernel cache %s is refused (%s): another user could plant code in it; "
                  "kernels are kept in memory only",
                  c->dir, why);
        close(c->dirfd);
        c->dirfd = -1;
        return;
    }
    struct statvfs vfs;
    /* A directory root owns is trusted (jit__cache_distrust) but not ours to write. */
    int readonly = st.st_uid != geteuid() || !(st.st_mode & S_IWUSR) ||
                   (fstatvfs(c->dirfd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY));
    atomic_store(&c->writable, !readonly);
    static const char *const subs[] = {"kernels", "locks", "tmp"};
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        if (vet_subdir(c, subs[i], why, sizeof(why), &readonly)) {
            warn_once(c, "kernel cache %s is refused (%s/: %s); kernels are kept in memory only",
                      c->dir, subs[i], why);
            close(c->dirfd);
            c->dirfd = -1;
            atomic_store(&c->writable, 0);
            return;
        }
    }
    c->readable = 1;
    if (readonly) {
        atomic_store(&c->writable, 0);
        warn_once(c,
                  "kernel cache %s is read-only; cached kernels are used but new ones are "
                  "kept in memory only",
                  c->dir);
    }
}

/* Add the read-only layer `name` (len bytes) to c, searched after every layer added before. A
 * layer that cannot be used is reported and left out. */
static void open_one_layer(jit__cache_t *c, const char *name, size_t len) {
    jit__cache_t **grown = realloc(c->layers, (c->n_layers + 1) * sizeof(*grown));
    jit__cache_t *l = calloc(1, sizeof(*l));
    if (grown)
        c->layers = grown;
    if (!grown || !l) {
        free(l);
        jit__log(c->log_level, JIT_LOG_WARN, "kernel cache layer %.*s is skipped: out of memory",
                 (int)len, name);
        return;
    }
    l->dirfd = -1;
    l->max_bytes = c->max_bytes;
    l->log_level = c->log_level;
    l->layer = 1;
    atomic_init(&l->writable, 0);
    atomic_init(&l->warned, 0);
    atomic_init(&l->warned_cap, 1);
    atomic_init(&l->tmp_seq, 0);
    pthread_mutex_init(&l->mu, NULL);
    jit__diag_t d;
    jit__diag_init(&d);
    if (set_path(name, len, "", l->dir, sizeof(l->dir), &d) == JIT_OK)
        open_layer(l);
    else
        jit__log(c->log_level, JIT_LOG_WARN, "kernel cache layer is skipped: %s", d.msg);
    jit__diag_clear(&d);
    if (!l->readable) {
        jit__cache_close(l);
        return;
    }
    c->layers[c->n_layers++] = l;
}

jit_status_t jit__cache_open(const char *dir, int64_t max_bytes, jit_log_level_t log_level,
                             jit__cache_t **out, jit__diag_t *d) {
    if (!out)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__cache_open: out is NULL");
    *out = NULL;
    if (max_bytes <= 0) {
        const char *env = nonempty_env("JITGEMM_CACHE_MAX_BYTES");
        max_bytes = JIT__CACHE_DEFAULT_MAX_BYTES;
        if (env && parse_bytes(env, &max_bytes) != 0)
            return jit__fail(d, JIT_INVALID_ARGUMENT,
                             "JITGEMM_CACHE_MAX_BYTES=\"%s\" is not a positive byte count "
                             "(e.g. 1073741824, 512M, 4G)",
                             env);
    }
    jit__cache_t *c = calloc(1, sizeof(*c));
    if (!c)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "cache: out of memory");
    c->dirfd = -1;
    c->max_bytes = max_bytes;
    c->log_level = log_level;
    atomic_init(&c->writable, 0);
    atomic_init(&c->warned, 0);
    atomic_init(&c->warned_cap, 0);
    atomic_init(&c->tmp_seq, 0);
    pthread_mutex_init(&c->mu, NULL);

    jit__diag_t local;
    jit__diag_init(&local);
    if (jit__cache_resolve_dir(dir, c->dir, sizeof(c->dir), &local) == JIT_OK)
        open_directory(c);
    else
        warn_once(c, "%s; kernels are kept in memory only", local.msg);
    jit__diag_clear(&local);
    const char *list = given_list(dir);
    const char *rest = list ? strchr(list, ':') : NULL;
    while (rest) {
        const char *name = rest + 1;
        size_t len = strcspn(name, ":");
        rest = name[len] ? name + len : NULL;
        if (len == 0)
            continue;
        open_one_layer(c, name, len);
    }
    *out = c;
    return JIT_OK;
}

void jit__cache_close(jit__cache_t *c) {
    if (!c)
        return;
    if (c->dirfd >= 0)
        close(c->dirfd);
    for (size_t i = 0; i < c->n_layers; i++)
        jit__cache_close(c->layers[i]);
    free(c->layers);
    pthread_mutex_destroy(&c->mu);
    free(c->reported);
    free(c);
}

size_t jit__cache_layer_count(const jit__cache_t *c) {
    return c ? c->n_layers : 0;
}

const char *jit__cache_layer_dir(const jit__cache_t *c, size_t i) {
    return c && i < c->n_layers ? c->layers[i]->dir : "";
}

jit__cache_t *jit__cache_share(const jit__cache_t *c) {
    if (!c || c->dirfd < 0 || !c->readable)
        return NULL;
    jit__cache_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    /* The descriptor, not the path: the copy must keep using the directory `c` vetted. */
    s->dirfd = fcntl(c->dirfd, F_DUPFD_CLOEXEC, 0);
    if (s->dirfd < 0) {
        free(s);
        return NULL;
    }
    memcpy(s->dir, c->dir, sizeof(s->dir));
    s->max_bytes = c->max_bytes;
    s->log_level = c->log_level;
    s->readable = 1;
    atomic_init(&s->writable, atomic_load(&c->writable));
    atomic_init(&s->warned, 1); /* `c` already said whatever there was to say */
    atomic_init(&s->warned_cap, 1);
    atomic_init(&s->tmp_seq, 0);
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

const char *jit__cache_dir(const jit__cache_t *c) {
    return c ? c->dir : "";
}

int64_t jit__cache_max_bytes(const jit__cache_t *c) {
    return c ? c->max_bytes : 0;
}

int jit__cache_writable(const jit__cache_t *c) {
    return c && c->readable && atomic_load(&c->writable);
}

int jit__cache_readable(const jit__cache_t *c) {
    return c && c->readable;
}
