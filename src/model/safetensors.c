/* safetensors.c — strict safetensors reader (single file and sharded index)
 * and a streaming writer; see safetensors.h. JSON goes through jansson with
 * duplicate keys rejected, so a header with a name twice is an error rather
 * than a silent last-one-wins. Nothing here converts or copies tensor data.
 */
#include "model/safetensors.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "core/str.h"

/* ---- reader ------------------------------------------------------------ */

typedef struct st_entry {
    ct_st_tensor t; /* first member: ct_st_at hands out &entry->t */
    size_t file;    /* index into files */
    uint64_t begin, end;
} st_entry;

typedef struct st_file {
    char *label; /* path, or the caller's label for buffers */
    ct_mapping map;
    int mapped;
} st_file;

struct ct_safetensors {
    st_file *files;
    size_t n_files;
    st_entry *entries;
    size_t n, cap;
    char **meta_keys, **meta_vals;
    size_t n_meta;
};

ct_status ct_st_parse_dtype(const char *s, ct_dtype *out) {
    for (int d = 0; d < CT_DTYPE_COUNT; d++) {
        if (d == CT_DTYPE_Q8 || d == CT_DTYPE_Q8_0) continue; /* not safetensors types */
        if (strcmp(s, ct_dtype_name((ct_dtype)d)) == 0) {
            *out = (ct_dtype)d;
            return CT_OK;
        }
    }
    return ct_fail(CT_ERR_FORMAT, "unknown dtype '%s'", s);
}

static uint64_t read_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static ct_status add_metadata(ct_safetensors *st, const char *key, const char *val) {
    for (size_t i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta_keys[i], key) == 0) return CT_OK; /* first shard wins */
    char **k = realloc(st->meta_keys, (st->n_meta + 1) * sizeof *k);
    if (!k) return ct_fail(CT_ERR_OOM, "safetensors metadata: out of memory");
    st->meta_keys = k;
    char **v = realloc(st->meta_vals, (st->n_meta + 1) * sizeof *v);
    if (!v) return ct_fail(CT_ERR_OOM, "safetensors metadata: out of memory");
    st->meta_vals = v;
    k[st->n_meta] = strdup(key);
    v[st->n_meta] = strdup(val);
    if (!k[st->n_meta] || !v[st->n_meta]) {
        free(k[st->n_meta]);
        free(v[st->n_meta]);
        return ct_fail(CT_ERR_OOM, "safetensors metadata: out of memory");
    }
    st->n_meta++;
    return CT_OK;
}

static ct_status parse_metadata(ct_safetensors *st, const char *label, json_t *m) {
    if (!json_is_object(m)) return ct_fail(CT_ERR_FORMAT, "%s: __metadata__ is not an object", label);
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) {
        if (!json_is_string(v))
            return ct_fail(CT_ERR_FORMAT, "%s: __metadata__ value of '%s' is not a string", label, k);
        CT_TRY(add_metadata(st, k, json_string_value(v)));
    }
    return CT_OK;
}

