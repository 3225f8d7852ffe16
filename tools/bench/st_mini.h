/* st_mini.h — a minimal read-only safetensors reader for the device
 * benchmarks (every *.safetensors file of a folder, mmapped), so that
 * tools/device runs need no library module beyond core and the CUDA backend.
 * The product's reader is src/model/safetensors (model helper); this one
 * trusts its input far less than a parser of user files must not: it checks
 * offsets against the file size and refuses anything it does not understand.
 */
#ifndef CT_ST_MINI_H
#define CT_ST_MINI_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/error.h"

typedef struct {
    char name[160];
    ct_dtype dtype;
    int ndim;
    int64_t shape[8];
    const void *data;
    size_t nbytes;
} stm_tensor;

typedef struct {
    stm_tensor *t;
    int n, cap;
    void *maps[64];
    size_t map_len[64];
    int nmaps;
} stm;

static const char *stm_ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

/* p at '"': copy the string (no escapes expected in tensor names) */
static const char *stm_str(const char *p, const char *e, char *out, size_t cap) {
    if (p >= e || *p != '"') return NULL;
    p++;
    size_t n = 0;
    while (p < e && *p != '"') {
        if (*p == '\\') p++;
        if (n + 1 < cap) out[n++] = *p;
        p++;
    }
    out[n] = 0;
    return p < e ? p + 1 : NULL;
}

/* skip any JSON value */
static const char *stm_skip(const char *p, const char *e) {
    p = stm_ws(p, e);
    if (p >= e) return NULL;
    if (*p == '"') {
        char tmp[8];
        return stm_str(p, e, tmp, sizeof tmp);
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        int in_str = 0;
        for (; p < e; p++) {
            if (in_str) {
                if (*p == '\\') p++;
                else if (*p == '"') in_str = 0;
                continue;
            }
            if (*p == '"') in_str = 1;
            else if (*p == '{' || *p == '[') depth++;
            else if (*p == '}' || *p == ']') {
                if (--depth == 0) return p + 1;
            }
        }
        return NULL;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']') p++;
    return p;
}

static const char *stm_ints(const char *p, const char *e, int64_t *v, int cap, int *n) {
    p = stm_ws(p, e);
    if (p >= e || *p != '[') return NULL;
    p++;
    *n = 0;
    for (;;) {
        p = stm_ws(p, e);
        if (p < e && *p == ']') return p + 1;
        char *end;
        long long x = strtoll(p, &end, 10);
        if (end == p || *n >= cap) return NULL;
        v[(*n)++] = x;
        p = stm_ws(end, e);
        if (p < e && *p == ',') p++;
    }
}

