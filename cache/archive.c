/*
 * Cache export and import (cache/archive.h). The archive:
 *
 *   jitgemm-cache-archive 1\n
 *   entry <hash> <sidecar bytes> <cubin bytes> <source bytes> <xxh3-128 of the three>\n
 *   <sidecar JSON><cubin><source>
 *   ... one record per entry ...
 *   end <entries> <xxh3-128 of every byte before this line>\n
 *
 * Sizes are decimal, hashes 32 lowercase hex digits. Import reads the whole file into memory and
 * checks everything before it publishes the first entry, so what it publishes is what it
 * checked, and a bad archive leaves the cache as it was.
 */
#include "archive.h"

#include "cache_private.h"
#include "cubin_info.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define EM_CUDA 190 /* ELF e_machine of NVIDIA cubins */

/* ---- export ------------------------------------------------------------------------------ */

typedef struct out_file {
    FILE *f;
    XXH3_state_t *all; /* every byte written so far, for the trailer */
    int failed;
} out_file_t;

static void put_bytes(out_file_t *o, const void *p, size_t n) {
    if (o->failed || n == 0)
        return;
    if (fwrite(p, 1, n, o->f) != n)
        o->failed = errno ? errno : EIO;
    else
        XXH3_128bits_update(o->all, p, n);
}

static void hex_of(XXH128_hash_t h, char out[JIT_KEY_HASH_LEN + 1]) {
    snprintf(out, JIT_KEY_HASH_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

static void record_hash(const char *sidecar, size_t ns, const void *cubin, size_t nc,
                        const char *source, size_t nsrc, char out[JIT_KEY_HASH_LEN + 1]) {
    XXH3_state_t *s = XXH3_createState();
    XXH3_128bits_reset(s);
    XXH3_128bits_update(s, sidecar, ns);
    XXH3_128bits_update(s, cubin, nc);
    XXH3_128bits_update(s, source, nsrc);
    hex_of(XXH3_128bits_digest(s), out);
    XXH3_freeState(s);
}

/* One entry's record; 1 if written, 0 if the entry was left out. */
static int export_entry(jit__cache_t *c, out_file_t *o, const char *hash) {
    jit__cache_entry_t e;
    void *cubin = NULL;
    size_t size = 0;
    int found = 0;
    /* get checks the checksum and reports damage itself. */
    if (jit__cache_get(c, hash, &e, &cubin, &size, &found, NULL) != JIT_OK || !found)
        return 0;
    char *sidecar = jit__cache_entry_to_json(&e);
    char *source = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__cache_read_file(c, hash, ".cu", &source, &d) != JIT_OK)
        source = NULL; /* the source is for reading only; an entry is whole without it */
    jit__diag_clear(&d);
    int ok =
        sidecar && size <= JIT__ARCHIVE_MAX_CUBIN && strlen(sidecar) <= JIT__ARCHIVE_MAX_SIDECAR;
    if (ok) {
        size_t ns = strlen(sidecar), nsrc = source ? strlen(source) : 0;
        if (nsrc > JIT__ARCHIVE_MAX_SOURCE)
            nsrc = 0, source[0] = '\0';
        char rh[JIT_KEY_HASH_LEN + 1], line[256];
        record_hash(sidecar, ns, cubin, size, source ? source : "", nsrc, rh);
        int n =
            snprintf(line, sizeof(line), "entry %s %zu %zu %zu %s\n", e.hash, ns, size, nsrc, rh);
        put_bytes(o, line, (size_t)n);
        put_bytes(o, sidecar, ns);
        put_bytes(o, cubin, size);
        put_bytes(o, source, nsrc);
    }
    free(sidecar);
    free(source);
    free(cubin);
    return ok;
}

jit_status_t jit__cache_export(jit__cache_t *c, const char *path, const char *arch,
                               jit__archive_counts_t *counts, jit__diag_t *d) {
    memset(counts, 0, sizeof(*counts));
    jit__cache_entry_t *entries = NULL;
    size_t n = 0;
    jit_status_t st = jit__cache_list(c, &entries, &n, d);
    if (st != JIT_OK)
        return st;
    /* Vetted before anything is created: see jit__out_file_open. */
    jit__out_file_t target;
    char why[JIT__CACHE_PATH_MAX + 512];
    int fd = jit__out_file_open(path, &target, why, sizeof(why));
    if (fd < 0) {
        free(entries);
        return jit__fail(d, JIT_IO_ERROR, "%s", why);
    }
    out_file_t o = {fdopen(fd, "wb"), XXH3_createState(), 0};
    if (!o.f || !o.all) {
        if (o.f)
            fclose(o.f);
        else
            close(fd);
        jit__out_file_abort(&target);
        XXH3_freeState(o.all);
        free(entries);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "writing the archive %s", path);
    }
    XXH3_128bits_reset(o.all);
    put_bytes(&o, JIT__ARCHIVE_MAGIC, strlen(JIT__ARCHIVE_MAGIC));
    for (size_t i = 0; i < n && !o.failed; i++) {
        if (arch && strcmp(entries[i].arch, arch) != 0) {
            counts->skipped++;
            continue;
        }
        if (export_entry(c, &o, entries[i].hash))
            counts->written++;
        else
            counts->skipped++;
    }
    char all[JIT_KEY_HASH_LEN + 1], line[128];
    hex_of(XXH3_128bits_digest(o.all), all);
    int len = snprintf(line, sizeof(line), "end %zu %s\n", counts->written, all);
    if (!o.failed && fwrite(line, 1, (size_t)len, o.f) != (size_t)len)
        o.failed = errno ? errno : EIO;
    if (!o.failed && (fflush(o.f) != 0 || fsync(fileno(o.f)) != 0))
        o.failed = errno;
    if (fclose(o.f) != 0 && !o.failed)
        o.failed = errno;
    XXH3_freeState(o.all);
    free(entries);
    if (o.failed) {
        jit__out_file_abort(&target);
        return jit__fail(d, JIT_IO_ERROR, "cannot write the archive %s: %s", path,
                         strerror(o.failed));
    }
    if (jit__out_file_commit(&target, path, why, sizeof(why)) != 0)
        return jit__fail(d, JIT_IO_ERROR, "%s", why);
    return JIT_OK;
}