/* One tensor entry of a header: dtype, shape, data_offsets, all checked. */
static ct_status parse_entry(const char *label, const char *name, json_t *e, uint64_t data_len,
                             st_entry *out) {
    memset(out, 0, sizeof *out);
    if (name[0] == '\0') return ct_fail(CT_ERR_FORMAT, "%s: a tensor has an empty name", label);
    if (!json_is_object(e)) return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': entry is not an object", label, name);
    json_t *jd = json_object_get(e, "dtype");
    if (!jd) return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': missing dtype", label, name);
    if (!json_is_string(jd)) return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': dtype is not a string", label, name);
    if (ct_st_parse_dtype(json_string_value(jd), &out->t.dtype) != CT_OK) {
        /* dtypes the format defines but this reader does not handle */
        static const char *const other[] = {"BOOL", "U16", "I16", "U32", "U64", "F64", "F8_E4M3", "F8_E5M2",
                                            "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64"};
        for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
            if (strcmp(json_string_value(jd), other[i]) == 0)
                return ct_fail(CT_ERR_UNSUPPORTED, "%s: tensor '%s': dtype %s is not supported", label, name,
                               other[i]);
        return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%s'", label, name, json_string_value(jd));
    }

    json_t *js = json_object_get(e, "shape");
    if (!js) return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': missing shape", label, name);
    if (!json_is_array(js)) return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': shape is not an array", label, name);
    size_t nd = json_array_size(js);
    if (nd > CT_ST_MAX_DIMS)
        return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': %zu dimensions exceed the limit of %d", label,
                       name, nd, CT_ST_MAX_DIMS);
    out->t.ndim = (int)nd;
    /* numel * itemsize must fit below 2^62: far beyond any file, never overflows. */
    uint64_t numel = 1;
    const uint64_t lim = (uint64_t)1 << 62;
    for (size_t i = 0; i < nd; i++) {
        json_t *d = json_array_get(js, i);
        if (!json_is_integer(d))
            return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': shape[%zu] is not an integer", label, name, i);
        json_int_t v = json_integer_value(d);
        if (v < 0) return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': shape[%zu] is negative (%lld)", label, name, i, (long long)v);
        out->t.shape[i] = v;
        if (v != 0 && numel > lim / (uint64_t)v)
            return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': shape overflows", label, name);
        numel *= (uint64_t)v;
    }
    uint64_t isz = ct_dtype_size(out->t.dtype);
    if (numel > lim / isz) return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': shape overflows", label, name);
    uint64_t want = numel * isz;

    json_t *jo = json_object_get(e, "data_offsets");
    if (!jo) return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': missing data_offsets", label, name);
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_is_integer(json_array_get(jo, 0)) ||
        !json_is_integer(json_array_get(jo, 1)))
        return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s': data_offsets is not a pair of integers", label, name);
    json_int_t b = json_integer_value(json_array_get(jo, 0));
    json_int_t en = json_integer_value(json_array_get(jo, 1));
    if (b < 0 || en < b || (uint64_t)en > data_len)
        return ct_fail(CT_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets [%lld, %lld) lie outside the data area of %llu bytes",
                       label, name, (long long)b, (long long)en, (unsigned long long)data_len);
    if ((uint64_t)(en - b) != want)
        return ct_fail(CT_ERR_FORMAT,
                       "%s: tensor '%s': shape × item size = %llu bytes but data_offsets span %llu bytes",
                       label, name, (unsigned long long)want, (unsigned long long)(en - b));
    out->begin = (uint64_t)b;
    out->end = (uint64_t)en;
    out->t.numel = (int64_t)numel;
    out->t.nbytes = (size_t)want;
    return CT_OK;
}

