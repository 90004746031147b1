/*
 * SASS for `inspect --sass`: find nvdisasm and run it on a cubin. nvdisasm is not part of the
 * NVRTC wheels the library loads, so it is looked for where scripts/setup.sh puts it (the
 * project-local toolkit folders beside the program, found as jit/toolkit_dirs.c finds NVRTC's),
 * then in the toolkit directories the library would search, then on PATH. It only reads a
 * file, so it is run on a copy of the cubin in a private temporary directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "toolkit_dirs.h"

extern char **environ;

static int executable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The newest <root>/cuda-<major>.<minor>/bin/nvdisasm, into out; 1 if one was found. */
static int newest_in_root(const char *root, char *out, size_t outsz) {
    DIR *d = opendir(root);
    if (!d)
        return 0;
    int best = -1;
    for (struct dirent *e; (e = readdir(d));) {
        int major = 0, minor = 0;
        char path[JIT__TOOLKIT_ROOT_LEN + 300];
        if (sscanf(e->d_name, "cuda-%d.%d", &major, &minor) != 2 ||
            snprintf(path, sizeof(path), "%s/%s/bin/nvdisasm", root, e->d_name) >=
                (int)sizeof(path) ||
            !executable(path) || major * 100 + minor <= best)
            continue;
        if (snprintf(out, outsz, "%s", path) < (int)outsz)
            best = major * 100 + minor;
    }
    closedir(d);
    return best >= 0;
}

int jit__cli_find_nvdisasm(char *out, size_t outsz) {
    char roots[JIT__TOOLKIT_ROOTS_MAX][JIT__TOOLKIT_ROOT_LEN];
    int n = jit__toolkit_roots(roots, JIT__TOOLKIT_ROOTS_MAX);
    for (int i = 0; i < n; i++)
        if (newest_in_root(roots[i], out, outsz))
            return 1;
    const char *envs[] = {"JITGEMM_TOOLKIT_DIR", "CUDA_HOME", "CUDA_PATH"};
    for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
        const char *v = getenv(envs[i]);
        if (v && *v && snprintf(out, outsz, "%s/bin/nvdisasm", v) < (int)outsz && executable(out))
            return 1;
    }
    if (snprintf(out, outsz, "/usr/local/cuda/bin/nvdisasm") < (int)outsz && executable(out))
        return 1;
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        /* An empty PATH element means the current directory; a tool found there by accident
         * is not one to run. */
        if (len > 0 && snprintf(out, outsz, "%.*s/nvdisasm", (int)len, path) < (int)outsz &&
            executable(out))
            return 1;
        path = colon ? colon + 1 : NULL;
    }
    out[0] = '\0';
    return 0;
}

static int write_all_fd(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Everything readable from fd until EOF, NUL-terminated (malloc'd); NULL if out of memory. */
static char *read_all_fd(int fd) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* The first line of what nvdisasm said on stderr (malloc'd), or NULL if it said nothing. */
static char *first_line_of(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char buf[512];
    ssize_t r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return NULL;
    buf[r] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf[0] ? strdup(buf) : NULL;
}

int jit__cli_disassemble(const char *nvdisasm, const void *cubin, size_t size, char **sass,
                         char *why, size_t whysz) {
    *sass = NULL;
    const char *tmp = getenv("TMPDIR");
    char dir[4096], bin[4200], err[4200];
    snprintf(dir, sizeof(dir), "%s/jitgemm-sass-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(why, whysz, "cannot create a temporary directory %s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(bin, sizeof(bin), "%s/kernel.cubin", dir);
    snprintf(err, sizeof(err), "%s/nvdisasm.err", dir);
    int rc = -1, pipefd[2] = {-1, -1};
    int fd = open(bin, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write_all_fd(fd, cubin, size) != 0) {
        snprintf(why, whysz, "cannot write %s: %s", bin, strerror(errno));
        goto done;
    }
    close(fd);
    fd = -1;
    if (pipe(pipefd) != 0) {
        snprintf(why, whysz, "pipe: %s", strerror(errno));
        goto done;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char *argv[] = {(char *)nvdisasm, "-c", bin, NULL};
    pid_t pid;
    int sp = posix_spawn(&pid, nvdisasm, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    pipefd[1] = -1;
    if (sp != 0) {
        snprintf(why, whysz, "cannot run %s: %s", nvdisasm, strerror(sp));
        goto done;
    }
    char *text = read_all_fd(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !text) {
        char *msg = first_line_of(err);
        snprintf(why, whysz, "%s failed (%s %d)%s%s", nvdisasm,
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), msg ? ": " : "",
                 msg ? msg : "");
        free(msg);
        free(text);
        goto done;
    }
    *sass = text;
    rc = 0;
done:
    if (fd >= 0)
        close(fd);
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    unlink(bin);
    unlink(err);
    rmdir(dir);
    return rc;
}
