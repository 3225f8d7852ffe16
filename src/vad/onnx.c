/* onnx.c — see onnx.h. A bounds-checked protobuf walk over ModelProto →
 * GraphProto → NodeProto/AttributeProto/TensorProto that collects tensors
 * (initializers and Constant-node values, subgraphs included). Only the
 * fields needed for that are interpreted; every other field is skipped by
 * its wire type. Little-endian hosts only (as the rest of the project).
 */
#include "vad/onnx.h"

#include <stdlib.h>
#include <string.h>

#include "core/fs.h"

/* Subgraphs nest (If inside If); a hostile file could nest them deeply
 * enough to exhaust the stack, so depth is capped. */
#define MAX_DEPTH 32

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

struct ct_onnx_model {
    uint8_t *bytes; /* the file; tensors' raw_data point into it */
    size_t len;
    ct_onnx_tensor *tensors;
    int count, cap;
    void **owned; /* strings and decoded arrays, freed with the model */
    int n_owned, cap_owned;
};

typedef struct {
    const uint8_t *p, *end;
} cursor;

typedef struct {
    ct_onnx_model *m;
    const uint8_t *base;
} parser;

static ct_status bad(const parser *ps, const uint8_t *at, const char *what) {
    return ct_fail(CT_ERR_FORMAT, "onnx: %s at byte %zu", what, (size_t)(at - ps->base));
}

static ct_status get_varint(const parser *ps, cursor *c, uint64_t *v) {
    uint64_t r = 0;
    const uint8_t *start = c->p;
    for (int i = 0; i < 10; i++) {
        if (c->p >= c->end) return bad(ps, start, "truncated varint");
        uint8_t b = *c->p++;
        if (i == 9 && b > 1) return bad(ps, start, "varint overflows 64 bits");
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = r;
            return CT_OK;
        }
    }
    return bad(ps, start, "varint longer than 10 bytes");
}

/* Next field key; wire types 3/4 (groups) are not used by ONNX and refused. */
static ct_status get_key(const parser *ps, cursor *c, uint32_t *field, int *wire) {
    const uint8_t *at = c->p;
    uint64_t k;
    CT_TRY(get_varint(ps, c, &k));
    uint64_t f = k >> 3;
    int w = (int)(k & 7);
    if (f == 0 || f > 536870911u) return bad(ps, at, "invalid field number");
    if (w != WT_VARINT && w != WT_I64 && w != WT_LEN && w != WT_I32)
        return bad(ps, at, "unsupported wire type");
    *field = (uint32_t)f;
    *wire = w;
    return CT_OK;
}

/* Length-delimited payload as a sub-cursor. */
static ct_status get_len(const parser *ps, cursor *c, cursor *sub) {
    const uint8_t *at = c->p;
    uint64_t n;
    CT_TRY(get_varint(ps, c, &n));
    if (n > (uint64_t)(c->end - c->p)) return bad(ps, at, "length runs past the end of its message");
    sub->p = c->p;
    sub->end = c->p + n;
    c->p += n;
    return CT_OK;
}

static ct_status skip(const parser *ps, cursor *c, int wire) {
    const uint8_t *at = c->p;
    uint64_t v;
    cursor sub;
    switch (wire) {
    case WT_VARINT: return get_varint(ps, c, &v);
    case WT_LEN: return get_len(ps, c, &sub);
    case WT_I64:
        if (c->end - c->p < 8) return bad(ps, at, "truncated fixed64");
        c->p += 8;
        return CT_OK;
    default:
        if (c->end - c->p < 4) return bad(ps, at, "truncated fixed32");
        c->p += 4;
        return CT_OK;
    }
}

static ct_status want_wire(const parser *ps, const uint8_t *at, int wire, int want, const char *field) {
    if (wire == want) return CT_OK;
    return ct_fail(CT_ERR_FORMAT, "onnx: field %s has wire type %d, expected %d at byte %zu", field, wire,
                   want, (size_t)(at - ps->base));
}

/* A length-delimited field (string, bytes or sub-message) at `at`: its
 * wire type checked, its contents in sub. */