static ct_status stm_add_file(stm *s, const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return ct_fail(CT_ERR_IO, "%s: cannot open", path);
    struct stat st;
    fstat(fd, &st);
    size_t len = (size_t)st.st_size;
    if (len < 8 || s->nmaps >= 64) {
        close(fd);
        return ct_fail(CT_ERR_FORMAT, "%s: not a safetensors file", path);
    }
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return ct_fail(CT_ERR_IO, "%s: mmap failed", path);
    s->maps[s->nmaps] = m;
    s->map_len[s->nmaps++] = len;
    uint64_t hl;
    memcpy(&hl, m, 8);
    if (hl > len - 8) return ct_fail(CT_ERR_FORMAT, "%s: header length %llu", path, (unsigned long long)hl);
    const char *p = (const char *)m + 8, *e = p + hl;
    const char *data = e;
    size_t data_len = len - 8 - hl;
    p = stm_ws(p, e);
    if (p >= e || *p != '{') return ct_fail(CT_ERR_FORMAT, "%s: header is not an object", path);
    p++;
    for (;;) {
        p = stm_ws(p, e);
        if (p < e && *p == '}') break;
        char key[160];
        p = stm_str(p, e, key, sizeof key);
        if (!p) return ct_fail(CT_ERR_FORMAT, "%s: bad header", path);
        p = stm_ws(p, e);
        if (p >= e || *p != ':') return ct_fail(CT_ERR_FORMAT, "%s: bad header", path);
        p = stm_ws(p + 1, e);
        if (!strcmp(key, "__metadata__")) {
            p = stm_skip(p, e);
        } else {
            if (s->n == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 1024;
                s->t = (stm_tensor *)realloc(s->t, (size_t)s->cap * sizeof(stm_tensor));
                if (!s->t) return ct_fail(CT_ERR_OOM, "tensors");
            }
            stm_tensor *t = &s->t[s->n];
            memset(t, 0, sizeof *t);
            snprintf(t->name, sizeof t->name, "%s", key);
            if (p >= e || *p != '{') return ct_fail(CT_ERR_FORMAT, "%s: %s: bad entry", path, key);
            p++;
            int64_t off[2] = {-1, -1};
            int have_dt = 0;
            for (;;) {
                p = stm_ws(p, e);
                if (p < e && *p == '}') { p++; break; }
                char k2[32];
                p = stm_str(p, e, k2, sizeof k2);
                if (!p) return ct_fail(CT_ERR_FORMAT, "%s: %s: bad entry", path, key);
                p = stm_ws(p, e);
                if (p >= e || *p != ':') return ct_fail(CT_ERR_FORMAT, "%s: bad header", path);
                p = stm_ws(p + 1, e);
                if (!strcmp(k2, "dtype")) {
                    char dt[16];
                    p = stm_str(p, e, dt, sizeof dt);
                    have_dt = 1;
                    if (!strcmp(dt, "F32")) t->dtype = CT_DTYPE_F32;
                    else if (!strcmp(dt, "BF16")) t->dtype = CT_DTYPE_BF16;
                    else if (!strcmp(dt, "F16")) t->dtype = CT_DTYPE_F16;
                    else if (!strcmp(dt, "I32")) t->dtype = CT_DTYPE_I32;
                    else if (!strcmp(dt, "I64")) t->dtype = CT_DTYPE_I64;
                    else if (!strcmp(dt, "U8") || !strcmp(dt, "BOOL")) t->dtype = CT_DTYPE_U8;
                    else if (!strcmp(dt, "I8")) t->dtype = CT_DTYPE_I8;
                    else have_dt = 0;
                } else if (!strcmp(k2, "shape")) {
                    p = stm_ints(p, e, t->shape, 8, &t->ndim);
                } else if (!strcmp(k2, "data_offsets")) {
                    int n2;
                    p = stm_ints(p, e, off, 2, &n2);
                } else {
                    p = stm_skip(p, e);
                }
                if (!p) return ct_fail(CT_ERR_FORMAT, "%s: %s: bad entry", path, key);
                p = stm_ws(p, e);
                if (p < e && *p == ',') p++;
            }
            if (!have_dt || off[0] < 0 || off[1] < off[0] || (size_t)off[1] > data_len)
                return ct_fail(CT_ERR_FORMAT, "%s: %s: bad dtype or offsets", path, key);
            size_t n = ct_dtype_size(t->dtype);
            for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
            if (n != (size_t)(off[1] - off[0])) return ct_fail(CT_ERR_FORMAT, "%s: %s: size mismatch", path, key);
            t->data = data + off[0];
            t->nbytes = n;
            s->n++;
        }
        p = stm_ws(p, e);
        if (p < e && *p == ',') p++;
    }
    return CT_OK;
}

/* path: one .safetensors file or a folder (every *.safetensors in it) */
static ct_status stm_open(const char *path, stm *s) {
    memset(s, 0, sizeof *s);
    struct stat st;
    if (stat(path, &st) != 0) return ct_fail(CT_ERR_NOT_FOUND, "%s: not found", path);
    if (!S_ISDIR(st.st_mode)) return stm_add_file(s, path);
    DIR *d = opendir(path);
    if (!d) return ct_fail(CT_ERR_IO, "%s: cannot list", path);
    struct dirent *de;
    ct_status r = CT_OK;
    while ((de = readdir(d)) && r == CT_OK) {
        size_t l = strlen(de->d_name);
        if (l > 12 && !strcmp(de->d_name + l - 12, ".safetensors")) {
            char full[4096];
            snprintf(full, sizeof full, "%s/%s", path, de->d_name);
            r = stm_add_file(s, full);
        }
    }
    closedir(d);
    if (r == CT_OK && s->n == 0) r = ct_fail(CT_ERR_NOT_FOUND, "%s: no safetensors files", path);
    return r;
}

static const stm_tensor *stm_find(const stm *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].name, name)) return &s->t[i];
    return NULL;
}

static void stm_close(stm *s) {
    for (int i = 0; i < s->nmaps; i++) munmap(s->maps[i], s->map_len[i]);
    free(s->t);
    memset(s, 0, sizeof *s);
}
#endif
