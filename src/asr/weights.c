/* weights.c — loading the model's tensors by name with shape checks, dtype
 * conversion (or zero-copy use of tensors already in the compute dtype), the
 * NaN/infinity check in the same pass, and BatchNorm folding. Names and
 * shapes: MODEL.md "Checkpoint layouts". */
#include "asr/weights.h"

#include "compute/ops.h"
#include "compute/quant.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A tensor requested in this "dtype" keeps the checkpoint's float type (and
 * is used in place when it can be): the layers int8 mode leaves in higher
 * precision (weights.h, "int8"). */
#define SOURCE_DTYPE CT_DTYPE_COUNT

typedef struct loader {
    ct_backend *be;
    ct_q8_plan q8;     /* under Q8: the kinds kept in float */
    int enc_layer;     /* the encoder layer being loaded, or -1 */
    int dense;         /* loading a Linear/pointwise weight (a Q8_0 source stays Q8_0) */
    ct_weight_lookup_fn lookup;
    void *ctx;
    size_t bytes, borrowed;
    /* deferred uploads' sources (ct_tensor_upload_deferred): their pages are
     * dropped after the load's synchronize, once the copies have read them */
    ct_host_tensor *late_drops;
    size_t n_late, cap_late;
} loader;

/* Look a tensor up and check its shape (dims[i] < 0: any). */
static ct_status find(loader *L, const char *name, int ndim, const int64_t *dims, int optional,
                      ct_host_tensor *ht) {
    memset(ht, 0, sizeof *ht);
    if (!L->lookup(L->ctx, name, ht)) {
        if (optional) return CT_OK;
        return ct_fail(CT_ERR_NOT_FOUND, "tensor %s: missing from the checkpoint", name);
    }
    if (ht->dtype != CT_DTYPE_F32 && ht->dtype != CT_DTYPE_BF16 && ht->dtype != CT_DTYPE_F16 &&
        ht->dtype != CT_DTYPE_Q8_0)
        return ct_fail(CT_ERR_FORMAT, "tensor %s: dtype %s is not a float type", name, ct_dtype_name(ht->dtype));
    int ok = ht->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = dims[i] < 0 || ht->shape[i] == dims[i];
    if (!ok) {
        char got[128] = "", want[128] = "";
        for (int i = 0; i < ht->ndim && i < 8; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? "," : "", (long long)ht->shape[i]);
        for (int i = 0; i < ndim; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "," : "", (long long)dims[i]);
        return ct_fail(CT_ERR_FORMAT, "tensor %s: shape [%s], expected [%s]", name, got, want);
    }
    return CT_OK;
}

/* Give the pages of a converted file-backed tensor back to the page cache so
 * that the mapping and the converted copy are not resident together. Only the
 * whole pages inside the tensor are dropped; they are re-read if touched. */
static void drop_pages(const ct_host_tensor *ht, size_t nbytes) {
    if (!ht->file_backed || nbytes == 0) return;
    long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0) return;
    uintptr_t a = (uintptr_t)ht->data, e = a + nbytes;
    uintptr_t s = (a + (uintptr_t)ps - 1) / (uintptr_t)ps * (uintptr_t)ps, f = e / (uintptr_t)ps * (uintptr_t)ps;
    if (f > s) madvise((void *)s, f - s, MADV_DONTNEED);
}

/* drop_pages once the load has synchronized (a deferred upload's source);
 * without memory for the note the pages stay mapped, which costs resident
 * memory, not correctness. */
static void drop_pages_later(loader *L, const ct_host_tensor *ht) {
    if (!ht->file_backed) return;
    if (L->n_late == L->cap_late) {
        size_t cap = L->cap_late ? 2 * L->cap_late : 256;
        ct_host_tensor *p = realloc(L->late_drops, cap * sizeof *p);
        if (!p) return;
        L->late_drops = p, L->cap_late = cap;
    }
    L->late_drops[L->n_late++] = *ht;
}

/* The message ct_checkpoint_open gives for a non-finite weight: one NaN
 * makes every activation after it NaN, and the decoder then "succeeds" with
 * an empty text. */
static ct_status non_finite(const char *name, const ct_host_tensor *ht, int64_t at) {
    int nan;
    if (ht->dtype == CT_DTYPE_F32) {
        uint32_t u;
        memcpy(&u, (const unsigned char *)ht->data + 4 * at, 4);
        nan = (u & 0x7fffffu) != 0;
    } else {
        uint16_t h; /* Q8_0: the block's f16 scale */
        const size_t off = ht->dtype == CT_DTYPE_Q8_0 ? (size_t)at / CT_Q8_0_BLOCK * CT_Q8_0_BLOCK_BYTES : 2 * (size_t)at;
        memcpy(&h, (const unsigned char *)ht->data + off, 2);
        nan = (h & (ht->dtype == CT_DTYPE_BF16 ? 0x7fu : 0x3ffu)) != 0;
    }
    return ct_fail(CT_ERR_FORMAT, "tensor '%s' holds a non-finite weight (%s at element %lld)", name,
                   nan ? "NaN" : "infinity", (long long)at);
}

static size_t host_numel(const ct_host_tensor *ht) {
    size_t n = 1;
    for (int i = 0; i < ht->ndim && i < 8; i++) n *= (size_t)ht->shape[i];
    return n;
}