static ct_status get_field(const parser *ps, cursor *c, const uint8_t *at, int wire, const char *field,
                           cursor *sub) {
    CT_TRY(want_wire(ps, at, wire, WT_LEN, field));
    return get_len(ps, c, sub);
}

static ct_status own(ct_onnx_model *m, void *ptr) {
    if (!ptr) return ct_fail(CT_ERR_OOM, "onnx: out of memory");
    if (m->n_owned == m->cap_owned) {
        int nc = m->cap_owned ? m->cap_owned * 2 : 64;
        void **n = realloc(m->owned, (size_t)nc * sizeof *n);
        if (!n) {
            free(ptr);
            return ct_fail(CT_ERR_OOM, "onnx: out of memory");
        }
        m->owned = n;
        m->cap_owned = nc;
    }
    m->owned[m->n_owned++] = ptr;
    return CT_OK;
}

static ct_status copy_str(ct_onnx_model *m, const cursor *s, const char **out) {
    size_t n = (size_t)(s->end - s->p);
    char *str = malloc(n + 1);
    CT_TRY(own(m, str));
    memcpy(str, s->p, n);
    str[n] = '\0';
    *out = str;
    return CT_OK;
}

size_t ct_onnx_elem_size(int t) {
    switch (t) {
    case CT_ONNX_FLOAT: return 4;
    case CT_ONNX_UINT8: return 1;
    case CT_ONNX_INT8: return 1;
    case 4: return 2; /* uint16 */
    case 5: return 2; /* int16 */
    case CT_ONNX_INT32: return 4;
    case CT_ONNX_INT64: return 8;
    case CT_ONNX_BOOL: return 1;
    case CT_ONNX_FLOAT16: return 2;
    case CT_ONNX_DOUBLE: return 8;
    case 12: return 4; /* uint32 */
    case 13: return 8; /* uint64 */
    case CT_ONNX_BFLOAT16: return 2;
    default: return 0;
    }
}

/* A repeated numeric field seen while parsing a TensorProto: either one packed
 * run or many single entries, gathered into an owned array of `esize` bytes
 * per element (varints are narrowed to esize). */
typedef struct {
    uint8_t *buf;
    size_t n, cap, esize;
} numlist;

static ct_status numlist_push(numlist *l, const void *v) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        uint8_t *nb = realloc(l->buf, nc * l->esize);
        if (!nb) return ct_fail(CT_ERR_OOM, "onnx: out of memory");
        l->buf = nb;
        l->cap = nc;
    }
    memcpy(l->buf + l->n * l->esize, v, l->esize);
    l->n++;
    return CT_OK;
}

/* One element of a repeated field, packed or not. fixed: 4 or 8 for fixed32/
 * fixed64 encodings, 0 for varints. */
static ct_status read_repeated(const parser *ps, cursor *c, int wire, int fixed, numlist *l,
                               const char *field) {
    const uint8_t *at = c->p;
    int single = fixed == 4 ? WT_I32 : fixed == 8 ? WT_I64 : WT_VARINT;
    cursor run;
    if (wire == WT_LEN) {
        CT_TRY(get_len(ps, c, &run));
    } else {
        CT_TRY(want_wire(ps, at, wire, single, field));
        run = *c;
    }
    do {
        uint8_t tmp[8];
        if (fixed) {
            if (run.end - run.p < fixed) return bad(ps, run.p, "truncated packed number");
            memcpy(tmp, run.p, (size_t)fixed);
            run.p += fixed;
            CT_TRY(numlist_push(l, tmp));
        } else {
            uint64_t v;
            CT_TRY(get_varint(ps, &run, &v));
            if (l->esize == 8) {
                memcpy(tmp, &v, 8);
            } else {
                uint32_t v32 = (uint32_t)v;
                memcpy(tmp, &v32, 4);
            }
            CT_TRY(numlist_push(l, tmp));
        }
        if (wire != WT_LEN) {
            c->p = run.p; /* one element consumed from the enclosing message */
            break;
        }
    } while (run.p < run.end);
    return CT_OK;
}

