/* Shared test helpers. */
#include "support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

char *jt_mkdtemp(const char *tag) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    size_t n = strlen(base) + strlen(tag) + 32;
    char *p = malloc(n);
    snprintf(p, n, "%s/jitgemm-%s-XXXXXX", base, tag);
    if (!mkdtemp(p)) {
        free(p);
        return NULL;
    }
    return p;
}

void jt_rmtree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        chmod(path, 0700);
        DIR *dir = opendir(path);
        if (dir) {
            struct dirent *e;
            while ((e = readdir(dir))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                size_t n = strlen(path) + strlen(e->d_name) + 2;
                char *child = malloc(n);
                snprintf(child, n, "%s/%s", path, e->d_name);
                jt_rmtree(child);
                free(child);
            }
            closedir(dir);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

int jt_write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

char *jt_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    fclose(f);
    buf[len] = '\0';
    if (size)
        *size = len;
    return buf;
}

static char *drain(int fd) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ssize_t got;
    while ((got = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)got;
        if (cap - len - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[len] = '\0';
    return buf;
}

int jt_run(const char *const *argv, const char *const *env, const char *stdin_text, char **out,
           char **err) {
    /* stdout and stderr go to temporary files, so a chatty child can never block on a pipe. */
    char opath[] = "/tmp/jt-out-XXXXXX", epath[] = "/tmp/jt-err-XXXXXX";
    char ipath[] = "/tmp/jt-in-XXXXXX";
    int ofd = mkstemp(opath), efd = mkstemp(epath), ifd = mkstemp(ipath);
    if (ofd < 0 || efd < 0 || ifd < 0)
        return -1;
    if (stdin_text) {
        size_t n = strlen(stdin_text);
        if (write(ifd, stdin_text, n) != (ssize_t)n)
            return -1;
        lseek(ifd, 0, SEEK_SET);
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(ifd, 0);
        dup2(ofd, 1);
        dup2(efd, 2);
        for (const char *const *e = env; e && *e; e++)
            putenv((char *)*e);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    lseek(ofd, 0, SEEK_SET);
    lseek(efd, 0, SEEK_SET);
    char *o = drain(ofd), *e = drain(efd);
    close(ofd);
    close(efd);
    close(ifd);
    unlink(opath);
    unlink(epath);
    unlink(ipath);
    if (out)
        *out = o;
    else
        free(o);
    if (err)
        *err = e;
    else
        free(e);
    if (pid < 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

int jt_gpu_available(const char **why) {
    const jit__driver_t *drv = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__driver_get(&drv, &d) != JIT_OK) {
        static char msg[JIT__MSG_MAX + 64];
        snprintf(msg, sizeof(msg), "no GPU: %s", d.msg);
        if (why)
            *why = msg;
        jit__diag_clear(&d);
        return 0;
    }
    jit__diag_clear(&d);
    return 1;
}

uint64_t jt_rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

double jt_rng_uniform(uint64_t *s, double lo, double hi) {
    return lo + (hi - lo) * (double)(jt_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t jt_fresh_seed(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec ^
                 ((uint64_t)getpid() << 32);
    return s ? s : 0x1234567;
}