static int cmp_span(const void *a, const void *b) {
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static ct_status grow(ct_safetensors *st, size_t extra) {
    if (st->n + extra <= st->cap) return CT_OK;
    size_t cap = st->cap ? st->cap : 16;
    while (cap < st->n + extra) cap *= 2;
    st_entry *e = realloc(st->entries, cap * sizeof *e);
    if (!e) return ct_fail(CT_ERR_OOM, "safetensors: out of memory for %zu tensors", cap);
    st->entries = e;
    st->cap = cap;
    return CT_OK;
}

/* Parse the header of files[fi] and append its tensors. */
static ct_status parse_file(ct_safetensors *st, size_t fi) {
    const st_file *f = &st->files[fi];
    const char *label = f->label;
    const uint8_t *p = f->map.data;
    size_t len = f->map.size;
    if (len < 8)
        return ct_fail(CT_ERR_FORMAT, "%s: file is %zu bytes, shorter than the 8-byte header length", label, len);
    uint64_t hl = read_le64(p);
    if (hl > CT_ST_MAX_HEADER)
        return ct_fail(CT_ERR_FORMAT, "%s: header length %llu exceeds the cap of %llu bytes", label,
                       (unsigned long long)hl, (unsigned long long)CT_ST_MAX_HEADER);
    if (hl > len - 8)
        return ct_fail(CT_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%zu bytes)",
                       label, (unsigned long long)hl, len);
    json_error_t jerr;
    json_t *root = json_loadb((const char *)p + 8, (size_t)hl, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return ct_fail(CT_ERR_FORMAT, "%s: header is not valid JSON: %s (line %d, column %d)", label,
                       jerr.text, jerr.line, jerr.column);
    ct_status s = CT_OK;
    if (!json_is_object(root)) {
        s = ct_fail(CT_ERR_FORMAT, "%s: header is not a JSON object", label);
        goto done;
    }
    uint64_t data_len = (uint64_t)len - 8 - hl;
    const uint8_t *data = p + 8 + hl;
    size_t first = st->n;
    if ((s = grow(st, json_object_size(root))) != CT_OK) goto done;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (strcmp(key, "__metadata__") == 0) {
            if ((s = parse_metadata(st, label, val)) != CT_OK) goto done;
            continue;
        }
        st_entry *e = &st->entries[st->n];
        if ((s = parse_entry(label, key, val, data_len, e)) != CT_OK) goto done;
        e->t.name = strdup(key);
        if (!e->t.name) {
            s = ct_fail(CT_ERR_OOM, "%s: out of memory", label);
            goto done;
        }
        e->file = fi;
        e->t.data = data + e->begin;
        st->n++;
    }
    /* Overlap check over this file's spans, sorted by start; empty tensors
     * occupy nothing and cannot overlap. */
    size_t k = st->n - first;
    if (k > 1) {
        st_entry **ord = malloc(k * sizeof *ord);
        if (!ord) {
            s = ct_fail(CT_ERR_OOM, "%s: out of memory", label);
            goto done;
        }
        size_t m = 0;
        for (size_t i = first; i < st->n; i++)
            if (st->entries[i].end > st->entries[i].begin) ord[m++] = &st->entries[i];
        qsort(ord, m, sizeof *ord, cmp_span);
        for (size_t i = 1; i < m; i++) {
            if (ord[i]->begin < ord[i - 1]->end) {
                s = ct_fail(CT_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap (bytes %llu..%llu and %llu..%llu)",
                            label, ord[i - 1]->t.name, ord[i]->t.name,
                            (unsigned long long)ord[i - 1]->begin, (unsigned long long)ord[i - 1]->end,
                            (unsigned long long)ord[i]->begin, (unsigned long long)ord[i]->end);
                break;
            }
        }
        free(ord);
    }
done:
    json_decref(root);
    return s;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const st_entry *)a)->t.name, ((const st_entry *)b)->t.name);
}

/* Sort by name and refuse a name that occurs twice (across shards). */
static ct_status finish_index(ct_safetensors *st) {
    if (st->n > 1) qsort(st->entries, st->n, sizeof *st->entries, cmp_name);
    for (size_t i = 1; i < st->n; i++) {
        if (strcmp(st->entries[i].t.name, st->entries[i - 1].t.name) == 0)
            return ct_fail(CT_ERR_FORMAT, "tensor '%s' appears twice (in %s and %s)", st->entries[i].t.name,
                           st->files[st->entries[i - 1].file].label, st->files[st->entries[i].file].label);
    }
    return CT_OK;
}

static ct_status new_st(size_t n_files, ct_safetensors **out) {
    *out = NULL;
    ct_safetensors *st = calloc(1, sizeof *st);
    if (!st) return ct_fail(CT_ERR_OOM, "safetensors: out of memory");
    st->files = calloc(n_files ? n_files : 1, sizeof *st->files);
    if (!st->files) {
        free(st);
        return ct_fail(CT_ERR_OOM, "safetensors: out of memory");
    }
    *out = st;
    return CT_OK;
}

/* The common end of opening one file (s: how its setup went): parse it,
 * index it, and hand st out or free it. */
static ct_status finish_single(ct_safetensors *st, ct_status s, ct_safetensors **out) {
    if (s == CT_OK) s = parse_file(st, 0);
    if (s == CT_OK) s = finish_index(st);
    if (s != CT_OK) {
        ct_st_free(st);
        return s;
    }
    *out = st;
    return CT_OK;
}