/* Parse a TensorProto into *t (name left to the caller when empty). */
static ct_status parse_tensor(parser *ps, cursor c, const char *graph, ct_onnx_tensor *t) {
    const uint8_t *start = c.p;
    memset(t, 0, sizeof *t);
    t->name = "";
    t->graph = graph;
    numlist dims = {.esize = 8}, floats = {.esize = 4}, i32 = {.esize = 4}, i64 = {.esize = 8},
            dbl = {.esize = 8};
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    int have_raw = 0;
    ct_status s = CT_OK;
    while (c.p < c.end && s == CT_OK) {
        const uint8_t *at = c.p;
        uint32_t f;
        int w;
        uint64_t v;
        cursor sub;
        if ((s = get_key(ps, &c, &f, &w)) != CT_OK) break;
        switch (f) {
        case 1: s = read_repeated(ps, &c, w, 0, &dims, "TensorProto.dims"); break;
        case 2:
            if ((s = want_wire(ps, at, w, WT_VARINT, "TensorProto.data_type")) == CT_OK &&
                (s = get_varint(ps, &c, &v)) == CT_OK) {
                if (v > 1000) s = bad(ps, at, "tensor data_type out of range");
                t->data_type = (int)v;
            }
            break;
        case 4: s = read_repeated(ps, &c, w, 4, &floats, "TensorProto.float_data"); break;
        case 5: s = read_repeated(ps, &c, w, 0, &i32, "TensorProto.int32_data"); break;
        case 7: s = read_repeated(ps, &c, w, 0, &i64, "TensorProto.int64_data"); break;
        case 10: s = read_repeated(ps, &c, w, 8, &dbl, "TensorProto.double_data"); break;
        case 8:
            if ((s = get_field(ps, &c, at, w, "TensorProto.name", &sub)) == CT_OK)
                s = copy_str(ps->m, &sub, &t->name);
            break;
        case 9:
            if ((s = get_field(ps, &c, at, w, "TensorProto.raw_data", &sub)) == CT_OK) {
                raw = sub.p;
                raw_len = (size_t)(sub.end - sub.p);
                have_raw = 1;
            }
            break;
        case 13: /* external_data */
            t->external = 1;
            s = skip(ps, &c, w);
            break;
        case 14: /* data_location: 1 = EXTERNAL */
            if ((s = want_wire(ps, at, w, WT_VARINT, "TensorProto.data_location")) == CT_OK &&
                (s = get_varint(ps, &c, &v)) == CT_OK && v == 1)
                t->external = 1;
            break;
        default: s = skip(ps, &c, w); break;
        }
    }
    if (s == CT_OK) {
        if (dims.n > CT_ONNX_MAX_DIMS) {
            s = bad(ps, start, "tensor has more than 8 dimensions");
        } else {
            t->ndim = (int)dims.n;
            int64_t numel = 1;
            for (size_t i = 0; i < dims.n && s == CT_OK; i++) {
                int64_t d;
                memcpy(&d, dims.buf + 8 * i, 8);
                t->dims[i] = d;
                if (d < 0) s = bad(ps, start, "negative tensor dimension");
                else if (d != 0 && numel > INT64_MAX / 4096 / d) s = bad(ps, start, "tensor too large");
                else numel *= d;
            }
            t->numel = numel;
        }
    }
    if (s == CT_OK && !t->external) {
        size_t es = ct_onnx_elem_size(t->data_type);
        size_t want = es * (size_t)t->numel;
        numlist *typed = NULL;
        if (t->data_type == CT_ONNX_FLOAT) typed = &floats;
        else if (t->data_type == CT_ONNX_INT64) typed = &i64;
        else if (t->data_type == CT_ONNX_DOUBLE) typed = &dbl;
        else if (t->data_type == CT_ONNX_INT32) typed = &i32;
        if (es == 0) {
            /* strings/complex: recorded without data */
        } else if (have_raw) {
            if (raw_len != want) s = bad(ps, start, "tensor raw_data size does not match its shape");
            t->data = raw;
            t->nbytes = raw_len;
        } else if (typed && typed->n > 0) {
            if (typed->n * typed->esize != want) {
                s = bad(ps, start, "tensor typed data count does not match its shape");
            } else {
                t->data = typed->buf;
                t->nbytes = want;
                typed->buf = NULL; /* handed to the model below */
                s = own(ps->m, (void *)t->data);
            }
        } else if (want != 0) {
            s = bad(ps, start, "tensor has no data");
        }
    }
    free(dims.buf);
    free(floats.buf);
    free(i32.buf);
    free(i64.buf);
    free(dbl.buf);
    return s;
}

