/* gguf.c — strict GGUF v2/v3 reader and a streaming writer; see gguf.h.
 * Every length read from the file is checked against the bytes that remain
 * before anything is allocated or read, so a hostile count or string length
 * is an error, not an allocation of terabytes. Only f32/f16/bf16 (and the
 * small integer types) tensors are accepted: quantized blocks are refused.
 */
#include "model/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"

/* ggml type ids of the dense types we accept */
enum { GGML_F32 = 0, GGML_F16 = 1, GGML_Q8_0 = 8, GGML_I8 = 24, GGML_I16 = 25, GGML_I32 = 26, GGML_I64 = 27, GGML_F64 = 28,
       GGML_BF16 = 30 };

#define MAX_ARRAY_DEPTH 4

typedef struct g_tensor {
    ct_st_tensor t;
    uint64_t offset; /* relative to the data area */
} g_tensor;

struct ct_gguf {
    char *label;
    ct_mapping map;
    int mapped;
    uint32_t version;
    size_t alignment;
    char **keys;
    ct_gguf_value *vals;
    size_t n_kv;
    g_tensor *tensors;
    size_t n_tensors;
    size_t *by_name; /* indices sorted by name */
};

/* ---- a bounds-checked cursor ------------------------------------------- */

typedef struct cursor {
    const uint8_t *p;
    size_t len, pos;
    const char *label;
} cursor;

static ct_status need(cursor *c, uint64_t n, const char *what) {
    if (n > c->len - c->pos)
        return ct_fail(CT_ERR_FORMAT, "%s: truncated: %s needs %llu bytes at offset %zu, %zu remain", c->label, what,
                       (unsigned long long)n, c->pos, c->len - c->pos);
    return CT_OK;
}

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static ct_status rd(cursor *c, int n, uint64_t *v, const char *what) {
    CT_TRY(need(c, (uint64_t)n, what));
    *v = le(c->p + c->pos, n);
    c->pos += (size_t)n;
    return CT_OK;
}

/* A GGUF string: u64 length + bytes; returns a fresh NUL-terminated copy. */
static ct_status rd_str(cursor *c, char **out, size_t *len_out, const char *what) {
    uint64_t n;
    *out = NULL;
    CT_TRY(rd(c, 8, &n, what));
    CT_TRY(need(c, n, what));
    char *s = malloc((size_t)n + 1);
    if (!s) return ct_fail(CT_ERR_OOM, "%s: out of memory for a %llu-byte string", c->label, (unsigned long long)n);
    memcpy(s, c->p + c->pos, (size_t)n);
    s[n] = '\0';
    c->pos += (size_t)n;
    *out = s;
    if (len_out) *len_out = (size_t)n;
    return CT_OK;
}

static int scalar_size(ct_gguf_type t) {
    switch (t) {
    case CT_GGUF_U8: case CT_GGUF_I8: case CT_GGUF_BOOL: return 1;
    case CT_GGUF_U16: case CT_GGUF_I16: return 2;
    case CT_GGUF_U32: case CT_GGUF_I32: case CT_GGUF_F32: return 4;
    case CT_GGUF_U64: case CT_GGUF_I64: case CT_GGUF_F64: return 8;
    default: return 0;
    }
}

static void value_free(ct_gguf_value *v) {
    if (v->type == CT_GGUF_STRING) free((char *)v->str.s);
    if (v->type == CT_GGUF_ARRAY && v->arr.items) {
        for (uint64_t i = 0; i < v->arr.n; i++) value_free(&v->arr.items[i]);
        free(v->arr.items);
    }
    v->type = CT_GGUF_U8;
}

static void scalar_from(ct_gguf_value *v, ct_gguf_type t, const uint8_t *p) {
    v->type = t;
    uint64_t x = le(p, scalar_size(t));
    switch (t) {
    case CT_GGUF_I8: v->i = (int8_t)x; break;
    case CT_GGUF_I16: v->i = (int16_t)x; break;
    case CT_GGUF_I32: v->i = (int32_t)x; break;
    case CT_GGUF_I64: v->i = (int64_t)x; break;
    case CT_GGUF_F32: {
        uint32_t u = (uint32_t)x;
        float f;
        memcpy(&f, &u, 4);
        v->f = f;
        break;
    }
    case CT_GGUF_F64: memcpy(&v->f, &x, 8); break;
    default: v->u = x; break;
    }
}