/* ---- import ------------------------------------------------------------------------------ */

typedef struct record {
    jit__cache_entry_t entry;
    const char *cubin, *source; /* into the archive's bytes (the source is not NUL-terminated) */
    size_t cubin_size, source_size;
} record_t;

/* The value of `field=` in a key text, into out; 0 if absent. */
static int key_field(const char *text, const char *field, char *out, size_t outsz) {
    size_t fl = strlen(field);
    for (const char *p = text; (p = strstr(p, field)); p += fl) {
        if ((p == text || p[-1] == ' ') && p[fl] == '=') {
            const char *v = p + fl + 1;
            size_t n = strcspn(v, " ");
            snprintf(out, outsz, "%.*s", (int)n, v);
            return 1;
        }
    }
    return 0;
}

/* Parse "entry <hash> <ns> <nc> <nsrc> <hash>\n" at p (bytes left: n). Returns the header length
 * or 0. */
static size_t parse_header(const char *p, size_t n, char hash[33], size_t *ns, size_t *nc,
                           size_t *nsrc, char rh[33]) {
    const char *nl = memchr(p, '\n', n < 256 ? n : 256);
    if (!nl)
        return 0;
    char line[257];
    memcpy(line, p, (size_t)(nl - p));
    line[nl - p] = '\0';
    unsigned long long a, b, c;
    int used = 0;
    if (sscanf(line, "entry %32s %llu %llu %llu %32s%n", hash, &a, &b, &c, rh, &used) != 5 ||
        used != (int)(nl - p) || !jit__cache_valid_hash(hash) || !jit__cache_valid_hash(rh))
        return 0;
    *ns = (size_t)a;
    *nc = (size_t)b;
    *nsrc = (size_t)c;
    return (size_t)(nl - p) + 1;
}

/* Check record i (bytes at p) as an entry: sidecar, key, cubin. 0 or -1 with `why`. */
static int check_entry(const char *hash, const char *sidecar, size_t ns, const char *cubin,
                       size_t nc, record_t *r, char *why, size_t whysz) {
    char detail[JIT__CACHE_WHY_MAX];
    if (jit__cache_entry_from_text(sidecar, ns, &r->entry, detail, sizeof(detail)) != 0) {
        snprintf(why, whysz, "its sidecar does not parse (%s)", detail);
        return -1;
    }
    const jit__cache_entry_t *e = &r->entry;
    char text_hash[JIT_KEY_HASH_LEN + 1], sum[JIT_KEY_HASH_LEN + 1], v[64];
    jit__hash_hex(e->key_text, strlen(e->key_text), text_hash);
    if (strcmp(e->hash, hash) != 0) {
        snprintf(why, whysz, "its sidecar names hash %s", e->hash);
        return -1;
    }
    if (strcmp(text_hash, hash) != 0) {
        snprintf(why, whysz, "its key text hashes to %s, not to its name", text_hash);
        return -1;
    }
    if (!key_field(e->key_text, "arch", v, sizeof(v)) || strcmp(v, e->arch) != 0 ||
        !key_field(e->key_text, "target", v, sizeof(v)) || strcmp(v, e->target) != 0) {
        snprintf(why, whysz, "its key text does not name its arch %s and target %s", e->arch,
                 e->target);
        return -1;
    }
    if (e->size != nc) {
        snprintf(why, whysz, "its sidecar says %llu cubin bytes, the record holds %zu",
                 (unsigned long long)e->size, nc);
        return -1;
    }
    jit__hash_hex(cubin, nc, sum);
    if (strcmp(sum, e->checksum) != 0) {
        snprintf(why, whysz, "its cubin's checksum is %s, its sidecar says %s", sum, e->checksum);
        return -1;
    }
    int regs = 0, frame = 0;
    const unsigned char *b = (const unsigned char *)cubin;
    if (nc < 64 || b[0x12] != (EM_CUDA & 0xff) || b[0x13] != (EM_CUDA >> 8) ||
        jit__cubin_resources(cubin, nc, &regs, &frame) != 0) {
        snprintf(why, whysz, "its cubin is not an NVIDIA ELF cubin with kernel attributes");
        return -1;
    }
    return 0;
}

