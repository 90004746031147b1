/*
 * File primitives of the cache: trusted reads, atomic publication, removal and flock.
 *
 * Publication writes a private temporary in tmp/ (same file system as kernels/, so rename() is
 * atomic), fsyncs it and renames it into place: a reader sees the old file or the whole new one,
 * never a prefix. Lock files are never deleted while held; to let gc delete idle ones safely, a
 * locker checks after flock() that the name still points at the inode it locked and retries if
 * not, so a lock on an unlinked inode can never be mistaken for the key's lock.
 */
#include "cache_private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

const char *const jit__cache_ext[4] = {".cubin", ".cu", ".ptx", ".json"};

int jit__cache_valid_hash(const char *s) {
    if (!s)
        return 0;
    for (int i = 0; i < JIT_KEY_HASH_LEN; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return 0;
    }
    return s[JIT_KEY_HASH_LEN] == '\0';
}

void jit__cache_entry_name(char *out, const char *hash, const char *ext) {
    snprintf(out, JIT__CACHE_NAME_MAX, "kernels/%s%s", hash, ext);
}

int64_t jit__cache_mtime(const struct stat *st) {
    return (int64_t)st->st_mtim.tv_sec;
}

const char *jit__cache_distrust(const struct stat *st, int want_dir, char *why, size_t whysz) {
    if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
        snprintf(why, whysz, "not a %s", want_dir ? "directory" : "regular file");
    else if (st->st_uid != geteuid() && st->st_uid != 0)
        snprintf(why, whysz, "owned by uid %u, neither by uid %u nor by root", (unsigned)st->st_uid,
                 (unsigned)geteuid());
    else if (st->st_mode & (S_IWGRP | S_IWOTH))
        snprintf(why, whysz, "writable by %s (mode %04o)",
                 (st->st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st->st_mode & 07777));
    else
        return NULL;
    return why;
}

jit__slurp_t jit__cache_slurp(const jit__cache_t *c, const char *name, char **buf, size_t *len,
                              struct stat *st, char *why, size_t whysz) {
    *buf = NULL;
    *len = 0;
    int fd = openat(c->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return JIT__SLURP_MISSING;
        snprintf(why, whysz, "%s: %s", name,
                 errno == ELOOP ? "is a symbolic link" : strerror(errno));
        return (errno == ELOOP || errno == EACCES) ? JIT__SLURP_REFUSED : JIT__SLURP_FAILED;
    }
    char reason[JIT__CACHE_WHY_MAX];
    if (fstat(fd, st) != 0) {
        snprintf(why, whysz, "%s: %s", name, strerror(errno));
        close(fd);
        return JIT__SLURP_FAILED;
    }
    if (jit__cache_distrust(st, 0, reason, sizeof(reason))) {
        snprintf(why, whysz, "%s: %s", name, reason);
        close(fd);
        return JIT__SLURP_REFUSED;
    }
    size_t want = (size_t)st->st_size;
    char *p = malloc(want + 1);
    if (!p) {
        snprintf(why, whysz, "%s: out of memory (%zu bytes)", name, want);
        close(fd);
        return JIT__SLURP_FAILED;
    }
    size_t got = 0;
    while (got < want) {
        ssize_t r = read(fd, p + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(why, whysz, "%s: %s", name, strerror(errno));
            free(p);
            close(fd);
            return JIT__SLURP_FAILED;
        }
        if (r == 0)
            break; /* shrank under us: the caller's size check will notice */
        got += (size_t)r;
    }
    close(fd);
    p[got] = '\0';
    *buf = p;
    *len = got;
    return JIT__SLURP_OK;
}

static int write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Recreate the subdirectory `name` lives in ("tmp/x" -> "tmp"), for when someone emptied the
 * cache directory under a running process. 1 if it now exists. */
static int remake_parent(const jit__cache_t *c, const char *name) {
    const char *slash = strchr(name, '/');
    char sub[JIT__CACHE_NAME_MAX];
    if (!slash || (size_t)(slash - name) >= sizeof(sub))
        return 0;
    memcpy(sub, name, (size_t)(slash - name));
    sub[slash - name] = '\0';
    return mkdirat(c->dirfd, sub, 0700) == 0 || errno == EEXIST;
}