static ct_status add_tensor(ct_onnx_model *m, const ct_onnx_tensor *t) {
    if (m->count == m->cap) {
        int nc = m->cap ? m->cap * 2 : 32;
        ct_onnx_tensor *n = realloc(m->tensors, (size_t)nc * sizeof *n);
        if (!n) return ct_fail(CT_ERR_OOM, "onnx: out of memory");
        m->tensors = n;
        m->cap = nc;
    }
    m->tensors[m->count++] = *t;
    return CT_OK;
}

static ct_status parse_graph(parser *ps, cursor c, int depth);

/* AttributeProto: recurse into subgraphs; hand back a tensor named "value". */
static ct_status parse_attribute(parser *ps, cursor c, const char *graph, int depth,
                                 ct_onnx_tensor *value, int *have_value) {
    const char *name = "";
    ct_onnx_tensor t;
    int have_t = 0;
    while (c.p < c.end) {
        const uint8_t *at = c.p;
        uint32_t f;
        int w;
        cursor sub;
        CT_TRY(get_key(ps, &c, &f, &w));
        switch (f) {
        case 1:
            CT_TRY(get_field(ps, &c, at, w, "AttributeProto.name", &sub));
            CT_TRY(copy_str(ps->m, &sub, &name));
            break;
        case 5:
            CT_TRY(get_field(ps, &c, at, w, "AttributeProto.t", &sub));
            CT_TRY(parse_tensor(ps, sub, graph, &t));
            have_t = 1;
            break;
        case 6:  /* g */
        case 11: /* graphs */
            CT_TRY(get_field(ps, &c, at, w, "AttributeProto.g", &sub));
            CT_TRY(parse_graph(ps, sub, depth + 1));
            break;
        default: CT_TRY(skip(ps, &c, w)); break;
        }
    }
    if (have_t && strcmp(name, "value") == 0) {
        *value = t;
        *have_value = 1;
    }
    return CT_OK;
}

static ct_status parse_node(parser *ps, cursor c, const char *graph, int depth) {
    const char *op = "", *out0 = NULL;
    ct_onnx_tensor value;
    int have_value = 0;
    while (c.p < c.end) {
        const uint8_t *at = c.p;
        uint32_t f;
        int w;
        cursor sub;
        CT_TRY(get_key(ps, &c, &f, &w));
        switch (f) {
        case 2:
            CT_TRY(get_field(ps, &c, at, w, "NodeProto.output", &sub));
            if (!out0) CT_TRY(copy_str(ps->m, &sub, &out0));
            break;
        case 4:
            CT_TRY(get_field(ps, &c, at, w, "NodeProto.op_type", &sub));
            CT_TRY(copy_str(ps->m, &sub, &op));
            break;
        case 5:
            CT_TRY(get_field(ps, &c, at, w, "NodeProto.attribute", &sub));
            CT_TRY(parse_attribute(ps, sub, graph, depth, &value, &have_value));
            break;
        default: CT_TRY(skip(ps, &c, w)); break;
        }
    }
    if (have_value && out0 && strcmp(op, "Constant") == 0) {
        value.name = out0;
        CT_TRY(add_tensor(ps->m, &value));
    }
    return CT_OK;
}