static ct_status rd_value(cursor *c, ct_gguf_type t, ct_gguf_value *v, const char *key, int depth) {
    memset(v, 0, sizeof *v);
    if ((unsigned)t >= CT_GGUF_TYPE_COUNT)
        return ct_fail(CT_ERR_FORMAT, "%s: key '%s': unknown value type %u", c->label, key, (unsigned)t);
    if (t == CT_GGUF_STRING) {
        char *s;
        size_t n;
        CT_TRY(rd_str(c, &s, &n, key));
        v->type = t;
        v->str.s = s;
        v->str.len = n;
        return CT_OK;
    }
    if (t != CT_GGUF_ARRAY) {
        CT_TRY(need(c, (uint64_t)scalar_size(t), key));
        scalar_from(v, t, c->p + c->pos);
        if (t == CT_GGUF_BOOL && v->u > 1)
            return ct_fail(CT_ERR_FORMAT, "%s: key '%s': bool value %llu is not 0 or 1", c->label, key,
                           (unsigned long long)v->u);
        c->pos += (size_t)scalar_size(t);
        return CT_OK;
    }
    if (depth >= MAX_ARRAY_DEPTH)
        return ct_fail(CT_ERR_FORMAT, "%s: key '%s': arrays nested deeper than %d", c->label, key, MAX_ARRAY_DEPTH);
    uint64_t et, n;
    CT_TRY(rd(c, 4, &et, key));
    CT_TRY(rd(c, 8, &n, key));
    if (et >= CT_GGUF_TYPE_COUNT)
        return ct_fail(CT_ERR_FORMAT, "%s: key '%s': unknown array element type %llu", c->label, key,
                       (unsigned long long)et);
    v->type = CT_GGUF_ARRAY;
    v->arr.elem = (ct_gguf_type)et;
    if (et != CT_GGUF_STRING && et != CT_GGUF_ARRAY) {
        int sz = scalar_size((ct_gguf_type)et);
        if (n > (c->len - c->pos) / (uint64_t)sz)
            return ct_fail(CT_ERR_FORMAT, "%s: key '%s': array of %llu elements runs past the end of the file", c->label,
                           key, (unsigned long long)n);
        v->arr.n = n;
        v->arr.raw = c->p + c->pos;
        if (et == CT_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (v->arr.raw[i] > 1)
                    return ct_fail(CT_ERR_FORMAT, "%s: key '%s': bool element %llu is not 0 or 1", c->label, key,
                                   (unsigned long long)i);
        c->pos += (size_t)(n * (uint64_t)sz);
        return CT_OK;
    }
    /* each string/array element takes at least 8 bytes (its length/count) */
    if (n > (c->len - c->pos) / 8)
        return ct_fail(CT_ERR_FORMAT, "%s: key '%s': array of %llu elements runs past the end of the file", c->label, key,
                       (unsigned long long)n);
    v->arr.items = calloc(n ? (size_t)n : 1, sizeof *v->arr.items);
    if (!v->arr.items) return ct_fail(CT_ERR_OOM, "%s: key '%s': out of memory", c->label, key);
    for (uint64_t i = 0; i < n; i++) {
        v->arr.n = i + 1; /* so value_free frees what was read */
        /* a nested array reads its own element type and count */
        CT_TRY(rd_value(c, (ct_gguf_type)et, &v->arr.items[i], key, depth + 1));
    }
    v->arr.n = n;
    return CT_OK;
}

/* ggml's names for its type ids (ggml.h), for messages about refused types */
static const char *ggml_type_name(uint64_t t) {
    static const char *const names[] = {"F32",    "F16",     "Q4_0",    "Q4_1",  "Q4_2",   "Q4_3",   "Q5_0",
                                        "Q5_1",   "Q8_0",    "Q8_1",    "Q2_K",  "Q3_K",   "Q4_K",   "Q5_K",
                                        "Q6_K",   "Q8_K",    "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
                                        "IQ3_S",  "IQ2_S",   "IQ4_XS",  "I8",    "I16",    "I32",    "I64",
                                        "F64",    "IQ1_M",   "BF16"};
    if (t == 4 || t == 5) return "removed from ggml";
    return t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

static ct_status dtype_from_ggml(uint64_t t, ct_dtype *out) {
    switch (t) {
    case GGML_F32: *out = CT_DTYPE_F32; return CT_OK;
    case GGML_F16: *out = CT_DTYPE_F16; return CT_OK;
    case GGML_BF16: *out = CT_DTYPE_BF16; return CT_OK;
    case GGML_Q8_0: *out = CT_DTYPE_Q8_0; return CT_OK;
    case GGML_I8: *out = CT_DTYPE_I8; return CT_OK;
    case GGML_I32: *out = CT_DTYPE_I32; return CT_OK;
    case GGML_I64: *out = CT_DTYPE_I64; return CT_OK;
    default: return CT_ERR_UNSUPPORTED;
    }
}

static int cmp_by_name(const void *a, const void *b, void *ctx) {
    const ct_gguf *g = ctx;
    return strcmp(g->tensors[*(const size_t *)a].t.name, g->tensors[*(const size_t *)b].t.name);
}
static int cmp_by_offset(const void *a, const void *b) {
    const g_tensor *x = *(const g_tensor *const *)a, *y = *(const g_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static ct_status parse(ct_gguf *g) {
    cursor c = {g->map.data, g->map.size, 0, g->label};
    uint64_t ver, nt, nkv;
    if (c.len < 4 || memcmp(c.p, "GGUF", 4) != 0)
        return ct_fail(CT_ERR_FORMAT, "%s: not a GGUF file (no 'GGUF' magic)", g->label);
    c.pos = 4;
    CT_TRY(rd(&c, 4, &ver, "version"));
    if (ver != 2 && ver != 3)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: GGUF version %llu is not supported (2 or 3)", g->label,
                       (unsigned long long)ver);
    g->version = (uint32_t)ver;
    CT_TRY(rd(&c, 8, &nt, "tensor count"));
    CT_TRY(rd(&c, 8, &nkv, "metadata count"));
    /* a key/value takes >= 8 + 4 + 1 bytes, a tensor info >= 8 + 4 + 4 + 8 */
    if (nkv > (c.len - c.pos) / 13)
        return ct_fail(CT_ERR_FORMAT, "%s: %llu metadata entries cannot fit in the file", g->label, (unsigned long long)nkv);
    if (nt > (c.len - c.pos) / 24)
        return ct_fail(CT_ERR_FORMAT, "%s: %llu tensor infos cannot fit in the file", g->label, (unsigned long long)nt);
    g->keys = calloc(nkv ? (size_t)nkv : 1, sizeof *g->keys);
    g->vals = calloc(nkv ? (size_t)nkv : 1, sizeof *g->vals);
    if (!g->keys || !g->vals) return ct_fail(CT_ERR_OOM, "%s: out of memory", g->label);
    g->alignment = CT_GGUF_DEFAULT_ALIGNMENT;
    for (uint64_t i = 0; i < nkv; i++) {
        char *k;
        size_t kl;
        uint64_t t;
        CT_TRY(rd_str(&c, &k, &kl, "metadata key"));
        g->keys[i] = k;
        g->n_kv = (size_t)i + 1;
        if (kl == 0) return ct_fail(CT_ERR_FORMAT, "%s: metadata key %llu is empty", g->label, (unsigned long long)i);
        if (memchr(k, 0, kl))
            return ct_fail(CT_ERR_FORMAT, "%s: metadata key %llu holds a NUL byte", g->label, (unsigned long long)i);
        for (uint64_t j = 0; j < i; j++)
            if (strcmp(g->keys[j], k) == 0) return ct_fail(CT_ERR_FORMAT, "%s: metadata key '%s' appears twice", g->label, k);
        CT_TRY(rd(&c, 4, &t, k));
        if (t >= CT_GGUF_TYPE_COUNT)
            return ct_fail(CT_ERR_FORMAT, "%s: key '%s': unknown value type %llu", g->label, k, (unsigned long long)t);
        CT_TRY(rd_value(&c, (ct_gguf_type)t, &g->vals[i], k, 0));
    }
    const ct_gguf_value *al = ct_gguf_find(g, "general.alignment");
    if (al) {
        if (al->type != CT_GGUF_U32 && al->type != CT_GGUF_U64 && al->type != CT_GGUF_I32)
            return ct_fail(CT_ERR_FORMAT, "%s: general.alignment is not an integer", g->label);
        uint64_t a = al->type == CT_GGUF_I32 ? (uint64_t)al->i : al->u;
        if (al->type == CT_GGUF_I32 && al->i < 0) a = 0;
        if (a == 0 || (a & (a - 1)) || a > 65536)
            return ct_fail(CT_ERR_FORMAT, "%s: general.alignment %llu is not a power of two up to 65536", g->label,
                           (unsigned long long)a);
        g->alignment = (size_t)a;
    }
    g->tensors = calloc(nt ? (size_t)nt : 1, sizeof *g->tensors);
    if (!g->tensors) return ct_fail(CT_ERR_OOM, "%s: out of memory", g->label);
    for (uint64_t i = 0; i < nt; i++) {
        g_tensor *gt = &g->tensors[i];
        char *name;
        size_t nl;
        CT_TRY(rd_str(&c, &name, &nl, "tensor name"));
        gt->t.name = name;
        g->n_tensors = (size_t)i + 1;
        if (nl == 0 || memchr(name, 0, nl))
            return ct_fail(CT_ERR_FORMAT, "%s: tensor %llu has an empty name or one with a NUL byte", g->label,
                           (unsigned long long)i);
        uint64_t nd, type, off;
        CT_TRY(rd(&c, 4, &nd, name));
        if (nd == 0 || nd > CT_GGUF_MAX_DIMS)
            return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': %llu dimensions (1..%d allowed)", g->label, name,
                           (unsigned long long)nd, CT_GGUF_MAX_DIMS);
        gt->t.ndim = (int)nd;
        uint64_t numel = 1;
        const uint64_t lim = (uint64_t)1 << 61;
        for (uint64_t d = 0; d < nd; d++) {
            uint64_t ne;
            CT_TRY(rd(&c, 8, &ne, name));
            if (ne > (uint64_t)INT64_MAX || (ne && numel > lim / ne))
                return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': shape overflows", g->label, name);
            numel *= ne;
            gt->t.shape[nd - 1 - d] = (int64_t)ne; /* torch order */
        }
        CT_TRY(rd(&c, 4, &type, name));
        ct_status ds = dtype_from_ggml(type, &gt->t.dtype);
        if (ds != CT_OK) /* of the quantized types only Q8_0 has a compute path (the CPU's) */
            return ct_fail(CT_ERR_UNSUPPORTED,
                           "%s: tensor '%s' has ggml type %llu (%s): the supported tensor types are F32, F16, "
                           "BF16 and Q8_0 (and I8, I32, I64); convert the safetensors checkpoint with "
                           "cohere-transcribe-convert --dtype q8_0, f16, bf16 or f32",
                           g->label, name, (unsigned long long)type, ggml_type_name(type));
        /* Q8_0 blocks run along ne[0] (the row): 32 elements per block */
        if (gt->t.dtype == CT_DTYPE_Q8_0 && gt->t.shape[nd - 1] % CT_Q8_0_BLOCK != 0)
            return ct_fail(CT_ERR_FORMAT,
                           "%s: tensor '%s' is Q8_0 with rows of %lld elements (ne[0]); Q8_0 needs a multiple of 32",
                           g->label, name, (long long)gt->t.shape[nd - 1]);
        CT_TRY(rd(&c, 8, &off, name));
        if (off % g->alignment)
            return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': offset %llu is not a multiple of the alignment %zu", g->label,
                           name, (unsigned long long)off, g->alignment);
        gt->offset = off;
        gt->t.numel = (int64_t)numel;
        gt->t.nbytes = ct_dtype_nbytes(gt->t.dtype, (size_t)numel);
    }
    size_t data_start = c.pos + (g->alignment - c.pos % g->alignment) % g->alignment;
    if (data_start > c.len) {
        if (nt == 0) return CT_OK; /* no tensors: the data area may be absent */
        return ct_fail(CT_ERR_FORMAT, "%s: the data area would start at %zu, past the end of the file (%zu bytes)",
                       g->label, data_start, c.len);
    }
    uint64_t data_len = c.len - data_start;
    for (size_t i = 0; i < g->n_tensors; i++) {
        g_tensor *gt = &g->tensors[i];
        if (gt->offset > data_len || gt->t.nbytes > data_len - gt->offset)
            return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': bytes [%llu, %llu) lie outside the data area of %llu bytes",
                           g->label, gt->t.name, (unsigned long long)gt->offset,
                           (unsigned long long)(gt->offset + gt->t.nbytes), (unsigned long long)data_len);
        gt->t.data = c.p + data_start + gt->offset;
    }
    /* names unique, spans disjoint */
    g->by_name = malloc((g->n_tensors ? g->n_tensors : 1) * sizeof *g->by_name);
    g_tensor **ord = malloc((g->n_tensors ? g->n_tensors : 1) * sizeof *ord);
    if (!g->by_name || !ord) {
        free(ord);
        return ct_fail(CT_ERR_OOM, "%s: out of memory", g->label);
    }
    for (size_t i = 0; i < g->n_tensors; i++) g->by_name[i] = i;
    qsort_r(g->by_name, g->n_tensors, sizeof *g->by_name, cmp_by_name, g); /* glibc */
    ct_status s = CT_OK;
    for (size_t i = 1; i < g->n_tensors && s == CT_OK; i++)
        if (strcmp(g->tensors[g->by_name[i]].t.name, g->tensors[g->by_name[i - 1]].t.name) == 0)
            s = ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' appears twice", g->label, g->tensors[g->by_name[i]].t.name);
    size_t m = 0;
    for (size_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].t.nbytes) ord[m++] = &g->tensors[i];
    qsort(ord, m, sizeof *ord, cmp_by_offset);
    for (size_t i = 1; i < m && s == CT_OK; i++)
        if (ord[i]->offset < ord[i - 1]->offset + ord[i - 1]->t.nbytes)
            s = ct_fail(CT_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap", g->label, ord[i - 1]->t.name, ord[i]->t.name);
    free(ord);
    return s;
}