/* Refuse NaN/infinity in a tensor read on the host (BatchNorm folding). */
static ct_status check_host(const char *name, const ct_host_tensor *ht) {
    if (ht->data && ht->dtype == CT_DTYPE_Q8_0) /* BatchNorm folding reads floats */
        return ct_fail(CT_ERR_FORMAT, "tensor %s: Q8_0 is only supported for the matrices", name);
    if (!ht->data || !ht->check_finite) return CT_OK;
    int64_t at = ct_first_non_finite(ht->data, ht->dtype, host_numel(ht));
    return at < 0 ? CT_OK : non_finite(name, ht, at);
}

/* A Q8_0 tensor from the file (a GGUF): a matrix stays Q8_0 whatever the
 * weight dtype, used in place (zero-copy) when it can be, else copied; any
 * other use (embeddings, the positional table) is dequantised to f32
 * (exact: f16 scale times int8) and then takes the usual path to dtype. */
static ct_status load_q80(loader *L, ct_tensor *t, ct_dtype dtype, const char *name, const ct_host_tensor *ht,
                          int nd, const int64_t *shape) {
    const size_t n = host_numel(ht);
    int64_t bad = ht->check_finite ? ct_q80_first_non_finite(ht->data, n) : -1;
    if (bad >= 0) return non_finite(name, ht, bad);
    if (!L->dense) {
        float *f = malloc(sizeof(float) * (n ? n : 1));
        if (!f) return ct_fail(CT_ERR_OOM, "tensor %s: %zu floats", name, n);
        ct_q80_dequantize_row(f, ht->data, (int64_t)n);
        /* only dense weights are ever quantised, so dtype is a float type */
        if (dtype == SOURCE_DTYPE || dtype == CT_DTYPE_Q8 || dtype == CT_DTYPE_Q8_0) dtype = CT_DTYPE_F32;
        ct_status s = ct_tensor_upload(L->be, dtype, f, CT_DTYPE_F32, nd, shape, t);
        free(f);
        if (s != CT_OK) return ct_fail_wrap(s, "tensor %s (Q8_0, dequantised)", name);
        drop_pages(ht, ct_dtype_nbytes(CT_DTYPE_Q8_0, n));
        L->bytes += t->nbytes;
        return CT_OK;
    }
    if (!L->be->ops->supports_weight(L->be, CT_DTYPE_Q8_0) || L->be->ops->stream(L->be) != NULL)
        return ct_fail(CT_ERR_UNSUPPORTED,
                       "tensor %s: Q8_0 weights run on the CPU only (backend %s); convert the safetensors checkpoint "
                       "with cohere-transcribe-convert --dtype f16 or bf16 for it",
                       name, L->be->ops->name);
    memset(t, 0, sizeof *t);
    t->dtype = CT_DTYPE_Q8_0;
    t->ndim = nd;
    for (int i = 0; i < nd; i++) t->shape[i] = shape[i];
    t->nbytes = ct_dtype_nbytes(CT_DTYPE_Q8_0, n);
    if (ht->borrowable) { /* a view of the mapping (blocks are read bytewise, any alignment) */
        t->data = (void *)ht->data;
        L->borrowed += t->nbytes;
    } else {
        CT_TRY(L->be->ops->alloc(L->be, t->nbytes, &t->data));
        t->owner = L->be;
        memcpy(t->data, ht->data, t->nbytes);
        drop_pages(ht, t->nbytes);
    }
    L->bytes += t->nbytes;
    return CT_OK;
}

/* Load name into *t as dtype, with shape `store` (same element count). A
 * tensor already in dtype on a host backend is used in place (zero-copy):
 * its pages are only faulted in by the NaN scan, or when first used. */
static ct_status load(loader *L, ct_tensor *t, ct_dtype dtype, const char *name, int ndim, const int64_t *dims,
                      int optional) {
    ct_host_tensor ht;
    CT_TRY(find(L, name, ndim, dims, optional, &ht));
    memset(t, 0, sizeof *t);
    if (!ht.data) return CT_OK; /* optional and absent */
    int64_t shape[CT_TENSOR_MAX_DIMS];
    int nd = ndim > CT_TENSOR_MAX_DIMS ? CT_TENSOR_MAX_DIMS : ndim;
    for (int i = 0; i < nd; i++) shape[i] = ht.shape[i];
    int64_t bad = -1;
    if (ht.dtype == CT_DTYPE_Q8_0) return load_q80(L, t, dtype, name, &ht, nd, shape);
    if (dtype == SOURCE_DTYPE) dtype = ht.dtype;
    /* per-block int8 needs rows of a multiple of 32: others keep their type */
    if (dtype == CT_DTYPE_Q8_0 && (nd < 2 || shape[0] <= 0 || (host_numel(&ht) / (size_t)shape[0]) % CT_Q8_0_BLOCK))
        dtype = ht.dtype;
    if (dtype == CT_DTYPE_Q8_0) { /* per block at load, rows in parallel; each source page read once */
        const int64_t N = shape[0], K = (int64_t)(host_numel(&ht) / (size_t)N);
        ct_status s = ct_tensor_quantize_q80(L->be, ht.data, ht.dtype, N, K, &bad, t);
        if (s != CT_OK) return ct_fail_wrap(s, "tensor %s", name);
        if (bad < 0) drop_pages(&ht, host_numel(&ht) * ct_dtype_size(ht.dtype));
    } else if (dtype == CT_DTYPE_Q8) { /* quantised per row; the source pages are read once, then dropped */
        const int64_t N = shape[0], K = N > 0 ? (int64_t)(host_numel(&ht) / (size_t)N) : 0;
        ct_status s = ct_tensor_quantize_q8(L->be, ht.data, ht.dtype, N, K, &bad, t);
        if (s != CT_OK) return ct_fail_wrap(s, "tensor %s", name);
        if (bad < 0) drop_pages(&ht, host_numel(&ht) * ct_dtype_size(ht.dtype));
    } else if (ht.borrowable && ct_tensor_borrow(L->be, dtype, ht.data, ht.dtype, nd, shape, t)) {
        t->file_backed = 1; /* borrowable implies a file mapping (weights_checkpoint.c) */
        if (ht.check_finite) bad = ct_first_non_finite(ht.data, ht.dtype, (size_t)ct_tensor_numel(t));
        L->borrowed += t->nbytes;
    } else {
        /* a source that lives as long as the weights (the checkpoint's
         * mapping) may still be read after this returns: a device then
         * uploads it in the background until the load's synchronize */
        const int deferred = ht.borrowable && dtype == ht.dtype;
        ct_status s = (deferred ? ct_tensor_upload_deferred : ct_tensor_upload_checked)(
            L->be, dtype, ht.data, ht.dtype, nd, shape, ht.check_finite ? &bad : NULL, t);
        if (s != CT_OK) return ct_fail_wrap(s, "tensor %s", name);
        if (bad < 0 && !deferred) drop_pages(&ht, (size_t)ct_tensor_numel(t) * ct_dtype_size(ht.dtype));
        if (bad < 0 && deferred) drop_pages_later(L, &ht);
    }
    if (bad >= 0) {
        ct_tensor_release(t);
        return non_finite(name, &ht, bad);
    }
    L->bytes += t->nbytes;
    return CT_OK;
}

