/* gguf_write.c — the GGUF v3 writer (metadata, tensor infos, data aligned to
 * 32 bytes, atomic rename) and the NeMo ↔ CrispASR tensor-name mapping for
 * Cohere Transcribe (docs/GGUF.md); see gguf.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "model/gguf.h"

enum { GGML_F32 = 0, GGML_F16 = 1, GGML_Q8_0 = 8, GGML_I8 = 24, GGML_I32 = 26, GGML_I64 = 27, GGML_BF16 = 30 };

static uint32_t ggml_from_dtype(ct_dtype d) {
    switch (d) {
    case CT_DTYPE_F32: return GGML_F32;
    case CT_DTYPE_F16: return GGML_F16;
    case CT_DTYPE_BF16: return GGML_BF16;
    case CT_DTYPE_Q8_0: return GGML_Q8_0;
    case CT_DTYPE_I8: return GGML_I8;
    case CT_DTYPE_I32: return GGML_I32;
    case CT_DTYPE_I64: return GGML_I64;
    default: return UINT32_MAX;
    }
}

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put_le(buf *b, uint64_t v, int n) {
    uint8_t t[8];
    for (int i = 0; i < n; i++) t[i] = (uint8_t)(v >> (8 * i));
    put(b, t, (size_t)n);
}

static void put_str(buf *b, const char *s) {
    size_t n = strlen(s);
    put_le(b, n, 8);
    put(b, s, n);
}

typedef struct w_tensor {
    char *name;
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_GGUF_MAX_DIMS];
    uint64_t nbytes, offset;
} w_tensor;

struct ct_gguf_writer {
    ct_atomic_file file;
    const char *path; /* file.path */
    buf kv;
    size_t n_kv;
    char **keys;
    w_tensor *t;
    size_t n, cap;
    int started, finished;
    int failed; /* a write failed: the file has a hole and cannot be finished */
    size_t cur;
    uint64_t pos; /* bytes of the data area written */
};

ct_status ct_gguf_writer_create(const char *path, ct_gguf_writer **out) {
    *out = NULL;
    ct_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) return ct_fail(CT_ERR_OOM, "%s: out of memory", path);
    ct_status s = ct_atomic_file_open(&w->file, path);
    if (s != CT_OK) {
        ct_gguf_writer_free(w);
        return s;
    }
    w->path = w->file.path;
    *out = w;
    return CT_OK;
}

static ct_status new_key(ct_gguf_writer *w, const char *key, uint32_t type) {
    if (w->started) return ct_fail(CT_ERR_MISUSE, "%s: metadata '%s' set after writing began", w->path, key);
    if (!key || !*key) return ct_fail(CT_ERR_INVALID_ARG, "%s: empty metadata key", w->path);
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->keys[i], key) == 0) return ct_fail(CT_ERR_INVALID_ARG, "%s: metadata '%s' set twice", w->path, key);
    char **k = realloc(w->keys, (w->n_kv + 1) * sizeof *k);
    if (!k) return ct_fail(CT_ERR_OOM, "%s: out of memory", w->path);
    w->keys = k;
    if (!(k[w->n_kv] = strdup(key))) return ct_fail(CT_ERR_OOM, "%s: out of memory", w->path);
    w->n_kv++;
    put_str(&w->kv, key);
    put_le(&w->kv, type, 4);
    return w->kv.oom ? ct_fail(CT_ERR_OOM, "%s: out of memory", w->path) : CT_OK;
}

static ct_status kv_done(ct_gguf_writer *w) {
    return w->kv.oom ? ct_fail(CT_ERR_OOM, "%s: out of memory", w->path) : CT_OK;
}

ct_status ct_gguf_writer_set_u32(ct_gguf_writer *w, const char *key, uint32_t v) {
    CT_TRY(new_key(w, key, CT_GGUF_U32));
    put_le(&w->kv, v, 4);
    return kv_done(w);
}

ct_status ct_gguf_writer_set_f32(ct_gguf_writer *w, const char *key, float v) {
    CT_TRY(new_key(w, key, CT_GGUF_F32));
    uint32_t u;
    memcpy(&u, &v, 4);
    put_le(&w->kv, u, 4);
    return kv_done(w);
}

ct_status ct_gguf_writer_set_bool(ct_gguf_writer *w, const char *key, int v) {
    CT_TRY(new_key(w, key, CT_GGUF_BOOL));
    put_le(&w->kv, v ? 1 : 0, 1);
    return kv_done(w);
}

ct_status ct_gguf_writer_set_str(ct_gguf_writer *w, const char *key, const char *v) {
    CT_TRY(new_key(w, key, CT_GGUF_STRING));
    put_str(&w->kv, v);
    return kv_done(w);
}