static ct_status finish_open(ct_gguf *g, ct_gguf **out) {
    ct_status s = parse(g);
    if (s != CT_OK) {
        ct_gguf_free(g);
        return s;
    }
    *out = g;
    return CT_OK;
}

ct_status ct_gguf_open_buffer(const void *buf, size_t len, const char *label, ct_gguf **out) {
    *out = NULL;
    ct_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->label = strdup(label ? label : "<buffer>"))) {
        free(g);
        return ct_fail(CT_ERR_OOM, "gguf: out of memory");
    }
    g->map.data = buf;
    g->map.size = len;
    return finish_open(g, out);
}

ct_status ct_gguf_open(const char *path, ct_gguf **out) {
    *out = NULL;
    ct_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->label = strdup(path))) {
        free(g);
        return ct_fail(CT_ERR_OOM, "%s: out of memory", path);
    }
    ct_status s = ct_fs_map(path, &g->map);
    if (s != CT_OK) {
        ct_gguf_free(g);
        return s;
    }
    g->mapped = 1;
    return finish_open(g, out);
}

void ct_gguf_free(ct_gguf *g) {
    if (!g) return;
    for (size_t i = 0; i < g->n_kv; i++) {
        free(g->keys[i]);
        value_free(&g->vals[i]);
    }
    free(g->keys);
    free(g->vals);
    for (size_t i = 0; i < g->n_tensors; i++) free((char *)g->tensors[i].t.name);
    free(g->tensors);
    free(g->by_name);
    if (g->mapped) ct_fs_unmap(&g->map);
    free(g->label);
    free(g);
}

