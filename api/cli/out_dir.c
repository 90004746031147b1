/*
 * The directories `inspect --out DIR` writes into and `rebuild DIR` reads from and writes into.
 * Both run as whoever asks, often root, on a path another user may have prepared. Every step
 * therefore works on descriptors: DIR and each folder below it are opened with O_NOFOLLOW and
 * judged by fstat on the open descriptor (a directory the caller owns that nobody else can
 * write), and each file is reached with openat relative to the folder already vetted. A link
 * planted at DIR, at a folder or at a file is refused or replaced, never followed; a directory
 * another user owns or could write is refused, since they could swap names under any check.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "kernel_dir.h"

/* NULL if the open directory `fd` may be written by this process; else a reason. */
static const char *distrust_dir(int fd, char *why, size_t whysz) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        snprintf(why, whysz, "cannot stat it: %s", strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, whysz, "it is not a directory");
    else if (st.st_uid != geteuid())
        snprintf(why, whysz, "it is owned by another user (uid %u)", (unsigned)st.st_uid);
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        snprintf(why, whysz, "another user can write to it (mode %04o)",
                 (unsigned)(st.st_mode & 07777));
    else
        return NULL;
    return why;
}

/* Open `name` under `parent` (AT_FDCWD: a path) as a directory without following a link at its
 * last component, creating it first if asked. The descriptor, or -1 and a reason. */
static int open_dir_at(int parent, const char *name, int create, char *why, size_t whysz) {
    if (create && mkdirat(parent, name, 0755) != 0 && errno != EEXIST) {
        snprintf(why, whysz, "cannot create it: %s", strerror(errno));
        return -1;
    }
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        struct stat st;
        if (err == ELOOP ||
            (err == ENOTDIR && fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
             S_ISLNK(st.st_mode)))
            snprintf(why, whysz, "it is a symbolic link");
        else if (err == ENOTDIR)
            snprintf(why, whysz, "it is not a directory");
        else if (err == ENOENT)
            snprintf(why, whysz, "it does not exist");
        else
            snprintf(why, whysz, "cannot open it: %s", strerror(err));
        return -1;
    }
    if (distrust_dir(fd, why, whysz)) {
        close(fd);
        return -1;
    }
    return fd;
}

int jit__cli_out_open(const char *flag, const char *dir, int create, int *dfd) {
    char why[256];
    /* A trailing slash would make the kernel follow a link at the last component. */
    char name[PATH_MAX];
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    if (len == 0 || len >= sizeof(name)) {
        jit__cli_error("%s %s: not a usable directory name", flag, dir);
        return JIT_CLI_FAILED;
    }
    memcpy(name, dir, len);
    name[len] = '\0';
    *dfd = open_dir_at(AT_FDCWD, name, create, why, sizeof(why));
    if (*dfd < 0) {
        jit__cli_error("%s %s: refused: %s; use a directory only you can write", flag, dir, why);
        return JIT_CLI_FAILED;
    }
    return 0;
}

int jit__cli_out_path_ok(const char *rel) {
    if (!rel || !*rel || rel[0] == '/' || strlen(rel) >= PATH_MAX)
        return 0;
    for (const char *p = rel; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
            (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        p += n;
        if (*p == '/' && !*++p)
            return 0; /* a trailing slash names a folder, not a file */
    }
    return 1;
}

/* The folder of `rel` under dfd, each level opened (and created, if asked) as DIR is; *base is
 * the last component. The folder's descriptor (a dup of dfd for a plain name), or -1. */
static int folder_of(int dfd, const char *dir, const char *rel, int create, const char **base) {
    int fd = dup(dfd);
    const char *p = rel;
    for (const char *slash; fd >= 0 && (slash = strchr(p, '/'));) {
        char part[NAME_MAX + 1], why[256];
        snprintf(part, sizeof(part), "%.*s", (int)(slash - p), p);
        int sub = open_dir_at(fd, part, create, why, sizeof(why));
        if (sub < 0 && create)
            jit__cli_error("cannot write %s/%s: its folder %s/%.*s is refused: %s", dir, rel, dir,
                           (int)(slash - rel), rel, why);
        else if (sub < 0)
            jit__cli_error("cannot read %s/%s: its folder %s/%.*s: %s", dir, rel, dir,
                           (int)(slash - rel), rel, why);
        close(fd);
        fd = sub;
        p = slash + 1;
    }
    *base = p;
    return fd;
}

/* Write `text` to DIR/rel through a fresh temporary: O_EXCL|O_NOFOLLOW cannot open anything
 * already there (a planted link or file), and renameat replaces a link at the name itself,
 * never the file it points at. */
int jit__cli_out_write(int dfd, const char *dir, const char *rel, const void *data, size_t len) {
    if (!jit__cli_out_path_ok(rel)) {
        jit__cli_error("cannot write %s/%s: not a relative path of plain names", dir, rel);
        return JIT_CLI_FAILED;
    }
    const char *base = NULL;
    int fd_dir = folder_of(dfd, dir, rel, 1, &base);
    if (fd_dir < 0)
        return JIT_CLI_FAILED;
    const char *bytes = data;
    char tmp[NAME_MAX + 40];
    snprintf(tmp, sizeof(tmp), ".%.200s.%ld.tmp", base, (long)getpid());
    int fd = openat(fd_dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int err = fd < 0 ? errno : 0;
    size_t off = 0;
    while (!err && off < len) {
        ssize_t w = write(fd, bytes + off, len - off);
        if (w < 0 && errno != EINTR)
            err = errno;
        else if (w > 0)
            off += (size_t)w;
    }
    if (fd >= 0 && close(fd) != 0 && !err)
        err = errno;
    if (!err && renameat(fd_dir, tmp, fd_dir, base) != 0)
        err = errno;
    if (err && fd >= 0)
        unlinkat(fd_dir, tmp, 0);
    close(fd_dir);
    if (err) {
        jit__cli_error("cannot write %s/%s: %s", dir, rel, strerror(err));
        return JIT_CLI_FAILED;
    }
    printf("wrote %s/%s\n", dir, rel);
    return 0;
}

int jit__cli_out_read(int dfd, const char *dir, const char *rel, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    if (!jit__cli_out_path_ok(rel)) {
        jit__cli_error("cannot read %s/%s: not a relative path of plain names", dir, rel);
        return JIT_CLI_FAILED;
    }
    const char *base = NULL;
    int fd_dir = folder_of(dfd, dir, rel, 0, &base);
    if (fd_dir < 0)
        return JIT_CLI_FAILED;
    int fd = openat(fd_dir, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int err = fd < 0 ? errno : 0;
    close(fd_dir);
    struct stat st;
    if (!err && fstat(fd, &st) != 0)
        err = errno;
    else if (!err && !S_ISREG(st.st_mode))
        err = EINVAL; /* a FIFO or a device could block or never end */
    else if (!err && st.st_size > ((off_t)64 << 20))
        err = EFBIG; /* no source or header comes near it */
    char *buf = !err ? malloc((size_t)st.st_size + 1) : NULL;
    if (!err && !buf)
        err = ENOMEM;
    size_t got = 0;
    while (!err && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno != EINTR)
            err = errno;
        else if (r == 0)
            break;
        else if (r > 0)
            got += (size_t)r;
    }
    if (fd >= 0)
        close(fd);
    if (err) {
        free(buf);
        jit__cli_error("cannot read %s/%s: %s", dir, rel,
                       err == ELOOP    ? "it is a symbolic link"
                       : err == EINVAL ? "it is not a regular file"
                                       : strerror(err));
        return JIT_CLI_FAILED;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return 0;
}