ct_status ct_gguf_writer_set_str_array(ct_gguf_writer *w, const char *key, const char *const *v, size_t n) {
    CT_TRY(new_key(w, key, CT_GGUF_ARRAY));
    put_le(&w->kv, CT_GGUF_STRING, 4);
    put_le(&w->kv, n, 8);
    for (size_t i = 0; i < n; i++) put_str(&w->kv, v[i]);
    return kv_done(w);
}

ct_status ct_gguf_writer_set_f32_array(ct_gguf_writer *w, const char *key, const float *v, size_t n) {
    CT_TRY(new_key(w, key, CT_GGUF_ARRAY));
    put_le(&w->kv, CT_GGUF_F32, 4);
    put_le(&w->kv, n, 8);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        put_le(&w->kv, u, 4);
    }
    return kv_done(w);
}

ct_status ct_gguf_writer_set_i32_array(ct_gguf_writer *w, const char *key, const int32_t *v, size_t n) {
    CT_TRY(new_key(w, key, CT_GGUF_ARRAY));
    put_le(&w->kv, CT_GGUF_I32, 4);
    put_le(&w->kv, n, 8);
    for (size_t i = 0; i < n; i++) put_le(&w->kv, (uint32_t)v[i], 4);
    return kv_done(w);
}

ct_status ct_gguf_writer_add_tensor(ct_gguf_writer *w, const char *name, ct_dtype dtype, int ndim,
                                    const int64_t *shape) {
    if (w->started) return ct_fail(CT_ERR_MISUSE, "%s: tensor '%s' declared after writing began", w->path, name);
    if (!name || !*name) return ct_fail(CT_ERR_INVALID_ARG, "%s: empty tensor name", w->path);
    if (ggml_from_dtype(dtype) == UINT32_MAX)
        return ct_fail(CT_ERR_INVALID_ARG, "%s: tensor '%s': dtype %s has no GGUF type", w->path, name, ct_dtype_name(dtype));
    /* GGUF has no 0-d tensors: a scalar is stored as [1] */
    int nd = ndim == 0 ? 1 : ndim;
    if (nd > CT_GGUF_MAX_DIMS) return ct_fail(CT_ERR_INVALID_ARG, "%s: tensor '%s': %d dimensions", w->path, name, ndim);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->t[i].name, name) == 0) return ct_fail(CT_ERR_INVALID_ARG, "%s: tensor '%s' declared twice", w->path, name);
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        w_tensor *t = realloc(w->t, cap * sizeof *t);
        if (!t) return ct_fail(CT_ERR_OOM, "%s: out of memory", w->path);
        w->t = t;
        w->cap = cap;
    }
    w_tensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    uint64_t numel = 1;
    for (int i = 0; i < nd; i++) {
        t->shape[i] = ndim == 0 ? 1 : shape[i];
        if (t->shape[i] < 0 || (t->shape[i] && numel > ((uint64_t)1 << 60) / (uint64_t)t->shape[i]))
            return ct_fail(CT_ERR_INVALID_ARG, "%s: tensor '%s': bad shape", w->path, name);
        numel *= (uint64_t)t->shape[i];
    }
    if (!(t->name = strdup(name))) return ct_fail(CT_ERR_OOM, "%s: out of memory", w->path);
    t->dtype = dtype;
    t->ndim = nd;
    if (dtype == CT_DTYPE_Q8_0 && (nd == 0 || t->shape[nd - 1] % CT_Q8_0_BLOCK))
        return ct_fail(CT_ERR_INVALID_ARG, "%s: tensor '%s': Q8_0 rows must be a multiple of 32 long", w->path, name);
    t->nbytes = ct_dtype_nbytes(dtype, numel);
    uint64_t off = 0;
    if (w->n) {
        const w_tensor *p = &w->t[w->n - 1];
        off = p->offset + p->nbytes;
        off = (off + CT_GGUF_DEFAULT_ALIGNMENT - 1) / CT_GGUF_DEFAULT_ALIGNMENT * CT_GGUF_DEFAULT_ALIGNMENT;
    }
    t->offset = off;
    w->n++;
    return CT_OK;
}

static ct_status write_all(ct_gguf_writer *w, const void *data, size_t n) {
    ct_status s = ct_atomic_file_write(&w->file, data, n);
    if (s != CT_OK) w->failed = 1;
    return s;
}

static ct_status refuse_failed(const ct_gguf_writer *w) {
    return ct_fail(CT_ERR_MISUSE, "%s: an earlier write failed; the file cannot be completed", w->path);
}