static ct_status parse_graph(parser *ps, cursor c, int depth) {
    if (depth > MAX_DEPTH) return bad(ps, c.p, "subgraphs nested too deeply");
    /* The graph's name may come after its nodes: find it first. */
    const char *gname = "";
    cursor scan = c;
    while (scan.p < scan.end) {
        const uint8_t *at = scan.p;
        uint32_t f;
        int w;
        cursor sub;
        CT_TRY(get_key(ps, &scan, &f, &w));
        if (f == 2) {
            CT_TRY(get_field(ps, &scan, at, w, "GraphProto.name", &sub));
            CT_TRY(copy_str(ps->m, &sub, &gname));
        } else {
            CT_TRY(skip(ps, &scan, w));
        }
    }
    while (c.p < c.end) {
        const uint8_t *at = c.p;
        uint32_t f;
        int w;
        cursor sub;
        CT_TRY(get_key(ps, &c, &f, &w));
        if (f == 1) {
            CT_TRY(get_field(ps, &c, at, w, "GraphProto.node", &sub));
            CT_TRY(parse_node(ps, sub, gname, depth));
        } else if (f == 5) {
            CT_TRY(get_field(ps, &c, at, w, "GraphProto.initializer", &sub));
            ct_onnx_tensor t;
            CT_TRY(parse_tensor(ps, sub, gname, &t));
            CT_TRY(add_tensor(ps->m, &t));
        } else {
            CT_TRY(skip(ps, &c, w));
        }
    }
    return CT_OK;
}

static ct_status parse_model(parser *ps, cursor c) {
    int have_graph = 0;
    while (c.p < c.end) {
        const uint8_t *at = c.p;
        uint32_t f;
        int w;
        cursor sub;
        CT_TRY(get_key(ps, &c, &f, &w));
        if (f == 7) {
            CT_TRY(get_field(ps, &c, at, w, "ModelProto.graph", &sub));
            CT_TRY(parse_graph(ps, sub, 0));
            have_graph = 1;
        } else {
            CT_TRY(skip(ps, &c, w));
        }
    }
    if (!have_graph) return ct_fail(CT_ERR_FORMAT, "onnx: no graph in the model");
    return CT_OK;
}

/* Takes ownership of bytes (malloc'd) in every case. */
static ct_status parse_owned(uint8_t *bytes, size_t len, ct_onnx_model **out) {
    *out = NULL;
    ct_onnx_model *m = calloc(1, sizeof *m);
    if (!m) {
        free(bytes);
        return ct_fail(CT_ERR_OOM, "onnx: out of memory");
    }
    m->bytes = bytes;
    m->len = len;
    parser ps = {m, bytes};
    cursor c = {bytes, bytes + len};
    ct_status s = parse_model(&ps, c);
    if (s != CT_OK) {
        ct_onnx_free(m);
        return s;
    }
    *out = m;
    return CT_OK;
}

ct_status ct_onnx_parse(const void *buf, size_t len, ct_onnx_model **out) {
    *out = NULL;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) return ct_fail(CT_ERR_OOM, "onnx: cannot allocate %zu bytes", len);
    if (len) memcpy(copy, buf, len);
    return parse_owned(copy, len, out);
}

ct_status ct_onnx_open(const char *path, size_t max_bytes, ct_onnx_model **out) {
    *out = NULL;
    char *buf;
    size_t n;
    CT_TRY(ct_fs_read_all(path, max_bytes ? max_bytes : ((size_t)1 << 30), &buf, &n));
    ct_status s = parse_owned((uint8_t *)buf, n, out);
    if (s != CT_OK) return ct_fail_wrap(s, "%s", path);
    return CT_OK;
}

void ct_onnx_free(ct_onnx_model *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    free(m->tensors);
    free(m->bytes);
    free(m);
}

int ct_onnx_count(const ct_onnx_model *m) { return m->count; }

const ct_onnx_tensor *ct_onnx_at(const ct_onnx_model *m, int i) {
    return (i >= 0 && i < m->count) ? &m->tensors[i] : NULL;
}

const ct_onnx_tensor *ct_onnx_find(const ct_onnx_model *m, const char *name) {
    for (int i = 0; i < m->count; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}