ct_status ct_st_open_buffer(const void *buf, size_t len, const char *label, ct_safetensors **out) {
    *out = NULL;
    ct_safetensors *st;
    CT_TRY(new_st(1, &st));
    st->n_files = 1;
    st->files[0].label = strdup(label ? label : "<buffer>");
    st->files[0].map.data = buf;
    st->files[0].map.size = len;
    ct_status s = st->files[0].label ? CT_OK : ct_fail(CT_ERR_OOM, "safetensors: out of memory");
    return finish_single(st, s, out);
}

static ct_status open_single(const char *path, ct_safetensors **out) {
    *out = NULL;
    ct_safetensors *st;
    CT_TRY(new_st(1, &st));
    st->n_files = 1;
    st_file *f = &st->files[0];
    ct_status s = CT_OK;
    if (!(f->label = strdup(path))) s = ct_fail(CT_ERR_OOM, "safetensors: out of memory");
    if (s == CT_OK && (s = ct_fs_map(path, &f->map)) == CT_OK) f->mapped = 1;
    return finish_single(st, s, out);
}

static ct_status open_index(const char *path, ct_safetensors **out) {
    *out = NULL;
    char *text = NULL;
    size_t tlen = 0;
    CT_TRY(ct_fs_read_all(path, (size_t)CT_ST_MAX_HEADER, &text, &tlen));
    ct_status s = ct_st_open_index_buffer(text, tlen, path, out);
    free(text);
    return s;
}

ct_status ct_st_open_index_buffer(const char *text, size_t tlen, const char *path, ct_safetensors **out) {
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, tlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return ct_fail(CT_ERR_FORMAT, "%s: not valid JSON: %s (line %d, column %d)", path, jerr.text,
                       jerr.line, jerr.column);
    ct_safetensors *st = NULL;
    ct_status s = CT_OK;
    json_t *wm = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(root)) {
        s = ct_fail(CT_ERR_FORMAT, "%s: not a JSON object", path);
        goto done;
    }
    if (!json_is_object(wm)) {
        s = ct_fail(CT_ERR_FORMAT, "%s: missing or ill-typed weight_map", path);
        goto done;
    }
    /* Unique shard names in order of first appearance. */
    size_t nw = json_object_size(wm);
    const char **shards = calloc(nw ? nw : 1, sizeof *shards);
    if (!shards) {
        s = ct_fail(CT_ERR_OOM, "%s: out of memory", path);
        goto done;
    }
    size_t ns = 0;
    const char *key;
    json_t *val;
    json_object_foreach(wm, key, val) {
        if (!json_is_string(val)) {
            s = ct_fail(CT_ERR_FORMAT, "%s: weight_map entry '%s' is not a string", path, key);
            break;
        }
        /* A shard is a relative path under the index's directory, subfolders
         * allowed, by the rule the Hub client downloads it by (core/fs.h). */
        const char *fn = json_string_value(val);
        const char *why = json_string_length(val) != strlen(fn) ? "contains a NUL byte" : ct_path_rel_problem(fn);
        if (why) {
            s = ct_fail(CT_ERR_FORMAT, "%s: weight_map entry '%s' names '%s', not a path inside the index's directory (%s)",
                        path, key, fn, why);
            break;
        }
        size_t j = 0;
        while (j < ns && strcmp(shards[j], fn) != 0) j++;
        if (j == ns) shards[ns++] = fn;
    }
    if (s == CT_OK && ns == 0) s = ct_fail(CT_ERR_FORMAT, "%s: weight_map is empty", path);
    if (s == CT_OK) s = new_st(ns, &st);
    /* Map and parse each shard once. */
    char dir[PATH_MAX];
    if (s == CT_OK) {
        size_t dl = strlen(path);
        while (dl > 0 && path[dl - 1] != '/') dl--;
        if (dl >= sizeof dir) {
            s = ct_fail(CT_ERR_LIMIT, "%s: path too long", path);
        } else {
            memcpy(dir, path, dl);
            dir[dl] = '\0';
            if (dl == 0) strcpy(dir, "./");
        }
    }
    for (size_t i = 0; s == CT_OK && i < ns; i++) {
        char sp[PATH_MAX];
        int n = snprintf(sp, sizeof sp, "%s%s", dir, shards[i]);
        if (n < 0 || (size_t)n >= sizeof sp) {
            s = ct_fail(CT_ERR_LIMIT, "%s: shard path too long", path);
            break;
        }
        st_file *f = &st->files[i];
        st->n_files = i + 1;
        if (!(f->label = strdup(sp))) {
            s = ct_fail(CT_ERR_OOM, "%s: out of memory", path);
            break;
        }
        if ((s = ct_fs_map(sp, &f->map)) != CT_OK) {
            s = ct_fail_wrap(s, "%s: shard '%s' listed in the index", path, shards[i]);
            break;
        }
        f->mapped = 1;
        s = parse_file(st, i);
    }
    if (s == CT_OK) s = finish_index(st);
    /* The map and the shards must agree both ways. */
    if (s == CT_OK) {
        json_object_foreach(wm, key, val) {
            const ct_st_tensor *t = ct_st_find(st, key);
            if (!t) {
                s = ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' is mapped to shard '%s', which does not contain it",
                            path, key, json_string_value(val));
                break;
            }
        }
    }
    for (size_t i = 0; s == CT_OK && i < st->n; i++) {
        const st_entry *e = &st->entries[i];
        json_t *m = json_object_get(wm, e->t.name);
        const char *base = st->files[e->file].label + strlen(dir); /* the shard name as the index gives it */
        if (!m)
            s = ct_fail(CT_ERR_FORMAT, "%s: shard '%s' holds tensor '%s', which the index does not list", path,
                        base, e->t.name);
        else if (strcmp(json_string_value(m), base) != 0)
            s = ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' is mapped to '%s' but stored in '%s'", path, e->t.name,
                        json_string_value(m), base);
    }
    free(shards);