uint32_t ct_gguf_version(const ct_gguf *g) { return g->version; }
size_t ct_gguf_alignment(const ct_gguf *g) { return g->alignment; }
size_t ct_gguf_kv_count(const ct_gguf *g) { return g->n_kv; }
const char *ct_gguf_kv_key(const ct_gguf *g, size_t i) { return i < g->n_kv ? g->keys[i] : NULL; }
const ct_gguf_value *ct_gguf_kv_value(const ct_gguf *g, size_t i) { return i < g->n_kv ? &g->vals[i] : NULL; }

const ct_gguf_value *ct_gguf_find(const ct_gguf *g, const char *key) {
    for (size_t i = 0; i < g->n_kv; i++)
        if (g->keys[i] && strcmp(g->keys[i], key) == 0) return &g->vals[i];
    return NULL;
}

ct_status ct_gguf_get_int(const ct_gguf *g, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    const ct_gguf_value *v = ct_gguf_find(g, key);
    if (!v) return ct_fail(CT_ERR_NOT_FOUND, "%s: metadata '%s' is missing", g->label, key);
    int64_t x;
    switch (v->type) {
    case CT_GGUF_U8: case CT_GGUF_U16: case CT_GGUF_U32: case CT_GGUF_U64:
        if (v->u > (uint64_t)INT64_MAX) return ct_fail(CT_ERR_FORMAT, "%s: metadata '%s' is out of range", g->label, key);
        x = (int64_t)v->u;
        break;
    case CT_GGUF_I8: case CT_GGUF_I16: case CT_GGUF_I32: case CT_GGUF_I64: x = v->i; break;
    default: return ct_fail(CT_ERR_FORMAT, "%s: metadata '%s' is not an integer", g->label, key);
    }
    if (x < lo || x > hi)
        return ct_fail(CT_ERR_FORMAT, "%s: metadata '%s' = %lld is out of range [%lld, %lld]", g->label, key,
                       (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return CT_OK;
}

ct_status ct_gguf_get_float(const ct_gguf *g, const char *key, double *out) {
    const ct_gguf_value *v = ct_gguf_find(g, key);
    if (!v) return ct_fail(CT_ERR_NOT_FOUND, "%s: metadata '%s' is missing", g->label, key);
    if (v->type == CT_GGUF_F32 || v->type == CT_GGUF_F64) *out = v->f;
    else if (v->type == CT_GGUF_U32 || v->type == CT_GGUF_U64 || v->type == CT_GGUF_U16 || v->type == CT_GGUF_U8)
        *out = (double)v->u;
    else if (v->type == CT_GGUF_I32 || v->type == CT_GGUF_I64 || v->type == CT_GGUF_I16 || v->type == CT_GGUF_I8)
        *out = (double)v->i;
    else return ct_fail(CT_ERR_FORMAT, "%s: metadata '%s' is not a number", g->label, key);
    return CT_OK;
}

ct_status ct_gguf_get_str(const ct_gguf *g, const char *key, const char **out) {
    const ct_gguf_value *v = ct_gguf_find(g, key);
    if (!v) return ct_fail(CT_ERR_NOT_FOUND, "%s: metadata '%s' is missing", g->label, key);
    if (v->type != CT_GGUF_STRING) return ct_fail(CT_ERR_FORMAT, "%s: metadata '%s' is not a string", g->label, key);
    *out = v->str.s;
    return CT_OK;
}

double ct_gguf_array_num(const ct_gguf_value *v, uint64_t i) {
    if (v->type != CT_GGUF_ARRAY || !v->arr.raw || i >= v->arr.n) return 0;
    ct_gguf_value x;
    int sz = scalar_size(v->arr.elem);
    scalar_from(&x, v->arr.elem, v->arr.raw + i * (uint64_t)sz);
    switch (x.type) {
    case CT_GGUF_F32: case CT_GGUF_F64: return x.f;
    case CT_GGUF_I8: case CT_GGUF_I16: case CT_GGUF_I32: case CT_GGUF_I64: return (double)x.i;
    default: return (double)x.u;
    }
}

size_t ct_gguf_tensor_count(const ct_gguf *g) { return g->n_tensors; }
const ct_st_tensor *ct_gguf_tensor_at(const ct_gguf *g, size_t i) { return i < g->n_tensors ? &g->tensors[i].t : NULL; }

const ct_st_tensor *ct_gguf_find_tensor(const ct_gguf *g, const char *name) {
    size_t lo = 0, hi = g->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->tensors[g->by_name[mid]].t.name, name);
        if (c == 0) return &g->tensors[g->by_name[mid]].t;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}