static const char *const kind_names[CT_Q8_KINDS] = {"enc-ff1", "enc-ff2", "enc-qk",    "enc-v",
                                                     "enc-out", "enc-pos", "enc-pw1",   "enc-pw2",
                                                     "proj",    "dec-self", "dec-cross", "dec-ff"};

const char *ct_q8_kind_name(int bit) { return bit >= 0 && bit < CT_Q8_KINDS ? kind_names[bit] : NULL; }

/* Measured on the full-size random model (docs/PERFORMANCE.md, "int8
 * accuracy"): per-row int8 rounding adds ~0.8 % noise per product and the
 * kinds' contributions add in quadrature, uniformly over depth. v, out and
 * the conv pointwise layers cost the most error per weight, q/k/pos almost
 * none, FF the least per weight after them; so q, k, pos, the decoder's
 * self-attention and FF, and FF in a third of the encoder layers are int8,
 * the rest stays in the checkpoint's type (bf16: native on CPUs with
 * AVX512-BF16), which keeps encoder and logits within 3e-2 of fp32. */
ct_q8_plan ct_q8_default_plan(int enc_layers) {
    return (ct_q8_plan){.all = CT_Q8_PLAN_SET | CT_Q8_ENC_V | CT_Q8_ENC_OUT | CT_Q8_ENC_PW1 | CT_Q8_ENC_PW2 |
                               CT_Q8_PROJ | CT_Q8_DEC_CROSS,
                        .part = CT_Q8_ENC_FF1 | CT_Q8_ENC_FF2,
                        .from = (enc_layers + 1) / 3, /* 16 of 48 */
                        .to = 1 << 30};
}

/* Measured the same way for Q8_0 (docs/PERFORMANCE.md, "Q8_0"): blocks of
 * 32 round each weight to a step 1.5–2× finer than a 1280-long row's, so
 * with everything int8 the encoder is at 4.8e-2 instead of 7.4e-2, and
 * keeping v, out and pointwise_conv2 in float (an eighth of the encoder's
 * weights, the kinds with the most error per weight) brings encoder and
 * first-step logits to 2.7e-2 (keeping pointwise_conv1 too gains nothing
 * measurable: the rest is the FF layers'); FF, q, k, pos, pointwise_conv1,
 * the projection and the whole decoder are int8. */
ct_q8_plan ct_q80_default_plan(int enc_layers) {
    (void)enc_layers;
    return (ct_q8_plan){.all = CT_Q8_PLAN_SET | CT_Q8_ENC_V | CT_Q8_ENC_OUT | CT_Q8_ENC_PW2};
}

/* The dtype of a dense weight of this kind: Q8 unless the plan keeps it. */
static ct_dtype kind_dtype(const loader *L, ct_dtype wdt, unsigned kind) {
    if (wdt != CT_DTYPE_Q8 && wdt != CT_DTYPE_Q8_0) return wdt;
    const int part = L->enc_layer >= L->q8.from && L->enc_layer < L->q8.to && (L->q8.part & kind);
    return (L->q8.all & kind) || part ? SOURCE_DTYPE : wdt;
}
#define KD(kind) kind_dtype(L, wdt, CT_Q8_##kind)

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NAME(...) (snprintf(nm, sizeof nm, __VA_ARGS__), nm)

/* Dense weight (out, in[, 1[, 1]]) in the weight dtype, bias (out) in f32. */
static ct_status linear(loader *L, ct_dtype wdt, ct_tensor *w, ct_tensor *b, const char *prefix, int64_t out,
                        int64_t in, int trailing_ones, int has_bias) {
    char nm[256];
    int64_t d[4] = {out, in, 1, 1};
    L->dense = 1;
    ct_status s = load(L, w, wdt, NAME("%s.weight", prefix), 2 + trailing_ones, d, 0);
    L->dense = 0;
    CT_TRY(s);
    w->ndim = 2; /* (out, in, 1) → (out, in): same memory */
    if (has_bias) CT_TRY(load(L, b, CT_DTYPE_F32, NAME("%s.bias", prefix), 1, DIMS(out), 0));
    return CT_OK;
}