done:
    json_decref(root);
    if (s != CT_OK) {
        ct_st_free(st);
        return s;
    }
    *out = st;
    return CT_OK;
}

ct_status ct_st_open(const char *path, ct_safetensors **out) {
    *out = NULL;
    if (!path || !*path) return ct_fail(CT_ERR_INVALID_ARG, "safetensors: empty path");
    if (ct_fs_is_dir(path)) {
        char p[PATH_MAX];
        CT_TRY(ct_path_join(p, sizeof p, path, "model.safetensors.index.json"));
        if (ct_fs_exists(p)) return open_index(p, out); /* a FIFO or device there is refused by the read */
        CT_TRY(ct_path_join(p, sizeof p, path, "model.safetensors"));
        if (ct_fs_exists(p)) return open_single(p, out);
        return ct_fail(CT_ERR_NOT_FOUND, "%s: holds neither model.safetensors nor model.safetensors.index.json",
                       path);
    }
    if (ct_str_ends_with(path, ".json")) return open_index(path, out);
    return open_single(path, out);
}

void ct_st_free(ct_safetensors *st) {
    if (!st) return;
    for (size_t i = 0; i < st->n; i++) free((char *)st->entries[i].t.name);
    free(st->entries);
    for (size_t i = 0; i < st->n_files; i++) {
        if (st->files[i].mapped) ct_fs_unmap(&st->files[i].map);
        free(st->files[i].label);
    }
    free(st->files);
    for (size_t i = 0; i < st->n_meta; i++) {
        free(st->meta_keys[i]);
        free(st->meta_vals[i]);
    }
    free(st->meta_keys);
    free(st->meta_vals);
    free(st);
}

size_t ct_st_count(const ct_safetensors *st) { return st ? st->n : 0; }

const ct_st_tensor *ct_st_at(const ct_safetensors *st, size_t i) {
    return st && i < st->n ? &st->entries[i].t : NULL;
}