static int is_directory(const jit__cache_t *c, const char *name) {
    struct stat st;
    return fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

int jit__cache_publish(jit__cache_t *c, const char *name, const void *data, size_t len) {
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    char tmp[JIT__CACHE_NAME_MAX + 64];
    snprintf(tmp, sizeof(tmp), "tmp/%ld.%u.%s", (long)getpid(), atomic_fetch_add(&c->tmp_seq, 1u),
             base);
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
    int fd = openat(c->dirfd, tmp, flags, 0600);
    if (fd < 0 && errno == ENOENT && remake_parent(c, tmp))
        fd = openat(c->dirfd, tmp, flags, 0600);
    if (fd < 0)
        return errno;
    int err = write_all(fd, data, len);
    /* Without fsync a crash after the rename could leave a whole-length file of zeros. */
    if (!err && fsync(fd) != 0)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && renameat(c->dirfd, tmp, c->dirfd, name) != 0) {
        err = errno;
        if (err == ENOENT && remake_parent(c, name))
            err = renameat(c->dirfd, tmp, c->dirfd, name) == 0 ? 0 : errno;
        /* A directory where the cache keeps its index (manifest.json, manifest.journal; put
         * there by hand or by damage) would fail every later write of it; nothing of ours lives
         * in it, so it goes, links not followed. In kernels/ such a directory fails the publish
         * of that one entry, which is taken back whole, and gc removes it as a stray. */
        else if ((err == EISDIR || err == ENOTEMPTY || err == EEXIST) && !strchr(name, '/') &&
                 is_directory(c, name) && jit__cache_remove_tree(c, name) == 0)
            err = renameat(c->dirfd, tmp, c->dirfd, name) == 0 ? 0 : errno;
    }
    if (err)
        unlinkat(c->dirfd, tmp, 0);
    return err;
}

int jit__cache_fsync_dir(const jit__cache_t *c, const char *sub) {
    int fd = openat(c->dirfd, *sub ? sub : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int err = fsync(fd) == 0 ? 0 : errno;
    close(fd);
    return err;
}

uint64_t jit__cache_remove_entry(jit__cache_t *c, const char *hash) {
    static const int order[4] = {3, 0, 1, 2}; /* sidecar first: the entry ends at once */
    uint64_t freed = 0;
    for (int i = 0; i < 4; i++) {
        char name[JIT__CACHE_NAME_MAX];
        struct stat st;
        jit__cache_entry_name(name, hash, jit__cache_ext[order[i]]);
        if (fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (unlinkat(c->dirfd, name, 0) == 0)
            freed += (uint64_t)st.st_size;
    }
    return freed;
}

int jit__cache_flock(jit__cache_t *c, const char *name, int nonblock, int create) {
    for (;;) {
        int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0);
        int fd = openat(c->dirfd, name, flags, 0600);
        if (fd < 0 && errno == ENOENT && create && remake_parent(c, name))
            fd = openat(c->dirfd, name, flags, 0600);
        if (fd < 0)
            return -errno;
        int r;
        while ((r = flock(fd, LOCK_EX | (nonblock ? LOCK_NB : 0))) != 0 && errno == EINTR)
            ;
        if (r != 0) {
            int err = errno;
            close(fd);
            return -err;
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && fstatat(c->dirfd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
            held.st_dev == named.st_dev && held.st_ino == named.st_ino)
            return fd;
        close(fd);
        if (!create)
            return -ENOENT;
    }
}

void jit__cache_drop_lock_file(jit__cache_t *c, const char *name) {
    int fd = jit__cache_flock(c, name, 1, 0);
    if (fd < 0)
        return;
    /* Unlinking while holding the lock: a waiter that opened the old inode will find the name
     * gone (or pointing elsewhere) after its flock returns and retry on a fresh file. */
    unlinkat(c->dirfd, name, 0);
    close(fd);
}

/* Deep enough for anything a person or a tool plants; deeper trees are left for a human rather
 * than risking the stack on a hostile one. */
#define JIT__CACHE_TREE_DEPTH 32

static int remove_tree_at(int parent, const char *name, int depth) {
    if (depth > JIT__CACHE_TREE_DEPTH)
        return ELOOP;
    /* O_NOFOLLOW: had `name` been swapped for a link since the scan, this fails rather than
     * emptying whatever the link points at. */
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno;
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int err = errno;
        close(fd);
        return err;
    }
    int err = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone since readdir */
        int e = S_ISDIR(st.st_mode) ? remove_tree_at(dirfd(dir), de->d_name, depth + 1)
                                    : (unlinkat(dirfd(dir), de->d_name, 0) == 0 ? 0 : errno);
        if (e && !err)
            err = e;
    }
    closedir(dir);
    if (unlinkat(parent, name, AT_REMOVEDIR) != 0 && !err)
        err = errno;
    return err;
}

int jit__cache_remove_tree(jit__cache_t *c, const char *name) {
    if (c->dirfd < 0)
        return EBADF;
    return remove_tree_at(c->dirfd, name, 0);
}

int jit__cache_remove_stray(jit__cache_t *c, const jit__cache_stray_t *s) {
    if (s->is_dir)
        return jit__cache_remove_tree(c, s->name) == 0;
    return unlinkat(c->dirfd, s->name, 0) == 0;
}