static ct_status norm(loader *L, ct_tensor *g, ct_tensor *b, const char *prefix, int64_t d) {
    char nm[256];
    CT_TRY(load(L, g, CT_DTYPE_F32, NAME("%s.weight", prefix), 1, DIMS(d), 0));
    CT_TRY(load(L, b, CT_DTYPE_F32, NAME("%s.bias", prefix), 1, DIMS(d), 0));
    return CT_OK;
}

/* Depthwise conv1d (d,1,K) + optional bias + BatchNorm (eval) folded into
 * w' = w·γ/√(var+eps), b' = (b − mean)·γ/√(var+eps) + β, stored (d, K) f32. */
static ct_status depthwise_bn(loader *L, ct_enc_layer *e, const char *p, int64_t d, int64_t K) {
    char nm[256];
    ct_host_tensor hw, hb, g, beta, mean, var;
    CT_TRY(find(L, NAME("%s.conv.depthwise_conv.weight", p), 3, DIMS(d, 1, K), 0, &hw));
    CT_TRY(find(L, NAME("%s.conv.depthwise_conv.bias", p), 1, DIMS(d), 1, &hb));
    CT_TRY(find(L, NAME("%s.conv.batch_norm.weight", p), 1, DIMS(d), 0, &g));
    CT_TRY(find(L, NAME("%s.conv.batch_norm.bias", p), 1, DIMS(d), 0, &beta));
    CT_TRY(find(L, NAME("%s.conv.batch_norm.running_mean", p), 1, DIMS(d), 0, &mean));
    CT_TRY(find(L, NAME("%s.conv.batch_norm.running_var", p), 1, DIMS(d), 0, &var));
    CT_TRY(check_host(NAME("%s.conv.depthwise_conv.weight", p), &hw));
    CT_TRY(check_host(NAME("%s.conv.depthwise_conv.bias", p), &hb));
    CT_TRY(check_host(NAME("%s.conv.batch_norm.weight", p), &g));
    CT_TRY(check_host(NAME("%s.conv.batch_norm.bias", p), &beta));
    CT_TRY(check_host(NAME("%s.conv.batch_norm.running_mean", p), &mean));
    CT_TRY(check_host(NAME("%s.conv.batch_norm.running_var", p), &var));
    size_t nd = (size_t)d, nk = (size_t)(d * K);
    float *buf = malloc(sizeof(float) * (nk + 5 * nd));
    if (!buf) return ct_fail(CT_ERR_OOM, "depthwise conv of %s", p);
    float *w = buf, *bb = w + nk, *gg = bb + nd, *be = gg + nd, *mu = be + nd, *vv = mu + nd;
    ct_convert_to_f32(w, hw.data, hw.dtype, nk);
    if (hb.data) ct_convert_to_f32(bb, hb.data, hb.dtype, nd);
    else memset(bb, 0, sizeof(float) * nd);
    ct_convert_to_f32(gg, g.data, g.dtype, nd);
    ct_convert_to_f32(be, beta.data, beta.dtype, nd);
    ct_convert_to_f32(mu, mean.data, mean.dtype, nd);
    ct_convert_to_f32(vv, var.data, var.dtype, nd);
    for (size_t c = 0; c < nd; c++) {
        if (!(vv[c] >= 0.0f)) {
            free(buf);
            return ct_fail(CT_ERR_FORMAT, "tensor %s.conv.batch_norm.running_var: negative or NaN", p);
        }
        float s = gg[c] / sqrtf(vv[c] + 1e-5f);
        for (int64_t k = 0; k < K; k++) w[c * K + k] *= s;
        bb[c] = (bb[c] - mu[c]) * s + be[c];
    }
    ct_status st = ct_tensor_upload(L->be, CT_DTYPE_F32, w, CT_DTYPE_F32, 2, DIMS(d, K), &e->dw_w);
    if (st == CT_OK) st = ct_tensor_upload(L->be, CT_DTYPE_F32, bb, CT_DTYPE_F32, 1, DIMS(d), &e->dw_b);
    free(buf);
    L->bytes += e->dw_w.nbytes + e->dw_b.nbytes;
    return st;
}

static ct_status check_hparams(const ct_asr_hparams *hp) {
    if (hp->n_mels != 128 && hp->n_mels <= 0) return ct_fail(CT_ERR_FORMAT, "config: n_mels %d", hp->n_mels);
    if (hp->enc_layers <= 0 || hp->d_enc <= 0 || hp->enc_heads <= 0 || hp->d_enc % hp->enc_heads ||
        (hp->d_enc / hp->enc_heads) % 1 || hp->d_enc % 2 || hp->enc_ff <= 0 || hp->conv_kernel <= 0 ||
        hp->conv_kernel % 2 == 0 || hp->sub_channels <= 0)
        return ct_fail(CT_ERR_FORMAT, "config: inconsistent encoder sizes (layers %d, d %d, heads %d, ff %d, kernel %d)",
                       hp->enc_layers, hp->d_enc, hp->enc_heads, hp->enc_ff, hp->conv_kernel);
    if (hp->dec_layers <= 0 || hp->d_dec <= 0 || hp->dec_heads <= 0 || hp->d_dec % hp->dec_heads ||
        hp->dec_ff <= 0 || hp->max_pos <= 0 || hp->vocab <= 0)
        return ct_fail(CT_ERR_FORMAT, "config: inconsistent decoder sizes (layers %d, d %d, heads %d, ff %d, positions %d, vocab %d)",
                       hp->dec_layers, hp->d_dec, hp->dec_heads, hp->dec_ff, hp->max_pos, hp->vocab);
    return CT_OK;
}

static ct_status pack_qkv(loader *L, const ct_asr_hparams *hp, ct_enc_layer *e);