const ct_st_tensor *ct_st_find(const ct_safetensors *st, const char *name) {
    if (!st || !name) return NULL;
    size_t lo = 0, hi = st->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->entries[mid].t.name, name);
        if (c == 0) return &st->entries[mid].t;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const char *ct_st_metadata(const ct_safetensors *st, const char *key) {
    for (size_t i = 0; st && i < st->n_meta; i++)
        if (strcmp(st->meta_keys[i], key) == 0) return st->meta_vals[i];
    return NULL;
}

size_t ct_st_metadata_count(const ct_safetensors *st) { return st ? st->n_meta : 0; }

void ct_st_metadata_at(const ct_safetensors *st, size_t i, const char **key, const char **value) {
    *key = (st && i < st->n_meta) ? st->meta_keys[i] : NULL;
    *value = (st && i < st->n_meta) ? st->meta_vals[i] : NULL;
}

ct_status ct_st_tensor_to_f32(const ct_st_tensor *t, float *out, size_t n) {
    if ((int64_t)n != t->numel)
        return ct_fail(CT_ERR_INVALID_ARG, "tensor '%s': %zu floats asked, it has %lld", t->name, n,
                       (long long)t->numel);
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case CT_DTYPE_F32:
        if (n) memcpy(out, p, n * 4);
        return CT_OK;
    case CT_DTYPE_BF16:
    case CT_DTYPE_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = t->dtype == CT_DTYPE_BF16 ? ct_bf16_to_f32(h) : ct_f16_to_f32(h);
        }
        return CT_OK;
    case CT_DTYPE_Q8_0: /* a GGUF's ggml blocks: f16 d, then 32 int8; value d·q (exact in f32) */
        for (size_t b = 0; b < n / CT_Q8_0_BLOCK; b++) {
            uint16_t h;
            memcpy(&h, p + b * CT_Q8_0_BLOCK_BYTES, 2);
            const float d = ct_f16_to_f32(h);
            for (int i = 0; i < CT_Q8_0_BLOCK; i++)
                out[b * CT_Q8_0_BLOCK + i] = d * (float)(int8_t)p[b * CT_Q8_0_BLOCK_BYTES + 2 + i];
        }
        return CT_OK;
    default:
        return ct_fail(CT_ERR_UNSUPPORTED, "tensor '%s': dtype %s is not a float type", t->name,
                       ct_dtype_name(t->dtype));
    }
}

/* ---- writer ------------------------------------------------------------ */

typedef struct wt_decl {
    char *name;
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_ST_MAX_DIMS];
    uint64_t nbytes;
} wt_decl;

struct ct_st_writer {
    ct_atomic_file file;
    const char *path; /* file.path */
    wt_decl *decl;
    size_t n, cap;
    json_t *meta;
    int started;    /* header written */
    size_t cur;     /* tensor being written */
    uint64_t done;  /* bytes of cur written */
    int finished;
    int failed;     /* a write failed: the file has a hole and cannot be finished */
};

ct_status ct_st_writer_create(const char *path, ct_st_writer **out) {
    *out = NULL;
    ct_st_writer *w = calloc(1, sizeof *w);
    if (!w) return ct_fail(CT_ERR_OOM, "%s: out of memory", path);
    ct_status s = ct_atomic_file_open(&w->file, path);
    if (s == CT_OK && !(w->meta = json_object())) s = ct_fail(CT_ERR_OOM, "%s: out of memory", path);
    if (s != CT_OK) {
        ct_st_writer_free(w);
        return s;
    }
    w->path = w->file.path;
    *out = w;
    return CT_OK;
}