/* The whole archive, checked. *recs malloc'd (n of them) pointing into buf. */
static jit_status_t check_archive(const char *path, const char *buf, size_t size, record_t **recs,
                                  size_t *n, jit__diag_t *d) {
    *recs = NULL;
    *n = 0;
    size_t magic = strlen(JIT__ARCHIVE_MAGIC);
    if (size < magic || memcmp(buf, JIT__ARCHIVE_MAGIC, magic) != 0)
        return jit__fail(d, JIT_CACHE_ERROR,
                         "%s is not a jitgemm cache archive (it does not start with \"%.*s\")",
                         path, (int)magic - 1, JIT__ARCHIVE_MAGIC);
    size_t pos = magic, cap = 0;
    record_t *out = NULL;
    for (;;) {
        if (size - pos >= 4 && memcmp(buf + pos, "end ", 4) == 0)
            break;
        size_t index = *n;
        char hash[33], rh[33], got[33];
        size_t ns, nc, nsrc;
        size_t hl = parse_header(buf + pos, size - pos, hash, &ns, &nc, &nsrc, rh);
        if (!hl) {
            free(out);
            return jit__fail(d, JIT_CACHE_ERROR,
                             "%s: record %zu at byte %zu is not an entry header; the archive is "
                             "damaged or truncated, nothing was imported",
                             path, index + 1, pos);
        }
        if (ns > JIT__ARCHIVE_MAX_SIDECAR || nc > JIT__ARCHIVE_MAX_CUBIN ||
            nsrc > JIT__ARCHIVE_MAX_SOURCE || ns + nc + nsrc > size - pos - hl) {
            free(out);
            return jit__fail(d, JIT_CACHE_ERROR,
                             "%s: entry %s (record %zu) claims %zu + %zu + %zu bytes, more than "
                             "the archive holds or allows; truncated or damaged, nothing was "
                             "imported",
                             path, hash, index + 1, ns, nc, nsrc);
        }
        const char *sidecar = buf + pos + hl, *cubin = sidecar + ns, *source = cubin + nc;
        record_hash(sidecar, ns, cubin, nc, source, nsrc, got);
        if (strcmp(got, rh) != 0) {
            free(out);
            return jit__fail(d, JIT_CACHE_ERROR,
                             "%s: entry %s (record %zu) hashes to %s, its header says %s; "
                             "damaged, nothing was imported",
                             path, hash, index + 1, got, rh);
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            record_t *grown = realloc(out, cap * sizeof(*out));
            if (!grown) {
                free(out);
                return jit__fail(d, JIT_OUT_OF_MEMORY, "%s: %zu records", path, cap);
            }
            out = grown;
        }
        record_t *r = &out[(*n)++];
        memset(r, 0, sizeof(*r));
        char why[JIT__CACHE_WHY_MAX + 160];
        if (check_entry(hash, sidecar, ns, cubin, nc, r, why, sizeof(why)) != 0) {
            free(out);
            return jit__fail(d, JIT_CACHE_ERROR,
                             "%s: entry %s (record %zu) is refused: %s; nothing was imported", path,
                             hash, index + 1, why);
        }
        r->cubin = cubin;
        r->cubin_size = nc;
        r->source = source;
        r->source_size = nsrc;
        pos += hl + ns + nc + nsrc;
    }
    char all[33], want[33];
    hex_of(XXH3_128bits(buf, pos), all);
    unsigned long long count = 0;
    int used = 0;
    const char *nl = memchr(buf + pos, '\n', size - pos);
    char line[128] = "";
    if (nl && (size_t)(nl - (buf + pos)) < sizeof(line)) {
        memcpy(line, buf + pos, (size_t)(nl - (buf + pos)));
        line[nl - (buf + pos)] = '\0';
    }
    if (!nl || (size_t)(nl - buf) + 1 != size ||
        sscanf(line, "end %llu %32s%n", &count, want, &used) != 2 || line[used] != '\0' ||
        count != *n || strcmp(want, all) != 0) {
        free(out);
        return jit__fail(d, JIT_CACHE_ERROR,
                         "%s: the trailer does not match the %zu records before it (expected "
                         "\"end %zu %s\"); the archive is damaged or truncated, nothing was "
                         "imported",
                         path, *n, *n, all);
    }
    *recs = out;
    return JIT_OK;
}