static ct_status load_encoder_layer(loader *L, ct_dtype wdt, const ct_asr_hparams *hp, int i, ct_enc_layer *e) {
    char p[128], nm[256];
    const int64_t d = hp->d_enc, ff = hp->enc_ff, H = hp->enc_heads, Dh = d / H;
    snprintf(p, sizeof p, "encoder.layers.%d", i);
    CT_TRY(norm(L, &e->ln_ff1_g, &e->ln_ff1_b, NAME("%s.norm_feed_forward1", p), d));
    CT_TRY(linear(L, KD(ENC_FF1), &e->ff1_w1, &e->ff1_b1, NAME("%s.feed_forward1.linear1", p), ff, d, 0, 1));
    CT_TRY(linear(L, KD(ENC_FF2), &e->ff1_w2, &e->ff1_b2, NAME("%s.feed_forward1.linear2", p), d, ff, 0, 1));
    CT_TRY(norm(L, &e->ln_att_g, &e->ln_att_b, NAME("%s.norm_self_att", p), d));
    CT_TRY(linear(L, KD(ENC_QK), &e->wq, &e->bq, NAME("%s.self_attn.linear_q", p), d, d, 0, 1));
    CT_TRY(linear(L, KD(ENC_QK), &e->wk, &e->bk, NAME("%s.self_attn.linear_k", p), d, d, 0, 1));
    CT_TRY(linear(L, KD(ENC_V), &e->wv, &e->bv, NAME("%s.self_attn.linear_v", p), d, d, 0, 1));
    CT_TRY(linear(L, KD(ENC_OUT), &e->wo, &e->bo, NAME("%s.self_attn.linear_out", p), d, d, 0, 1));
    CT_TRY(linear(L, KD(ENC_POS), &e->wpos, NULL, NAME("%s.self_attn.linear_pos", p), d, d, 0, 0));
    CT_TRY(load(L, &e->pos_u, CT_DTYPE_F32, NAME("%s.self_attn.pos_bias_u", p), 2, DIMS(H, Dh), 0));
    CT_TRY(load(L, &e->pos_v, CT_DTYPE_F32, NAME("%s.self_attn.pos_bias_v", p), 2, DIMS(H, Dh), 0));
    CT_TRY(norm(L, &e->ln_conv_g, &e->ln_conv_b, NAME("%s.norm_conv", p), d));
    CT_TRY(linear(L, KD(ENC_PW1), &e->pw1_w, &e->pw1_b, NAME("%s.conv.pointwise_conv1", p), 2 * d, d, 1, 1));
    CT_TRY(depthwise_bn(L, e, p, d, hp->conv_kernel));
    CT_TRY(linear(L, KD(ENC_PW2), &e->pw2_w, &e->pw2_b, NAME("%s.conv.pointwise_conv2", p), d, d, 1, 1));
    CT_TRY(norm(L, &e->ln_ff2_g, &e->ln_ff2_b, NAME("%s.norm_feed_forward2", p), d));
    CT_TRY(linear(L, KD(ENC_FF1), &e->ff2_w1, &e->ff2_b1, NAME("%s.feed_forward2.linear1", p), ff, d, 0, 1));
    CT_TRY(linear(L, KD(ENC_FF2), &e->ff2_w2, &e->ff2_b2, NAME("%s.feed_forward2.linear2", p), d, ff, 0, 1));
    CT_TRY(norm(L, &e->ln_out_g, &e->ln_out_b, NAME("%s.norm_out", p), d));
    return pack_qkv(L, hp, e);
}

/* The packed attention projection of a backend with the fused encoder ops
 * (weights.h): the three weights copied once into one (3d, d) tensor on the
 * backend, so that one GEMM makes q̃|k|v in the fused attention's layout,
 * and u folded into the q bias, as attn_relpos_qkv defines. The CPU tables
 * lack those ops and keep their three products (and float32 results). */
static ct_status pack_qkv(loader *L, const ct_asr_hparams *hp, ct_enc_layer *e) {
    ct_backend *be = L->be;
    const int64_t d = hp->d_enc, H = hp->enc_heads;
    if (!ct_backend_has_fused_encoder(be)) return CT_OK;
    if (e->wq.dtype != e->wk.dtype || e->wq.dtype != e->wv.dtype || e->wq.dtype == CT_DTYPE_Q8 || !e->bq.data ||
        !e->bk.data || !e->bv.data)
        return CT_OK;
    const size_t part = e->wq.nbytes;
    ct_tensor w;
    CT_TRY(ct_tensor_alloc(be, e->wq.dtype, 2, DIMS(3 * d, d), &w));
    ct_tensor *src[3] = {&e->wq, &e->wk, &e->wv};
    ct_status s = CT_OK;
    for (int i = 0; i < 3 && s == CT_OK; i++) s = be->ops->copy(be, (char *)w.data + (size_t)i * part, src[i]->data, part);
    float *h = malloc(sizeof(float) * 6 * (size_t)d); /* bq bk bv u vb, then vb − u */
    if (!h && s == CT_OK) s = ct_fail(CT_ERR_OOM, "packed attention projection");
    const ct_tensor *vec[5] = {&e->bq, &e->bk, &e->bv, &e->pos_u, &e->pos_v};
    for (int i = 0; i < 5 && s == CT_OK; i++) s = be->ops->to_host(be, h + (size_t)i * d, vec[i]->data, sizeof(float) * d);
    if (s == CT_OK) {
        for (int64_t j = 0; j < d; j++) {
            h[5 * d + j] = h[4 * d + j] - h[3 * d + j]; /* c = vb − u */
            h[j] += h[3 * d + j];                       /* bq + u */
        }
        s = ct_tensor_upload(be, CT_DTYPE_F32, h, CT_DTYPE_F32, 1, DIMS(3 * d), &e->bqkv);
    }
    if (s == CT_OK) s = ct_tensor_upload(be, CT_DTYPE_F32, h + 5 * d, CT_DTYPE_F32, 2, DIMS(H, d / H), &e->pos_c);
    if (s == CT_OK) s = be->ops->synchronize(be); /* the copies are done before their sources go */
    free(h);
    if (s != CT_OK) {
        ct_tensor_release(&w);
        ct_tensor_release(&e->bqkv);
        ct_tensor_release(&e->pos_c);
        return ct_fail_wrap(s, "packed attention projection");
    }
    for (int i = 0; i < 3; i++) { /* the separate weights become views of the packed rows */
        ct_tensor v = *src[i];
        ct_tensor_release(src[i]);
        v.data = (char *)w.data + (size_t)i * part;
        v.owner = NULL;
        *src[i] = v;
    }
    e->wqkv = w;
    L->bytes += e->bqkv.nbytes + e->pos_c.nbytes; /* the packed weight replaces the three */
    return CT_OK;
}