ct_status ct_st_writer_add(ct_st_writer *w, const char *name, ct_dtype dtype, int ndim,
                           const int64_t *shape) {
    if (w->started) return ct_fail(CT_ERR_MISUSE, "%s: tensor '%s' declared after writing began", w->path, name);
    if (!name || !*name || strcmp(name, "__metadata__") == 0)
        return ct_fail(CT_ERR_INVALID_ARG, "%s: invalid tensor name", w->path);
    if ((unsigned)dtype >= CT_DTYPE_COUNT || dtype == CT_DTYPE_Q8 || dtype == CT_DTYPE_Q8_0)
        return ct_fail(CT_ERR_INVALID_ARG, "%s: '%s': bad dtype", w->path, name);
    if (ndim < 0 || ndim > CT_ST_MAX_DIMS)
        return ct_fail(CT_ERR_INVALID_ARG, "%s: '%s': %d dimensions", w->path, name, ndim);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->decl[i].name, name) == 0)
            return ct_fail(CT_ERR_INVALID_ARG, "%s: tensor '%s' declared twice", w->path, name);
    uint64_t numel = 1, lim = (uint64_t)1 << 62;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return ct_fail(CT_ERR_INVALID_ARG, "%s: '%s': negative dimension", w->path, name);
        if (shape[i] && numel > lim / (uint64_t)shape[i])
            return ct_fail(CT_ERR_INVALID_ARG, "%s: '%s': shape overflows", w->path, name);
        numel *= (uint64_t)shape[i];
    }
    if (numel > lim / 8) return ct_fail(CT_ERR_INVALID_ARG, "%s: '%s': shape overflows", w->path, name);
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        wt_decl *d = realloc(w->decl, cap * sizeof *d);
        if (!d) return ct_fail(CT_ERR_OOM, "%s: out of memory", w->path);
        w->decl = d;
        w->cap = cap;
    }
    wt_decl *d = &w->decl[w->n];
    memset(d, 0, sizeof *d);
    if (!(d->name = strdup(name))) return ct_fail(CT_ERR_OOM, "%s: out of memory", w->path);
    d->dtype = dtype;
    d->ndim = ndim;
    for (int i = 0; i < ndim; i++) d->shape[i] = shape[i];
    d->nbytes = numel * ct_dtype_size(dtype);
    w->n++;
    return CT_OK;
}

ct_status ct_st_writer_set_metadata(ct_st_writer *w, const char *key, const char *value) {
    if (w->started) return ct_fail(CT_ERR_MISUSE, "%s: metadata set after writing began", w->path);
    if (json_object_set_new(w->meta, key, json_string(value)) != 0)
        return ct_fail(CT_ERR_INVALID_ARG, "%s: metadata '%s' is not valid UTF-8", w->path, key);
    return CT_OK;
}

static ct_status write_all(ct_st_writer *w, const void *data, size_t n) {
    ct_status s = ct_atomic_file_write(&w->file, data, n);
    if (s != CT_OK) w->failed = 1;
    return s;
}

static ct_status refuse_failed(const ct_st_writer *w) {
    return ct_fail(CT_ERR_MISUSE, "%s: an earlier write failed; the file cannot be completed", w->path);
}

/* Zero-byte tensors have nothing to feed: a chunk stream (which cannot
 * address them) passes over them, and so does finish. ct_st_writer_write
 * does not: each of its calls is one declared tensor, empty or not, so a
 * caller writing tensor by tensor stays in step (skipping them there made
 * the next call take the wrong tensor and over-read the caller's buffer). */
static void skip_empty(ct_st_writer *w) {
    while (w->cur < w->n && w->done == 0 && w->decl[w->cur].nbytes == 0) w->cur++;
}