static jit_status_t read_all(const char *path, char **buf, size_t *size, jit__diag_t *d) {
    *buf = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return jit__fail(d, JIT_IO_ERROR, "cannot open the archive %s: %s", path, strerror(errno));
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (!b)
            break;
        if (n == cap) {
            char *grown = realloc(b, cap * 2);
            if (!grown) {
                free(b);
                b = NULL;
                break;
            }
            b = grown;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (!b)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "reading the archive %s", path);
    if (err) {
        free(b);
        return jit__fail(d, JIT_IO_ERROR, "cannot read the archive %s", path);
    }
    *buf = b;
    *size = n;
    return JIT_OK;
}

struct jit__archive {
    char *buf;      /* the whole file */
    record_t *recs; /* checked records, pointing into buf */
    size_t n;
};

jit_status_t jit__archive_load(const char *path, jit__archive_t **out, jit__diag_t *d) {
    *out = NULL;
    jit__archive_t *a = calloc(1, sizeof(*a));
    if (!a)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "reading the archive %s", path);
    size_t size = 0;
    jit_status_t st = read_all(path, &a->buf, &size, d);
    if (st == JIT_OK)
        st = check_archive(path, a->buf, size, &a->recs, &a->n, d);
    if (st != JIT_OK) {
        jit__archive_free(a);
        return st;
    }
    *out = a;
    return JIT_OK;
}

void jit__archive_free(jit__archive_t *a) {
    if (!a)
        return;
    free(a->recs);
    free(a->buf);
    free(a);
}

jit_status_t jit__cache_import_archive(jit__cache_t *c, const jit__archive_t *a,
                                       jit__archive_counts_t *counts, jit__diag_t *d) {
    memset(counts, 0, sizeof(*counts));
    if (!jit__cache_writable(c))
        return jit__fail(d, JIT_CACHE_ERROR,
                         "cannot import into %s: it is not a writable cache (see the warning)",
                         jit__cache_dir(c));
    jit_status_t st = JIT_OK;
    size_t n = a->n;
    for (size_t i = 0; st == JIT_OK && i < n; i++) {
        const record_t *r = &a->recs[i];
        if (r->entry.generator_version != JIT_KEY_FORMAT_VERSION) {
            counts->other_format++;
            continue;
        }
        jit__cache_entry_t have;
        void *bin = NULL;
        size_t have_size = 0;
        int found = 0;
        if (jit__cache_get(c, r->entry.hash, &have, &bin, &have_size, &found, NULL) == JIT_OK &&
            found && strcmp(have.checksum, r->entry.checksum) == 0) {
            free(bin);
            counts->present++;
            continue;
        }
        free(bin);
        char *source = NULL;
        if (r->source_size) {
            source = malloc(r->source_size + 1);
            if (source) {
                memcpy(source, r->source, r->source_size);
                source[r->source_size] = '\0';
            }
        }
        st = jit__cache_put(c, &r->entry, r->cubin, r->cubin_size, source, NULL, d);
        free(source);
        if (st == JIT_OK && !jit__cache_writable(c))
            st = jit__fail(d, JIT_CACHE_ERROR,
                           "%s turned read-only during the import (%zu of "
                           "%zu entries published)",
                           jit__cache_dir(c), counts->imported, n);
        if (st == JIT_OK)
            counts->imported++;
    }
    return st;
}

jit_status_t jit__cache_import(jit__cache_t *c, const char *path, jit__archive_counts_t *counts,
                               jit__diag_t *d) {
    memset(counts, 0, sizeof(*counts));
    if (!jit__cache_writable(c))
        return jit__fail(d, JIT_CACHE_ERROR,
                         "cannot import into %s: it is not a writable cache (see the warning)",
                         jit__cache_dir(c));
    jit__archive_t *a = NULL;
    jit_status_t st = jit__archive_load(path, &a, d);
    if (st == JIT_OK)
        st = jit__cache_import_archive(c, a, counts, d);
    jit__archive_free(a);
    return st;
}
