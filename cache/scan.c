/*
 * A listing of kernels/, grouped by entry: which of an entry's four files exist, their bytes and
 * times. The directory, not the manifest, is the truth about what is on disk; eviction, verify,
 * gc and manifest rebuilds all start from here. Names that are not "<32 hex><known ext>", and
 * directories whatever their names, are strays, which gc removes and verify reports.
 */
#include "cache_private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_item(const void *a, const void *b) {
    return strcmp(((const jit__cache_item_t *)a)->hash, ((const jit__cache_item_t *)b)->hash);
}

static int cmp_stray(const void *a, const void *b) {
    return strcmp(((const jit__cache_stray_t *)a)->name, ((const jit__cache_stray_t *)b)->name);
}

/* The JIT__F_* bit a file name stands for, with its hash in `hash`; 0 for a stray. */
static unsigned classify(const char *name, char hash[JIT_KEY_HASH_LEN + 1]) {
    if (strlen(name) <= JIT_KEY_HASH_LEN)
        return 0;
    memcpy(hash, name, JIT_KEY_HASH_LEN);
    hash[JIT_KEY_HASH_LEN] = '\0';
    if (!jit__cache_valid_hash(hash))
        return 0;
    for (unsigned i = 0; i < 4; i++)
        if (!strcmp(name + JIT_KEY_HASH_LEN, jit__cache_ext[i]))
            return 1u << i;
    return 0;
}

static int grow(void **p, size_t *cap, size_t n, size_t size) {
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 64;
    void *q = realloc(*p, c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Opens `sub` for listing; NULL with *missing = 1 when it does not exist. */
static DIR *open_sub(const jit__cache_t *c, const char *sub, int *missing, jit__diag_t *d) {
    *missing = 0;
    if (c->dirfd < 0) {
        *missing = 1;
        return NULL;
    }
    int fd = openat(c->dirfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = 1;
            return NULL;
        }
        jit__fail(d, JIT_IO_ERROR, "cache %s/%s: %s", c->dir, sub, strerror(errno));
        return NULL;
    }
    DIR *dir = fdopendir(fd);
    if (!dir) {
        jit__fail(d, JIT_IO_ERROR, "cache %s/%s: %s", c->dir, sub, strerror(errno));
        close(fd);
    }
    return dir;
}

jit_status_t jit__cache_scan(const jit__cache_t *c, jit__cache_scan_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    int missing;
    DIR *dir = open_sub(c, "kernels", &missing, d);
    if (!dir)
        return missing ? JIT_OK : JIT_IO_ERROR;
    size_t cap = 0, cap_strays = 0;
    struct dirent *de;
    jit_status_t st = JIT_OK;
    while ((de = readdir(dir))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat fst;
        if (fstatat(dirfd(dir), de->d_name, &fst, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* removed since readdir */
        char hash[JIT_KEY_HASH_LEN + 1];
        /* The cache never makes a directory here, whatever its name: one named like a cubin is
         * not a cubin, and only a stray is removed as a tree. */
        unsigned bit = S_ISDIR(fst.st_mode) ? 0 : classify(de->d_name, hash);
        if (!bit) {
            if (strlen(de->d_name) + sizeof("kernels/") > JIT__CACHE_NAME_MAX)
                continue; /* too long to be anything we wrote or could name; left alone */
            if (grow((void **)&out->strays, &cap_strays, out->n_strays, sizeof(*out->strays))) {
                st = jit__fail(d, JIT_OUT_OF_MEMORY, "cache scan: out of memory");
                break;
            }
            jit__cache_stray_t *s = &out->strays[out->n_strays++];
            snprintf(s->name, sizeof(s->name), "kernels/%s", de->d_name);
            s->mtime = jit__cache_mtime(&fst);
            s->is_dir = S_ISDIR(fst.st_mode);
            continue;
        }
        if (grow((void **)&out->items, &cap, out->n, sizeof(*out->items))) {
            st = jit__fail(d, JIT_OUT_OF_MEMORY, "cache scan: out of memory");
            break;
        }
        jit__cache_item_t *it = &out->items[out->n++];
        memset(it, 0, sizeof(*it));
        memcpy(it->hash, hash, sizeof(hash));
        it->files = bit;
        it->bytes = (uint64_t)fst.st_size;
        it->newest = jit__cache_mtime(&fst);
        if (bit == JIT__F_CUBIN)
            it->cubin_bytes = it->bytes;
        if (bit == JIT__F_SIDECAR)
            it->sidecar_time = it->newest;
    }
    closedir(dir);
    if (st != JIT_OK) {
        jit__cache_scan_free(out);
        return st;
    }
    /* One record per file so far; sort and fold records of the same hash together. An empty
     * kernels/ leaves the arrays NULL, and qsort's array must not be NULL even for 0 items. */
    if (out->n > 1)
        qsort(out->items, out->n, sizeof(*out->items), cmp_item);
    size_t w = 0;
    for (size_t r = 0; r < out->n; r++) {
        if (w > 0 && !strcmp(out->items[w - 1].hash, out->items[r].hash)) {
            jit__cache_item_t *a = &out->items[w - 1], *b = &out->items[r];
            a->files |= b->files;
            a->bytes += b->bytes;
            a->cubin_bytes += b->cubin_bytes;
            if (b->newest > a->newest)
                a->newest = b->newest;
            if (b->files & JIT__F_SIDECAR)
                a->sidecar_time = b->sidecar_time;
        } else {
            out->items[w++] = out->items[r];
        }
    }
    out->n = w;
    if (out->n_strays > 1)
        qsort(out->strays, out->n_strays, sizeof(*out->strays), cmp_stray);
    return JIT_OK;
}

void jit__cache_scan_free(jit__cache_scan_t *s) {
    free(s->items);
    free(s->strays);
    memset(s, 0, sizeof(*s));
}

jit_status_t jit__cache_list_dir(const jit__cache_t *c, const char *sub, jit__cache_stray_t **out,
                                 size_t *n, jit__diag_t *d) {
    *out = NULL;
    *n = 0;
    int missing;
    DIR *dir = open_sub(c, sub, &missing, d);
    if (!dir)
        return missing ? JIT_OK : JIT_IO_ERROR;
    size_t cap = 0;
    struct dirent *de;
    jit_status_t st = JIT_OK;
    while ((de = readdir(dir))) {
        struct stat fst;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (strlen(sub) + strlen(de->d_name) + 2 > JIT__CACHE_NAME_MAX)
            continue;
        if (fstatat(dirfd(dir), de->d_name, &fst, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(fst.st_mode))
            continue;
        if (grow((void **)out, &cap, *n, sizeof(**out))) {
            st = jit__fail(d, JIT_OUT_OF_MEMORY, "cache scan: out of memory");
            break;
        }
        snprintf((*out)[*n].name, JIT__CACHE_NAME_MAX, "%s/%s", sub, de->d_name);
        (*out)[*n].mtime = jit__cache_mtime(&fst);
        (*n)++;
    }
    closedir(dir);
    if (st != JIT_OK) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return st;
}