static ct_status write_header(ct_st_writer *w) {
    json_t *root = json_object();
    if (!root) return ct_fail(CT_ERR_OOM, "%s: out of memory", w->path);
    ct_status s = CT_OK;
    if (json_object_size(w->meta) > 0) json_object_set(root, "__metadata__", w->meta);
    uint64_t off = 0;
    for (size_t i = 0; i < w->n && s == CT_OK; i++) {
        const wt_decl *d = &w->decl[i];
        json_t *shape = json_array();
        for (int k = 0; k < d->ndim; k++) json_array_append_new(shape, json_integer(d->shape[k]));
        json_t *offs = json_array();
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_array_append_new(offs, json_integer((json_int_t)(off + d->nbytes)));
        json_t *e = json_object();
        json_object_set_new(e, "dtype", json_string(ct_dtype_name(d->dtype)));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "data_offsets", offs);
        if (json_object_set_new(root, d->name, e) != 0)
            s = ct_fail(CT_ERR_INVALID_ARG, "%s: tensor name '%s' is not valid UTF-8", w->path, d->name);
        off += d->nbytes;
    }
    char *text = s == CT_OK ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (s != CT_OK) return s;
    if (!text) return ct_fail(CT_ERR_OOM, "%s: cannot serialise the header", w->path);
    /* Pad with spaces so the data area starts 8-byte aligned. */
    size_t tl = strlen(text), hl = (tl + 7) & ~(size_t)7;
    uint8_t *buf = malloc(8 + hl);
    if (!buf) {
        free(text);
        return ct_fail(CT_ERR_OOM, "%s: out of memory", w->path);
    }
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, text, tl);
    memset(buf + 8 + tl, ' ', hl - tl);
    free(text);
    s = write_all(w, buf, 8 + hl);
    free(buf);
    if (s == CT_OK) w->started = 1;
    return s;
}

static ct_status write_chunk(ct_st_writer *w, const void *data, size_t n, int whole);

ct_status ct_st_writer_write_chunk(ct_st_writer *w, const void *data, size_t n) {
    return write_chunk(w, data, n, 0);
}

static ct_status write_chunk(ct_st_writer *w, const void *data, size_t n, int whole) {
    if (w->finished) return ct_fail(CT_ERR_MISUSE, "%s: write after finish", w->path);
    if (w->failed) return refuse_failed(w);
    if (!w->started) CT_TRY(write_header(w));
    if (n == 0) return CT_OK;
    skip_empty(w);
    if (w->cur >= w->n) return ct_fail(CT_ERR_MISUSE, "%s: more data than the declared tensors hold", w->path);
    const wt_decl *d = &w->decl[w->cur];
    if (n > d->nbytes - w->done)
        return ct_fail(CT_ERR_MISUSE, "%s: %zu bytes overrun tensor '%s' (%llu of %llu left)", w->path, n, d->name,
                       (unsigned long long)(d->nbytes - w->done), (unsigned long long)d->nbytes);
    CT_TRY(write_all(w, data, n));
    w->done += n;
    if (w->done == d->nbytes) {
        w->cur++;
        w->done = 0;
        if (!whole) skip_empty(w);
    }
    return CT_OK;
}

ct_status ct_st_writer_write(ct_st_writer *w, const void *data) {
    if (w->failed) return refuse_failed(w);
    if (!w->started) CT_TRY(write_header(w));
    if (w->cur >= w->n) return ct_fail(CT_ERR_MISUSE, "%s: more tensors written than declared", w->path);
    if (w->done != 0)
        return ct_fail(CT_ERR_MISUSE, "%s: tensor '%s' is partly written", w->path, w->decl[w->cur].name);
    if (w->decl[w->cur].nbytes == 0) { /* an empty tensor: this call is it, data unread */
        w->cur++;
        return CT_OK;
    }
    return write_chunk(w, data, (size_t)w->decl[w->cur].nbytes, 1);
}

ct_status ct_st_writer_finish(ct_st_writer *w) {
    if (w->finished) return ct_fail(CT_ERR_MISUSE, "%s: finished twice", w->path);
    if (w->failed) return refuse_failed(w);
    if (!w->started) CT_TRY(write_header(w));
    skip_empty(w); /* trailing empty tensors need no write */
    if (w->cur < w->n)
        return ct_fail(CT_ERR_MISUSE, "%s: tensor '%s' and %zu more were declared but not written", w->path,
                       w->decl[w->cur].name, w->n - w->cur - 1);
    CT_TRY(ct_atomic_file_commit(&w->file));
    w->finished = 1;
    return CT_OK;
}

void ct_st_writer_free(ct_st_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free(w->decl[i].name);
    free(w->decl);
    json_decref(w->meta);
    ct_atomic_file_close(&w->file);
    free(w);
}