static ct_status pad_to(ct_gguf_writer *w, uint64_t target) {
    static const uint8_t zeros[CT_GGUF_DEFAULT_ALIGNMENT];
    if (target < w->pos) return ct_fail(CT_ERR_INTERNAL, "%s: data position went backwards", w->path);
    CT_TRY(write_all(w, zeros, (size_t)(target - w->pos)));
    w->pos = target;
    return CT_OK;
}

static ct_status start(ct_gguf_writer *w) {
    buf h = {0};
    put(&h, "GGUF", 4);
    put_le(&h, 3, 4);
    put_le(&h, w->n, 8);
    put_le(&h, w->n_kv, 8);
    put(&h, w->kv.p, w->kv.n);
    for (size_t i = 0; i < w->n; i++) {
        const w_tensor *t = &w->t[i];
        put_str(&h, t->name);
        put_le(&h, (uint64_t)t->ndim, 4);
        for (int d = t->ndim - 1; d >= 0; d--) put_le(&h, (uint64_t)t->shape[d], 8); /* ne[0] innermost */
        put_le(&h, ggml_from_dtype(t->dtype), 4);
        put_le(&h, t->offset, 8);
    }
    static const uint8_t zeros[CT_GGUF_DEFAULT_ALIGNMENT];
    put(&h, zeros, (CT_GGUF_DEFAULT_ALIGNMENT - h.n % CT_GGUF_DEFAULT_ALIGNMENT) % CT_GGUF_DEFAULT_ALIGNMENT);
    ct_status s = h.oom ? ct_fail(CT_ERR_OOM, "%s: out of memory", w->path) : write_all(w, h.p, h.n);
    free(h.p);
    if (s == CT_OK) w->started = 1;
    return s;
}

ct_status ct_gguf_writer_write(ct_gguf_writer *w, const void *data) {
    if (w->finished) return ct_fail(CT_ERR_MISUSE, "%s: write after finish", w->path);
    if (w->failed) return refuse_failed(w);
    if (!w->started) CT_TRY(start(w));
    if (w->cur >= w->n) return ct_fail(CT_ERR_MISUSE, "%s: more tensors written than declared", w->path);
    const w_tensor *t = &w->t[w->cur];
    CT_TRY(pad_to(w, t->offset));
    CT_TRY(write_all(w, data, (size_t)t->nbytes));
    w->pos += t->nbytes;
    w->cur++;
    return CT_OK;
}

ct_status ct_gguf_writer_finish(ct_gguf_writer *w) {
    if (w->finished) return ct_fail(CT_ERR_MISUSE, "%s: finished twice", w->path);
    if (w->failed) return refuse_failed(w);
    if (!w->started) CT_TRY(start(w));
    if (w->cur < w->n)
        return ct_fail(CT_ERR_MISUSE, "%s: tensor '%s' was declared but not written", w->path, w->t[w->cur].name);
    CT_TRY(ct_atomic_file_commit(&w->file));
    w->finished = 1;
    return CT_OK;
}

