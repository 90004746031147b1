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

/* ---- a file at a path the user names --------------------------------------------------------
 * `cache export FILE` runs as whoever asks, root included, on a path anyone may have prepared.
 * Writing through what is there would let a link, a FIFO or a device receive the archive, and
 * renaming over it would replace a device node (/dev/null) or another user's file with ours. So
 * only a new name or a regular file of the caller's own is written, through a temporary in the
 * same directory, every step relative to that directory's descriptor. */

static const char *kind_of(mode_t mode) {
    if (S_ISLNK(mode))
        return "a symbolic link";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISDIR(mode))
        return "a directory";
    return "not a regular file";
}

/* The directory is trusted as the cache's own is (owned by this user or root, not writable by
 * group or others), with one addition: a sticky one (/tmp) lets others add names but not rename
 * or remove ours, which is all the write below relies on. */
static const char *distrust_parent(const struct stat *st, char *why, size_t whysz) {
    if (st->st_uid != geteuid() && st->st_uid != 0)
        snprintf(why, whysz, "it is owned by uid %u, neither by uid %u nor by root",
                 (unsigned)st->st_uid, (unsigned)geteuid());
    else if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
        snprintf(why, whysz,
                 "it is writable by %s (mode %04o), so the file could be swapped "
                 "between the check and the rename",
                 (st->st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st->st_mode & 07777));
    else
        return NULL;
    return why;
}

/* Split `path` into o->name and its directory, opened into o->dirfd. 0, or -1 and `why`. */
static int open_parent(const char *path, jit__out_file_t *o, char *why, size_t whysz) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char parent[JIT__CACHE_PATH_MAX];
    if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
        snprintf(why, whysz, "%s: refused: it names a directory, not a file", path);
        return -1;
    }
    if (strlen(base) >= sizeof(o->name) ||
        snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - path) : 1,
                 slash ? (slash == path ? "/" : path) : ".") >= (int)sizeof(parent)) {
        snprintf(why, whysz, "%s: the name is too long", path);
        return -1;
    }
    snprintf(o->name, sizeof(o->name), "%s", base);
    o->dirfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    char reason[JIT__CACHE_WHY_MAX];
    if (o->dirfd < 0 || fstat(o->dirfd, &st) != 0) {
        snprintf(why, whysz, "%s: cannot open its directory %s: %s", path, parent, strerror(errno));
        return -1;
    }
    if (distrust_parent(&st, reason, sizeof(reason))) {
        snprintf(why, whysz, "%s: refused: its directory %s is not safe to write in: %s", path,
                 parent, reason);
        return -1;
    }
    return 0;
}

int jit__out_file_open(const char *path, jit__out_file_t *o, char *why, size_t whysz) {
    memset(o, 0, sizeof(*o));
    o->dirfd = -1;
    int fd = -1;
    struct stat st;
    if (open_parent(path, o, why, whysz) != 0)
        goto fail;
    if (fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        const char *bad = !S_ISREG(st.st_mode) ? kind_of(st.st_mode) : NULL;
        char owner[96];
        if (!bad && st.st_uid != geteuid()) {
            snprintf(owner, sizeof(owner), "a file owned by uid %u, not by uid %u",
                     (unsigned)st.st_uid, (unsigned)geteuid());
            bad = owner;
        }
        if (bad) {
            snprintf(why, whysz,
                     "%s: refused: it is %s; only a new file or a regular file of "
                     "your own is written",
                     path, bad);
            goto fail;
        }
        o->replaces = 1;
        o->dev = st.st_dev;
        o->ino = st.st_ino;
    } else if (errno != ENOENT) {
        snprintf(why, whysz, "%s: %s", path, strerror(errno));
        goto fail;
    }
    if (snprintf(o->tmp, sizeof(o->tmp), "%s.%ld.tmp", o->name, (long)getpid()) >=
        (int)sizeof(o->tmp)) {
        snprintf(why, whysz, "%s: the name is too long for a temporary beside it", path);
        goto fail;
    }
    fd = openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        snprintf(why, whysz, "cannot create %s beside %s: %s", o->tmp, path, strerror(errno));
        o->tmp[0] = '\0';
        goto fail;
    }
    return fd;
fail:
    jit__out_file_abort(o);
    return -1;
}

/* Publish the temporary under the name without replacing anything that appeared there since
 * the check; where the file system lacks RENAME_NOREPLACE, link() gives the same guarantee. */
static int rename_noreplace(int dirfd, const char *from, const char *to) {
    if (renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return errno;
    if (linkat(dirfd, from, dirfd, to, 0) != 0)
        return errno;
    unlinkat(dirfd, from, 0);
    return 0;
}

int jit__out_file_commit(jit__out_file_t *o, const char *path, char *why, size_t whysz) {
    int err = 0;
    struct stat st;
    if (!o->replaces) {
        err = rename_noreplace(o->dirfd, o->tmp, o->name);
        if (err == EEXIST)
            snprintf(why, whysz,
                     "%s: refused: something was put there while it was written; it "
                     "was left as it is",
                     path);
    } else if (fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
               st.st_dev != o->dev || st.st_ino != o->ino || st.st_uid != geteuid()) {
        err = EEXIST;
        snprintf(why, whysz,
                 "%s: refused: it was replaced while it was written; it was left as "
                 "it is",
                 path);
    } else if (renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0) {
        err = errno;
    }
    if (err && err != EEXIST)
        snprintf(why, whysz, "cannot rename %s to %s: %s", o->tmp, path, strerror(err));
    if (!err) {
        o->tmp[0] = '\0';
        fsync(o->dirfd); /* the rename survives a crash; a failure here loses nothing written */
    }
    jit__out_file_abort(o);
    return err ? -1 : 0;
}

void jit__out_file_abort(jit__out_file_t *o) {
    if (o->dirfd >= 0 && o->tmp[0])
        unlinkat(o->dirfd, o->tmp, 0);
    o->tmp[0] = '\0';
    if (o->dirfd >= 0)
        close(o->dirfd);
    o->dirfd = -1;
}