/* The decoder's packed self-attention projection, for a backend with the
 * fused decoder step (weights.h): one GEMM makes q|k|v per step where three
 * did, in the layout attn_causal_qkv_dev reads. The CPU tables lack that
 * op and keep their three products. */
static ct_status pack_dec_qkv(loader *L, int64_t d, ct_dec_layer *l) {
    ct_backend *be = L->be;
    if (!ct_backend_has_fused_decoder(be)) return CT_OK;
    if (l->sq_w.dtype != l->sk_w.dtype || l->sq_w.dtype != l->sv_w.dtype || l->sq_w.dtype == CT_DTYPE_Q8 ||
        l->sq_w.dtype == CT_DTYPE_Q8_0 || !l->sq_b.data || !l->sk_b.data || !l->sv_b.data)
        return CT_OK;
    const size_t part = l->sq_w.nbytes, bpart = sizeof(float) * (size_t)d;
    ct_tensor w, b;
    CT_TRY(ct_tensor_alloc(be, l->sq_w.dtype, 2, DIMS(3 * d, d), &w));
    ct_status s = ct_tensor_alloc(be, CT_DTYPE_F32, 1, DIMS(3 * d), &b);
    if (s != CT_OK) {
        ct_tensor_release(&w);
        return ct_fail_wrap(s, "packed decoder projection");
    }
    ct_tensor *src[3] = {&l->sq_w, &l->sk_w, &l->sv_w}, *bsrc[3] = {&l->sq_b, &l->sk_b, &l->sv_b};
    for (int i = 0; i < 3 && s == CT_OK; i++) s = be->ops->copy(be, (char *)w.data + (size_t)i * part, src[i]->data, part);
    for (int i = 0; i < 3 && s == CT_OK; i++)
        s = be->ops->copy(be, (char *)b.data + (size_t)i * bpart, bsrc[i]->data, bpart);
    if (s == CT_OK) s = be->ops->synchronize(be); /* the copies are done before their sources go */
    if (s != CT_OK) {
        ct_tensor_release(&w);
        ct_tensor_release(&b);
        return ct_fail_wrap(s, "packed decoder projection");
    }
    for (int i = 0; i < 3; i++) { /* the separate tensors become views of the packed rows */
        ct_tensor v = *src[i], vb = *bsrc[i];
        ct_tensor_release(src[i]);
        ct_tensor_release(bsrc[i]);
        v.data = (char *)w.data + (size_t)i * part;
        v.owner = NULL;
        *src[i] = v;
        vb.data = (char *)b.data + (size_t)i * bpart;
        vb.owner = NULL;
        *bsrc[i] = vb;
    }
    l->sqkv_w = w;
    l->sqkv_b = b;
    return CT_OK;
}

static ct_status load_decoder_layer(loader *L, ct_dtype wdt, const ct_asr_hparams *hp, int i, ct_dec_layer *l) {
    char p[128], nm[256];
    const int64_t d = hp->d_dec, ff = hp->dec_ff;
    snprintf(p, sizeof p, "transf_decoder._decoder.layers.%d", i);
    CT_TRY(norm(L, &l->ln1_g, &l->ln1_b, NAME("%s.layer_norm_1", p), d));
    CT_TRY(linear(L, KD(DEC_SELF), &l->sq_w, &l->sq_b, NAME("%s.first_sub_layer.query_net", p), d, d, 0, 1));
    CT_TRY(linear(L, KD(DEC_SELF), &l->sk_w, &l->sk_b, NAME("%s.first_sub_layer.key_net", p), d, d, 0, 1));
    CT_TRY(linear(L, KD(DEC_SELF), &l->sv_w, &l->sv_b, NAME("%s.first_sub_layer.value_net", p), d, d, 0, 1));
    CT_TRY(linear(L, KD(DEC_SELF), &l->so_w, &l->so_b, NAME("%s.first_sub_layer.out_projection", p), d, d, 0, 1));
    CT_TRY(norm(L, &l->ln2_g, &l->ln2_b, NAME("%s.layer_norm_2", p), d));
    CT_TRY(linear(L, KD(DEC_CROSS), &l->cq_w, &l->cq_b, NAME("%s.second_sub_layer.query_net", p), d, d, 0, 1));
    CT_TRY(linear(L, KD(DEC_CROSS), &l->ck_w, &l->ck_b, NAME("%s.second_sub_layer.key_net", p), d, d, 0, 1));
    CT_TRY(linear(L, KD(DEC_CROSS), &l->cv_w, &l->cv_b, NAME("%s.second_sub_layer.value_net", p), d, d, 0, 1));
    CT_TRY(linear(L, KD(DEC_CROSS), &l->co_w, &l->co_b, NAME("%s.second_sub_layer.out_projection", p), d, d, 0, 1));
    CT_TRY(norm(L, &l->ln3_g, &l->ln3_b, NAME("%s.layer_norm_3", p), d));
    CT_TRY(linear(L, KD(DEC_FF), &l->fc1_w, &l->fc1_b, NAME("%s.third_sub_layer.dense_in", p), ff, d, 0, 1));
    CT_TRY(linear(L, KD(DEC_FF), &l->fc2_w, &l->fc2_b, NAME("%s.third_sub_layer.dense_out", p), d, ff, 0, 1));
    return pack_dec_qkv(L, d, l);
}