void ct_gguf_writer_free(ct_gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free(w->t[i].name);
    free(w->t);
    for (size_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    free(w->keys);
    free(w->kv.p);
    ct_atomic_file_close(&w->file);
    free(w);
}

/* ---- names ------------------------------------------------------------- */

typedef struct pair {
    const char *nemo, *gguf;
} pair;

/* Whole names outside the layers. */
static const pair k_fixed[] = {
    {"encoder.pre_encode.conv.", "enc.pre.conv."},
    {"encoder.pre_encode.out.", "enc.pre.out."},
    {"encoder_decoder_proj.", "enc.proj."},
    {"transf_decoder._embedding.token_embedding.weight", "dec.emb.weight"},
    {"transf_decoder._embedding.position_embedding.pos_enc", "dec.pos.weight"},
    {"transf_decoder._embedding.layer_norm.", "dec.emb_ln."},
    {"transf_decoder._decoder.final_layer_norm.", "dec.out_ln."},
    {"log_softmax.mlp.layer0.", "dec.head."},
    {"preprocessor.featurizer.fb", "fe.mel_fb"},
    {"preprocessor.featurizer.window", "fe.window"},
};

/* Within "encoder.layers.N." ↔ "enc.blk.N." (specific entries first). */
static const pair k_enc[] = {
    {"norm_feed_forward1.", "ff1.norm."},
    {"feed_forward1.linear1.", "ff1.up."},
    {"feed_forward1.linear2.", "ff1.down."},
    {"norm_feed_forward2.", "ff2.norm."},
    {"feed_forward2.linear1.", "ff2.up."},
    {"feed_forward2.linear2.", "ff2.down."},
    {"norm_self_att.", "attn.norm."},
    {"self_attn.linear_q.", "attn.q."},
    {"self_attn.linear_k.", "attn.k."},
    {"self_attn.linear_v.", "attn.v."},
    {"self_attn.linear_out.", "attn.out."},
    {"self_attn.linear_pos.", "attn.pos."},
    {"self_attn.pos_bias_u", "attn.pos_bias_u"},
    {"self_attn.pos_bias_v", "attn.pos_bias_v"},
    {"norm_conv.", "conv.norm."},
    {"conv.pointwise_conv1.", "conv.pw1."},
    {"conv.depthwise_conv.", "conv.dw."},
    {"conv.batch_norm.running_mean", "conv.bn.mean"},
    {"conv.batch_norm.running_var", "conv.bn.var"},
    {"conv.batch_norm.weight", "conv.bn.weight"},
    {"conv.batch_norm.bias", "conv.bn.bias"},
    {"conv.pointwise_conv2.", "conv.pw2."},
    {"norm_out.", "out_norm."},
};

/* Within "transf_decoder._decoder.layers.N." ↔ "dec.blk.N.". */
static const pair k_dec[] = {
    {"layer_norm_1.", "attn_ln."},
    {"first_sub_layer.query_net.", "attn_q."},
    {"first_sub_layer.key_net.", "attn_k."},
    {"first_sub_layer.value_net.", "attn_v."},
    {"first_sub_layer.out_projection.", "attn_o."},
    {"layer_norm_2.", "cross_ln."},
    {"second_sub_layer.query_net.", "cross_q."},
    {"second_sub_layer.key_net.", "cross_k."},
    {"second_sub_layer.value_net.", "cross_v."},
    {"second_sub_layer.out_projection.", "cross_o."},
    {"layer_norm_3.", "ffn_ln."},
    {"third_sub_layer.dense_in.", "ffn_up."},
    {"third_sub_layer.dense_out.", "ffn_down."},
};

/* Map `rest` through a table (from side 0 = nemo, 1 = gguf). A prefix entry
 * (ending in '.') keeps the suffix; other entries must match exactly. */
static int map_rest(const pair *t, size_t n, int from_gguf, const char *rest, const char *head, char *out, size_t cap) {
    for (size_t i = 0; i < n; i++) {
        const char *a = from_gguf ? t[i].gguf : t[i].nemo, *b = from_gguf ? t[i].nemo : t[i].gguf;
        size_t al = strlen(a);
        int prefix = a[al - 1] == '.';
        if (prefix ? strncmp(rest, a, al) == 0 && rest[al] != '\0' : strcmp(rest, a) == 0) {
            int k = snprintf(out, cap, "%s%s%s", head, b, prefix ? rest + al : "");
            return k >= 0 && (size_t)k < cap;
        }
    }
    return 0;
}

static ct_status map_name(const char *in, int from_gguf, char *out, size_t cap) {
    const char *enc_in = from_gguf ? "enc.blk." : "encoder.layers.";
    const char *enc_out = from_gguf ? "encoder.layers." : "enc.blk.";
    const char *dec_in = from_gguf ? "dec.blk." : "transf_decoder._decoder.layers.";
    const char *dec_out = from_gguf ? "transf_decoder._decoder.layers." : "dec.blk.";
    const char *pre[2] = {enc_in, dec_in}, *post[2] = {enc_out, dec_out};
    const pair *tab[2] = {k_enc, k_dec};
    size_t tn[2] = {sizeof k_enc / sizeof k_enc[0], sizeof k_dec / sizeof k_dec[0]};
    for (int s = 0; s < 2; s++) {
        size_t pl = strlen(pre[s]);
        if (strncmp(in, pre[s], pl) != 0) continue;
        char *end;
        long layer = strtol(in + pl, &end, 10);
        if (end == in + pl || *end != '.' || layer < 0 || in[pl] == '+' || in[pl] == '-' || in[pl] == ' ') break;
        char head[96];
        snprintf(head, sizeof head, "%s%ld.", post[s], layer);
        if (map_rest(tab[s], tn[s], from_gguf, end + 1, head, out, cap)) return CT_OK;
        break;
    }
    if (map_rest(k_fixed, sizeof k_fixed / sizeof k_fixed[0], from_gguf, in, "", out, cap)) return CT_OK;
    return ct_fail(CT_ERR_NOT_FOUND, "tensor '%s' has no %s name", in, from_gguf ? "NeMo" : "GGUF");
}

ct_status ct_gguf_name_from_nemo(const char *nemo, char *out, size_t cap) { return map_name(nemo, 0, out, cap); }
ct_status ct_gguf_name_to_nemo(const char *gguf, char *out, size_t cap) { return map_name(gguf, 1, out, cap); }