/* The subsampling projection in the fused subsampling's column order
 * (weights.h, sub_w_cl): a copy of sub_w with column c·F + f moved to
 * f·C + c, made once here for backends with that op. */
static ct_status reorder_sub_w(loader *L, int64_t C, int64_t F, int64_t d, ct_asr_weights *w) {
    ct_backend *be = L->be;
    if (!ct_backend_has_fused_subsample(be)) return CT_OK;
    const ct_tensor *t = &w->sub_w;
    const size_t es = ct_dtype_size(t->dtype), K = (size_t)(C * F);
    if (t->dtype == CT_DTYPE_Q8 || t->dtype == CT_DTYPE_Q8_0 || t->nbytes != (size_t)d * K * es) return CT_OK;
    char *h = malloc(t->nbytes), *g = malloc(t->nbytes);
    ct_status s = h && g ? be->ops->to_host(be, h, t->data, t->nbytes) : ct_fail(CT_ERR_OOM, "subsampling projection");
    if (s == CT_OK) {
        for (int64_t o = 0; o < d; o++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t f = 0; f < F; f++)
                    memcpy(g + ((size_t)o * K + (size_t)(f * C + c)) * es, h + ((size_t)o * K + (size_t)(c * F + f)) * es,
                           es);
        s = ct_tensor_alloc(be, t->dtype, 2, DIMS(d, (int64_t)K), &w->sub_w_cl);
        if (s == CT_OK) s = be->ops->to_device(be, w->sub_w_cl.data, g, t->nbytes);
        if (s == CT_OK) s = be->ops->synchronize(be);
        if (s != CT_OK) ct_tensor_release(&w->sub_w_cl);
    }
    free(h);
    free(g);
    if (s == CT_OK) L->bytes += w->sub_w_cl.nbytes;
    return s == CT_OK ? CT_OK : ct_fail_wrap(s, "subsampling projection");
}

static ct_status load_all(loader *L, const ct_asr_hparams *hp, ct_dtype wdt, ct_asr_weights *w) {
    char nm[256];
    /* int8 keeps the subsampling, the embeddings and the vocabulary
     * projection in the checkpoint's float type (weights.h) */
    const ct_dtype hi = wdt == CT_DTYPE_Q8 || wdt == CT_DTYPE_Q8_0 ? SOURCE_DTYPE : wdt;
    const int64_t C = hp->sub_channels, d = hp->d_enc, F = (hp->n_mels + 7) / 8;
    /* F: frequency bins after three stride-2 convs: 128 → 64 → 32 → 16 */
    int64_t f = hp->n_mels;
    for (int i = 0; i < 3; i++) f = (f - 1) / 2 + 1;
    (void)F;
    CT_TRY(load(L, &w->c0_w, CT_DTYPE_F32, "encoder.pre_encode.conv.0.weight", 4, DIMS(C, 1, 3, 3), 0));
    CT_TRY(load(L, &w->c0_b, CT_DTYPE_F32, "encoder.pre_encode.conv.0.bias", 1, DIMS(C), 0));
    CT_TRY(load(L, &w->dw1_w, CT_DTYPE_F32, "encoder.pre_encode.conv.2.weight", 4, DIMS(C, 1, 3, 3), 0));
    CT_TRY(load(L, &w->dw1_b, CT_DTYPE_F32, "encoder.pre_encode.conv.2.bias", 1, DIMS(C), 0));
    CT_TRY(linear(L, hi, &w->pw1_w, &w->pw1_b, "encoder.pre_encode.conv.3", C, C, 2, 1));
    CT_TRY(load(L, &w->dw2_w, CT_DTYPE_F32, "encoder.pre_encode.conv.5.weight", 4, DIMS(C, 1, 3, 3), 0));
    CT_TRY(load(L, &w->dw2_b, CT_DTYPE_F32, "encoder.pre_encode.conv.5.bias", 1, DIMS(C), 0));
    CT_TRY(linear(L, hi, &w->pw2_w, &w->pw2_b, "encoder.pre_encode.conv.6", C, C, 2, 1));
    CT_TRY(linear(L, hi, &w->sub_w, &w->sub_b, "encoder.pre_encode.out", d, C * f, 0, 1));
    CT_TRY(reorder_sub_w(L, C, f, d, w));
    w->enc = calloc((size_t)hp->enc_layers, sizeof *w->enc);
    w->dec = calloc((size_t)hp->dec_layers, sizeof *w->dec);
    if (!w->enc || !w->dec) return ct_fail(CT_ERR_OOM, "weights: layer tables");
    for (int i = 0; i < hp->enc_layers; i++) {
        L->enc_layer = i;
        CT_TRY(load_encoder_layer(L, wdt, hp, i, &w->enc[i]));
    }
    L->enc_layer = -1;
    /* one more encoder layer in the file than the config says is a mismatch */
    ct_host_tensor extra;
    if (L->lookup(L->ctx, NAME("encoder.layers.%d.norm_out.weight", hp->enc_layers), &extra))
        return ct_fail(CT_ERR_FORMAT, "tensor %s: the config says %d encoder layers", nm, hp->enc_layers);
    CT_TRY(linear(L, KD(PROJ), &w->proj_w, &w->proj_b, "encoder_decoder_proj", hp->d_dec, d, 0, 1));
    const int64_t dd = hp->d_dec;
    CT_TRY(load(L, &w->tok_emb, hi, "transf_decoder._embedding.token_embedding.weight", 2, DIMS(hp->vocab, dd), 0));
    CT_TRY(load(L, &w->pos_emb, CT_DTYPE_F32, "transf_decoder._embedding.position_embedding.pos_enc", 2,
                DIMS(hp->max_pos, dd), 0));
    CT_TRY(norm(L, &w->emb_ln_g, &w->emb_ln_b, "transf_decoder._embedding.layer_norm", dd));
    for (int i = 0; i < hp->dec_layers; i++) CT_TRY(load_decoder_layer(L, wdt, hp, i, &w->dec[i]));
    if (L->lookup(L->ctx, NAME("transf_decoder._decoder.layers.%d.layer_norm_1.weight", hp->dec_layers), &extra))
        return ct_fail(CT_ERR_FORMAT, "tensor %s: the config says %d decoder layers", nm, hp->dec_layers);
    CT_TRY(norm(L, &w->final_ln_g, &w->final_ln_b, "transf_decoder._decoder.final_layer_norm", dd));
    ct_host_tensor head;
    if (L->lookup(L->ctx, "log_softmax.mlp.layer0.weight", &head)) {
        CT_TRY(linear(L, hi, &w->head_w, &w->head_b, "log_softmax.mlp.layer0", hp->vocab, dd, 0, 1));
    } else { /* tied to the token embedding, as transformers ties proj_out */
        CT_TRY(load(L, &w->head_w, hi, "transf_decoder._embedding.token_embedding.weight", 2, DIMS(hp->vocab, dd), 0));
        CT_TRY(load(L, &w->head_b, CT_DTYPE_F32, "log_softmax.mlp.layer0.bias", 1, DIMS(hp->vocab), 1));
    }
    return CT_OK;
}

ct_status ct_asr_weights_load(ct_backend *be, ct_weight_lookup_fn lookup, void *ctx, const ct_asr_hparams *hp,
                              ct_dtype wdtype, const ct_q8_plan *q8, ct_asr_weights *out) {
    memset(out, 0, sizeof *out);
    CT_TRY(check_hparams(hp));
    if (wdtype != CT_DTYPE_F32 && wdtype != CT_DTYPE_BF16 && wdtype != CT_DTYPE_F16 && wdtype != CT_DTYPE_Q8 &&
        wdtype != CT_DTYPE_Q8_0)
        return ct_fail(CT_ERR_INVALID_ARG, "weights: dtype %s (f32, bf16, f16, Q8 or Q8_0)", ct_dtype_name(wdtype));
    if (!be->ops->supports_weight(be, wdtype))
        return ct_fail(CT_ERR_UNSUPPORTED, "weights: backend %s has no %s matmul", be->ops->name, ct_dtype_name(wdtype));
    out->hp = *hp;
    out->wdtype = wdtype;
    if (wdtype == CT_DTYPE_Q8) out->q8 = q8 && (q8->all & CT_Q8_PLAN_SET) ? *q8 : ct_q8_default_plan(hp->enc_layers);
    if (wdtype == CT_DTYPE_Q8_0) out->q8 = q8 && (q8->all & CT_Q8_PLAN_SET) ? *q8 : ct_q80_default_plan(hp->enc_layers);
    loader L = {.be = be, .q8 = out->q8, .enc_layer = -1, .lookup = lookup, .ctx = ctx};
    ct_status s = load_all(&L, hp, wdtype, out);
    /* the deferred uploads have landed (and said whether they failed)
     * before the weights are used or their sources' pages dropped */
    if (s == CT_OK) s = be->ops->synchronize(be);
    for (size_t i = 0; s == CT_OK && i < L.n_late; i++)
        drop_pages(&L.late_drops[i], host_numel(&L.late_drops[i]) * ct_dtype_size(L.late_drops[i].dtype));
    free(L.late_drops);
    out->bytes = L.bytes;
    out->borrowed_bytes = L.borrowed;
    if (s != CT_OK) ct_asr_weights_free(out);
    return s;
}

static void release_span(ct_tensor *first, ct_tensor *last) {
    for (ct_tensor *t = first; t <= last; t++) ct_tensor_release(t);
}

void ct_asr_weights_free(ct_asr_weights *w) {
    if (!w) return;
    if (w->enc)
        for (int i = 0; i < w->hp.enc_layers; i++) release_span(&w->enc[i].ln_ff1_g, &w->enc[i].pos_c);
    if (w->dec)
        for (int i = 0; i < w->hp.dec_layers; i++) release_span(&w->dec[i].ln1_g, &w->dec[i].sqkv_b);
    free(w->enc);
    free(w->dec);
    release_span(&w->c0_w, &w->sub_w_cl);
    release_span(&w->proj_w, &w->emb_ln_b);
    release_span(&w->final_ln_g, &w->head_b);
    memset(w, 0, sizeof *w);
}
