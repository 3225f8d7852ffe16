/* cuda_asr.cu — the Cohere ASR model on the GPU: weight upload (bf16
 * matrices, fp32 vectors, BatchNorm folded into the depthwise conv, QKV and
 * the decoder's cross K/V fused into single GEMMs), the GPU mel frontend, the
 * encoder, and greedy decoding with device KV caches whose steps are replayed
 * through a CUDA graph. Per batch, one device workspace holds every
 * activation, so an oversized batch fails with CT_ERR_OOM in one place.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compute/cuda/cuda_asr.h"
#include "compute/cuda/cuda_asr_impl.h"

/* ---- weight loading ---------------------------------------------------------- */
typedef struct {
    ct_cuda *c;
    ct_cuda_weight_fn get;
    void *ctx;
    size_t *bytes;
} loader;

static ct_status fetch(loader *L, const char *name, int ndim, const int64_t *shape, ct_cuda_weight *w) {
    ct_status s = L->get(L->ctx, name, w);
    if (s != CT_OK) return s == CT_ERR_NOT_FOUND ? ct_fail(s, "weights: missing tensor %s", name) : s;
    if (ndim >= 0) {
        int64_t want = 1, have = 1;
        for (int i = 0; i < ndim; i++) want *= shape[i];
        for (int i = 0; i < w->ndim; i++) have *= w->shape[i];
        if (want != have)
            return ct_fail(CT_ERR_FORMAT, "weights: %s has %lld elements, expected %lld", name, (long long)have,
                           (long long)want);
    }
    if (w->dtype != CT_DTYPE_F32 && w->dtype != CT_DTYPE_BF16 && w->dtype != CT_DTYPE_F16)
        return ct_fail(CT_ERR_UNSUPPORTED, "weights: %s has dtype %s", name, ct_dtype_name(w->dtype));
    return CT_OK;
}

static size_t numel(const ct_cuda_weight *w) {
    size_t n = 1;
    for (int i = 0; i < w->ndim; i++) n *= (size_t)w->shape[i];
    return n;
}

/* Host float copy of a tensor (any float dtype), scaled. */
static ct_status to_f32(const ct_cuda_weight *w, float scale, float **out) {
    size_t n = numel(w);
    float *f = (float *)malloc(n * sizeof(float) + 1);
    if (!f) return ct_fail(CT_ERR_OOM, "weights: host buffer");
    for (size_t i = 0; i < n; i++) {
        float x;
        if (w->dtype == CT_DTYPE_F32) x = ((const float *)w->data)[i];
        else if (w->dtype == CT_DTYPE_BF16) x = ct_bf16_to_f32(((const uint16_t *)w->data)[i]);
        else x = ct_f16_to_f32(((const uint16_t *)w->data)[i]);
        f[i] = x * scale;
    }
    *out = f;
    return CT_OK;
}

static ct_status dalloc(loader *L, void **p, size_t n) {
    CT_TRY(ct_cuda_malloc(L->c, p, n));
    *L->bytes += n;
    return CT_OK;
}

/* Upload a tensor as bf16 at dst (+offset elements). */
static ct_status put_bf16(loader *L, uint16_t *dst, const ct_cuda_weight *w, float scale) {
    size_t n = numel(w);
    if (w->dtype == CT_DTYPE_BF16 && scale == 1.f) {
        CT_TRY(ct_cuda_h2d(L->c, dst, w->data, n * 2));
        return ct_cuda_sync(L->c);
    }
    float *f = NULL;
    CT_TRY(to_f32(w, scale, &f));
    ct_status s = ct_cuda_upload_bf16(L->c, dst, f, n);
    free(f);
    return s;
}

static ct_status vec_f32(loader *L, const char *name, int n, float scale, float **out) {
    ct_cuda_weight w;
    int64_t sh[1] = {n};
    CT_TRY(fetch(L, name, 1, sh, &w));
    float *f = NULL;
    CT_TRY(to_f32(&w, scale, &f));
    ct_status s = dalloc(L, (void **)out, (size_t)n * 4);
    if (s == CT_OK) s = ct_cuda_h2d(L->c, *out, f, (size_t)n * 4);
    if (s == CT_OK) s = ct_cuda_sync(L->c);
    free(f);
    return s;
}

static ct_status load_ln(loader *L, const char *prefix, int n, ln_t *ln) {
    char nm[256];
    snprintf(nm, sizeof nm, "%s.weight", prefix);
    CT_TRY(vec_f32(L, nm, n, 1.f, &ln->w));
    snprintf(nm, sizeof nm, "%s.bias", prefix);
    return vec_f32(L, nm, n, 1.f, &ln->b);
}

/* A Linear from one or more stacked tensors ("<prefix>.weight"/".bias").
 * bias_f32 picks the bias type (it must match the GEMM output type). */
static ct_status load_lin(loader *L, const char *const *prefixes, int np, int n_each, int k, int bias_f32,
                          float bias_scale, lin_t *lin) {
    lin->n = n_each * np;
    lin->k = k;
    lin->b = NULL;
    CT_TRY(dalloc(L, (void **)&lin->w, (size_t)lin->n * k * 2));
    char nm[256];
    int64_t sh[2] = {n_each, k};
    for (int i = 0; i < np; i++) {
        ct_cuda_weight w;
        snprintf(nm, sizeof nm, "%s.weight", prefixes[i]);
        CT_TRY(fetch(L, nm, 2, sh, &w));
        CT_TRY(put_bf16(L, lin->w + (size_t)i * n_each * k, &w, 1.f));
    }
    snprintf(nm, sizeof nm, "%s.bias", prefixes[0]);
    ct_cuda_weight bw;
    if (L->get(L->ctx, nm, &bw) != CT_OK) return CT_OK; /* no bias */
    CT_TRY(dalloc(L, &lin->b, (size_t)lin->n * (bias_f32 ? 4 : 2)));
    for (int i = 0; i < np; i++) {
        int64_t bs[1] = {n_each};
        snprintf(nm, sizeof nm, "%s.bias", prefixes[i]);
        CT_TRY(fetch(L, nm, 1, bs, &bw));
        float *f = NULL;
        CT_TRY(to_f32(&bw, bias_scale, &f));
        ct_status s;
        if (bias_f32) {
            s = ct_cuda_h2d(L->c, (float *)lin->b + (size_t)i * n_each, f, (size_t)n_each * 4);
            if (s == CT_OK) s = ct_cuda_sync(L->c);
        } else {
            s = ct_cuda_upload_bf16(L->c, (uint16_t *)lin->b + (size_t)i * n_each, f, (size_t)n_each);
        }
        free(f);
        CT_TRY(s);
    }
    return CT_OK;
}

static ct_status load_lin1(loader *L, const char *prefix, int n, int k, int bias_f32, float bias_scale, lin_t *lin) {
    return load_lin(L, &prefix, 1, n, k, bias_f32, bias_scale, lin);
}

static ct_status shape_of(loader *L, const char *name, ct_cuda_weight *w) { return fetch(L, name, -1, NULL, w); }

static int count_layers(loader *L, const char *fmt) {
    char nm[256];
    ct_cuda_weight w;
    int n = 0;
    for (;; n++) {
        snprintf(nm, sizeof nm, fmt, n);
        if (L->get(L->ctx, nm, &w) != CT_OK) return n;
    }
}

/* conv2d weight (C, 1, 3, 3) → device fp32 (C, 9) */
static ct_status load_conv9(loader *L, const char *prefix, int C, float **w, float **b) {
    char nm[256];
    ct_cuda_weight t;
    int64_t sh[4] = {C, 1, 3, 3};
    snprintf(nm, sizeof nm, "%s.weight", prefix);
    CT_TRY(fetch(L, nm, 4, sh, &t));
    float *f = NULL;
    CT_TRY(to_f32(&t, 1.f, &f));
    ct_status s = dalloc(L, (void **)w, (size_t)C * 36);
    if (s == CT_OK) s = ct_cuda_h2d(L->c, *w, f, (size_t)C * 36);
    if (s == CT_OK) s = ct_cuda_sync(L->c);
    free(f);
    CT_TRY(s);
    snprintf(nm, sizeof nm, "%s.bias", prefix);
    return vec_f32(L, nm, C, 1.f, b);
}

static ct_status upload_f32(loader *L, float **dst, const float *src, size_t n) {
    CT_TRY(dalloc(L, (void **)dst, n * 4));
    CT_TRY(ct_cuda_h2d(L->c, *dst, src, n * 4));
    return ct_cuda_sync(L->c);
}

/* Depthwise conv1d (d,1,K) + bias, BatchNorm (eval) folded: w' = w·g/√(var+eps),
 * b' = (b − mean)·g/√(var+eps) + beta. */
static ct_status load_dwconv(loader *L, const char *pre, int d, int K, float **w, float **b) {
    char nm[256];
    ct_cuda_weight t;
    float *wf = NULL, *bf = NULL, *g = NULL, *be = NULL, *mu = NULL, *var = NULL;
    int64_t sh[3] = {d, 1, K}, sv[1] = {d};
    ct_status s;
    snprintf(nm, sizeof nm, "%s.depthwise_conv.weight", pre);
    if ((s = fetch(L, nm, 3, sh, &t)) != CT_OK || (s = to_f32(&t, 1.f, &wf)) != CT_OK) goto done;
    snprintf(nm, sizeof nm, "%s.depthwise_conv.bias", pre);
    if (L->get(L->ctx, nm, &t) == CT_OK) {
        if ((s = fetch(L, nm, 1, sv, &t)) != CT_OK || (s = to_f32(&t, 1.f, &bf)) != CT_OK) goto done;
    }
    {
        const char *parts[4] = {"weight", "bias", "running_mean", "running_var"};
        float **dst[4] = {&g, &be, &mu, &var};
        for (int i = 0; i < 4; i++) {
            snprintf(nm, sizeof nm, "%s.batch_norm.%s", pre, parts[i]);
            if ((s = fetch(L, nm, 1, sv, &t)) != CT_OK || (s = to_f32(&t, 1.f, dst[i])) != CT_OK) goto done;
        }
    }
    {
        float *bo = (float *)malloc((size_t)d * 4);
        if (!bo) { s = ct_fail(CT_ERR_OOM, "weights"); goto done; }
        for (int c = 0; c < d; c++) {
            double sc = g[c] / sqrt((double)var[c] + 1e-5);
            for (int k = 0; k < K; k++) wf[c * K + k] = (float)(wf[c * K + k] * sc);
            bo[c] = (float)(((bf ? bf[c] : 0.f) - mu[c]) * sc + be[c]);
        }
        s = upload_f32(L, w, wf, (size_t)d * K);
        if (s == CT_OK) s = upload_f32(L, b, bo, (size_t)d);
        free(bo);
    }
done:
    free(wf); free(bf); free(g); free(be); free(mu); free(var);
    return s;
}

/* librosa's slaney mel filterbank as transformers builds it (float64 math,
 * float32 weights, then the float32 × float64 norm), transposed to (257, M),
 * the DFT basis for the 400-sample window placed at offset 56 of 512, and the
 * symmetric Hann window. */
static double hz_to_mel(double f) {
    double fsp = 200.0 / 3, minl = 1000.0 / fsp, step = log(6.4) / 27.0;
    return f >= 1000.0 ? minl + log(f / 1000.0) / step : f / fsp;
}
static double mel_to_hz(double m) {
    double fsp = 200.0 / 3, minl = 1000.0 / fsp, step = log(6.4) / 27.0;
    return m >= minl ? 1000.0 * exp(step * (m - minl)) : fsp * m;
}

static ct_status load_frontend(loader *L, ct_cuda_asr *m) {
    int M = m->d.n_mels, NB = 257;
    float *fbt = (float *)calloc((size_t)NB * M, 4), *dft = (float *)malloc((size_t)400 * 514 * 4),
          *win = (float *)malloc(400 * 4);
    double *mf = (double *)malloc((size_t)(M + 2) * 8);
    ct_status s = CT_OK;
    if (!fbt || !dft || !win || !mf) { s = ct_fail(CT_ERR_OOM, "mel tables"); goto done; }
    {
        double lo = hz_to_mel(0.0), hi = hz_to_mel(8000.0);
        for (int i = 0; i < M + 2; i++) mf[i] = mel_to_hz(lo + (hi - lo) * i / (M + 1));
        for (int i = 0; i < M; i++) {
            double enorm = 2.0 / (mf[i + 2] - mf[i]);
            for (int k = 0; k < NB; k++) {
                double f = k * 16000.0 / 512;
                double lower = -(mf[i] - f) / (mf[i + 1] - mf[i]);
                double upper = (mf[i + 2] - f) / (mf[i + 2] - mf[i + 1]);
                float w = (float)fmax(0.0, fmin(lower, upper));
                fbt[(size_t)k * M + i] = (float)(w * enorm);
            }
        }
        const double PI = 3.14159265358979323846;
        for (int k = 0; k < 400; k++) {
            win[k] = (float)(0.5 - 0.5 * cos(2.0 * PI * k / 399.0));
            for (int f = 0; f < NB; f++) {
                double a = 2.0 * PI * (double)f * (double)(k + 56) / 512.0;
                dft[(size_t)k * 514 + f] = (float)cos(a);
                dft[(size_t)k * 514 + NB + f] = (float)-sin(a);
            }
        }
    }
    if ((s = upload_f32(L, &m->mel_fb_t, fbt, (size_t)NB * M)) != CT_OK) goto done;
    if ((s = upload_f32(L, &m->dft, dft, (size_t)400 * 514)) != CT_OK) goto done;
    s = upload_f32(L, &m->window, win, 400);
done:
    free(fbt); free(dft); free(win); free(mf);
    return s;
}

static ct_status load_all(loader *L, ct_cuda_asr *m) {
    ct_cuda_asr_dims *d = &m->d;
    ct_cuda_weight w;
    char p[256], q[256], r[256];
    CT_TRY(shape_of(L, "encoder.pre_encode.conv.0.weight", &w));
    d->sub_channels = (int)w.shape[0];
    CT_TRY(shape_of(L, "encoder.pre_encode.out.weight", &w));
    d->d_enc = (int)w.shape[0];
    int F3 = (int)(w.shape[1] / d->sub_channels);
    d->n_mels = F3 * 8;
    d->enc_layers = count_layers(L, "encoder.layers.%d.norm_out.weight");
    CT_TRY(shape_of(L, "encoder.layers.0.feed_forward1.linear1.weight", &w));
    d->enc_ff = (int)w.shape[0];
    CT_TRY(shape_of(L, "encoder.layers.0.self_attn.pos_bias_u", &w));
    d->enc_heads = (int)w.shape[0];
    CT_TRY(shape_of(L, "encoder.layers.0.conv.depthwise_conv.weight", &w));
    d->conv_kernel = (int)w.shape[w.ndim - 1];
    CT_TRY(shape_of(L, "transf_decoder._embedding.token_embedding.weight", &w));
    d->vocab = (int)w.shape[0];
    d->d_dec = (int)w.shape[1];
    CT_TRY(shape_of(L, "transf_decoder._embedding.position_embedding.pos_enc", &w));
    d->max_pos = (int)w.shape[0];
    d->dec_layers = count_layers(L, "transf_decoder._decoder.layers.%d.layer_norm_1.weight");
    CT_TRY(shape_of(L, "transf_decoder._decoder.layers.0.third_sub_layer.dense_in.weight", &w));
    d->dec_ff = (int)w.shape[0];
    /* the tensors do not say how the decoder splits heads: the caller's
     * config does; the released model (and its default) uses 128-wide heads */
    if (d->dec_heads <= 0) d->dec_heads = d->d_dec / 128 > 0 ? d->d_dec / 128 : 1;
    if (d->d_dec % d->dec_heads || (d->d_dec / d->dec_heads) % 8)
        return ct_fail(CT_ERR_UNSUPPORTED, "weights: decoder width %d in %d heads", d->d_dec, d->dec_heads);
    if (d->enc_layers < 1 || d->dec_layers < 1 || d->d_enc % d->enc_heads || d->n_mels % 8 || d->d_enc > 2048 ||
        d->d_dec > 2048)
        return ct_fail(CT_ERR_FORMAT, "weights: unsupported model shape (enc %d×%d, dec %d×%d)", d->enc_layers,
                       d->d_enc, d->dec_layers, d->d_dec);
    int C = d->sub_channels, D = d->d_enc, FF = d->enc_ff;

    /* subsampling */
    {
        int64_t sh[4] = {C, 1, 3, 3};
        CT_TRY(fetch(L, "encoder.pre_encode.conv.0.weight", 4, sh, &w));
        CT_TRY(load_conv9(L, "encoder.pre_encode.conv.0", C, &m->conv0_w, &m->conv0_b));
        CT_TRY(load_conv9(L, "encoder.pre_encode.conv.2", C, &m->dw1_w, &m->dw1_b));
        CT_TRY(load_conv9(L, "encoder.pre_encode.conv.5", C, &m->dw2_w, &m->dw2_b));
        CT_TRY(load_lin1(L, "encoder.pre_encode.conv.3", C, C, 0, 1.f, &m->pw1));
        CT_TRY(load_lin1(L, "encoder.pre_encode.conv.6", C, C, 0, 1.f, &m->pw2));
        /* out: (D, C·F3) indexed c·F3+f → columns reordered to f·C+c (channels-last flatten) */
        int K = C * F3;
        int64_t so[2] = {D, K};
        CT_TRY(fetch(L, "encoder.pre_encode.out.weight", 2, so, &w));
        float *f = NULL, *g = (float *)malloc((size_t)D * K * 4);
        if (!g) return ct_fail(CT_ERR_OOM, "weights");
        ct_status s = to_f32(&w, 1.f, &f);
        if (s != CT_OK) { free(g); return s; }
        for (int o = 0; o < D; o++)
            for (int c = 0; c < C; c++)
                for (int ff = 0; ff < F3; ff++) g[(size_t)o * K + ff * C + c] = f[(size_t)o * K + c * F3 + ff];
        free(f);
        m->sub_out.n = D;
        m->sub_out.k = K;
        s = dalloc(L, (void **)&m->sub_out.w, (size_t)D * K * 2);
        if (s == CT_OK) s = ct_cuda_upload_bf16(L->c, m->sub_out.w, g, (size_t)D * K);
        free(g);
        CT_TRY(s);
        CT_TRY(vec_f32(L, "encoder.pre_encode.out.bias", D, 1.f, (float **)&m->sub_out.b));
    }
    m->enc = (enc_layer *)calloc((size_t)d->enc_layers, sizeof(enc_layer));
    if (!m->enc) return ct_fail(CT_ERR_OOM, "weights");
    for (int i = 0; i < d->enc_layers; i++) {
        enc_layer *e = &m->enc[i];
        snprintf(p, sizeof p, "encoder.layers.%d", i);
#define LN(field, name) snprintf(q, sizeof q, "%s." name, p); CT_TRY(load_ln(L, q, D, &e->field))
        LN(ln_ff1, "norm_feed_forward1");
        LN(ln_att, "norm_self_att");
        LN(ln_conv, "norm_conv");
        LN(ln_ff2, "norm_feed_forward2");
        LN(ln_out, "norm_out");
#undef LN
        snprintf(q, sizeof q, "%s.feed_forward1.linear1", p);
        CT_TRY(load_lin1(L, q, FF, D, 0, 1.f, &e->ff1a));
        snprintf(q, sizeof q, "%s.feed_forward1.linear2", p);
        CT_TRY(load_lin1(L, q, D, FF, 1, 0.5f, &e->ff1b));
        snprintf(q, sizeof q, "%s.feed_forward2.linear1", p);
        CT_TRY(load_lin1(L, q, FF, D, 0, 1.f, &e->ff2a));
        snprintf(q, sizeof q, "%s.feed_forward2.linear2", p);
        CT_TRY(load_lin1(L, q, D, FF, 1, 0.5f, &e->ff2b));
        char a0[256], a1[256], a2[256];
        snprintf(a0, sizeof a0, "%s.self_attn.linear_q", p);
        snprintf(a1, sizeof a1, "%s.self_attn.linear_k", p);
        snprintf(a2, sizeof a2, "%s.self_attn.linear_v", p);
        const char *qkv[3] = {a0, a1, a2};
        CT_TRY(load_lin(L, qkv, 3, D, D, 0, 1.f, &e->qkv));
        snprintf(q, sizeof q, "%s.self_attn.linear_pos", p);
        CT_TRY(load_lin1(L, q, D, D, 0, 1.f, &e->pos));
        snprintf(q, sizeof q, "%s.self_attn.linear_out", p);
        CT_TRY(load_lin1(L, q, D, D, 1, 1.f, &e->out));
        /* u folded into the q bias: (q+u)·k needs no extra term, and
         * (q+v)·R = (q+u)·R + (v−u)·R, so v is stored as v − u (the position
         * term per head and offset is then tiny). */
        {
            int64_t sh[2] = {d->enc_heads, D / d->enc_heads}, sb[1] = {D};
            float *fu = NULL, *fv = NULL, *fb = NULL;
            snprintf(q, sizeof q, "%s.self_attn.pos_bias_u", p);
            ct_status s = fetch(L, q, 2, sh, &w);
            if (s == CT_OK) s = to_f32(&w, 1.f, &fu);
            snprintf(q, sizeof q, "%s.self_attn.pos_bias_v", p);
            if (s == CT_OK) s = fetch(L, q, 2, sh, &w);
            if (s == CT_OK) s = to_f32(&w, 1.f, &fv);
            snprintf(q, sizeof q, "%s.self_attn.linear_q.bias", p);
            if (s == CT_OK && L->get(L->ctx, q, &w) == CT_OK) {
                s = fetch(L, q, 1, sb, &w);
                if (s == CT_OK) s = to_f32(&w, 1.f, &fb);
            }
            if (s == CT_OK && !e->qkv.b) { /* no biases: a zero one to carry u */
                s = dalloc(L, &e->qkv.b, (size_t)3 * D * 2);
                if (s == CT_OK) s = ct_cuda_memset(L->c, e->qkv.b, 0, (size_t)3 * D * 2);
            }
            if (s == CT_OK) {
                for (int i = 0; i < D; i++) {
                    fv[i] -= fu[i];
                    fu[i] += fb ? fb[i] : 0.f; /* now bq + u */
                }
                s = ct_cuda_upload_bf16(L->c, (uint16_t *)e->qkv.b, fu, (size_t)D);
            }
            if (s == CT_OK) s = upload_f32(L, &e->v, fv, (size_t)D);
            free(fu); free(fv); free(fb);
            CT_TRY(s);
        }
        snprintf(q, sizeof q, "%s.conv.pointwise_conv1", p);
        CT_TRY(load_lin1(L, q, 2 * D, D, 0, 1.f, &e->pw1));
        snprintf(q, sizeof q, "%s.conv.pointwise_conv2", p);
        CT_TRY(load_lin1(L, q, D, D, 1, 1.f, &e->pw2));
        snprintf(q, sizeof q, "%s.conv", p);
        CT_TRY(load_dwconv(L, q, D, d->conv_kernel, &e->dw_w, &e->dw_b));
    }
    /* decoder */
    int DD = d->d_dec;
    CT_TRY(load_lin1(L, "encoder_decoder_proj", DD, D, 0, 1.f, &m->proj));
    {
        int64_t sh[2] = {d->vocab, DD};
        CT_TRY(fetch(L, "transf_decoder._embedding.token_embedding.weight", 2, sh, &w));
        CT_TRY(dalloc(L, (void **)&m->tok_emb, (size_t)d->vocab * DD * 2));
        CT_TRY(put_bf16(L, m->tok_emb, &w, 1.f));
        int64_t sp[2] = {d->max_pos, DD};
        CT_TRY(fetch(L, "transf_decoder._embedding.position_embedding.pos_enc", 2, sp, &w));
        CT_TRY(dalloc(L, (void **)&m->pos_emb, (size_t)d->max_pos * DD * 2));
        CT_TRY(put_bf16(L, m->pos_emb, &w, 1.f));
    }
    CT_TRY(load_ln(L, "transf_decoder._embedding.layer_norm", DD, &m->emb_ln));
    CT_TRY(load_ln(L, "transf_decoder._decoder.final_layer_norm", DD, &m->final_ln));
    m->dec = (dec_layer *)calloc((size_t)d->dec_layers, sizeof(dec_layer));
    if (!m->dec) return ct_fail(CT_ERR_OOM, "weights");
    char **kvn = (char **)calloc((size_t)d->dec_layers * 2, sizeof(char *));
    if (!kvn) return ct_fail(CT_ERR_OOM, "weights");
    ct_status s = CT_OK;
    for (int i = 0; i < d->dec_layers && s == CT_OK; i++) {
        dec_layer *e = &m->dec[i];
        snprintf(p, sizeof p, "transf_decoder._decoder.layers.%d", i);
#define LN(field, name) snprintf(q, sizeof q, "%s." name, p); if ((s = load_ln(L, q, DD, &e->field)) != CT_OK) break
        LN(ln1, "layer_norm_1");
        LN(ln2, "layer_norm_2");
        LN(ln3, "layer_norm_3");
#undef LN
        char a0[256], a1[256], a2[256];
        snprintf(a0, sizeof a0, "%s.first_sub_layer.query_net", p);
        snprintf(a1, sizeof a1, "%s.first_sub_layer.key_net", p);
        snprintf(a2, sizeof a2, "%s.first_sub_layer.value_net", p);
        const char *qkv[3] = {a0, a1, a2};
        if ((s = load_lin(L, qkv, 3, DD, DD, 0, 1.f, &e->qkv)) != CT_OK) break;
        snprintf(q, sizeof q, "%s.first_sub_layer.out_projection", p);
        if ((s = load_lin1(L, q, DD, DD, 1, 1.f, &e->so)) != CT_OK) break;
        snprintf(q, sizeof q, "%s.second_sub_layer.query_net", p);
        if ((s = load_lin1(L, q, DD, DD, 0, 1.f, &e->q)) != CT_OK) break;
        snprintf(q, sizeof q, "%s.second_sub_layer.out_projection", p);
        if ((s = load_lin1(L, q, DD, DD, 1, 1.f, &e->co)) != CT_OK) break;
        snprintf(q, sizeof q, "%s.third_sub_layer.dense_in", p);
        if ((s = load_lin1(L, q, d->dec_ff, DD, 0, 1.f, &e->fc1)) != CT_OK) break;
        snprintf(q, sizeof q, "%s.third_sub_layer.dense_out", p);
        if ((s = load_lin1(L, q, DD, d->dec_ff, 1, 1.f, &e->fc2)) != CT_OK) break;
        snprintf(r, sizeof r, "%s.second_sub_layer.key_net", p);
        kvn[2 * i] = strdup(r);
        snprintf(r, sizeof r, "%s.second_sub_layer.value_net", p);
        kvn[2 * i + 1] = strdup(r);
        if (!kvn[2 * i] || !kvn[2 * i + 1]) s = ct_fail(CT_ERR_OOM, "weights");
    }
    if (s == CT_OK) s = load_lin(L, (const char *const *)kvn, 2 * d->dec_layers, DD, DD, 0, 1.f, &m->cross_kv);
    for (int i = 0; i < 2 * d->dec_layers; i++) free(kvn[i]);
    free(kvn);
    CT_TRY(s);
    CT_TRY(load_lin1(L, "log_softmax.mlp.layer0", d->vocab, DD, 1, 1.f, &m->head));
    return load_frontend(L, m);
}

static void free_lin(lin_t *l) {
    cudaFree(l->w);
    cudaFree(l->b);
}
static void free_ln(ln_t *l) {
    cudaFree(l->w);
    cudaFree(l->b);
}

extern "C" void ct_cuda_asr_free(ct_cuda_asr *m) {
    if (!m) return;
    cudaDeviceSynchronize();
    void *vs[] = {m->conv0_w, m->conv0_b, m->dw1_w, m->dw1_b, m->dw2_w, m->dw2_b, m->tok_emb, m->pos_emb,
                  m->mel_fb_t, m->dft, m->window};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) cudaFree(vs[i]);
    free_lin(&m->pw1); free_lin(&m->pw2); free_lin(&m->sub_out); free_lin(&m->proj); free_lin(&m->cross_kv);
    free_lin(&m->head);
    free_ln(&m->emb_ln); free_ln(&m->final_ln);
    if (m->enc)
        for (int i = 0; i < m->d.enc_layers; i++) {
            enc_layer *e = &m->enc[i];
            free_ln(&e->ln_ff1); free_ln(&e->ln_att); free_ln(&e->ln_conv); free_ln(&e->ln_ff2); free_ln(&e->ln_out);
            lin_t *ls[] = {&e->ff1a, &e->ff1b, &e->ff2a, &e->ff2b, &e->qkv, &e->pos, &e->out, &e->pw1, &e->pw2};
            for (size_t k = 0; k < sizeof ls / sizeof ls[0]; k++) free_lin(ls[k]);
            cudaFree(e->u); cudaFree(e->v); cudaFree(e->dw_w); cudaFree(e->dw_b);
        }
    if (m->dec)
        for (int i = 0; i < m->d.dec_layers; i++) {
            dec_layer *e = &m->dec[i];
            free_ln(&e->ln1); free_ln(&e->ln2); free_ln(&e->ln3);
            lin_t *ls[] = {&e->qkv, &e->so, &e->q, &e->co, &e->fc1, &e->fc2};
            for (size_t k = 0; k < sizeof ls / sizeof ls[0]; k++) free_lin(ls[k]);
        }
    free(m->enc);
    free(m->dec);
    free(m);
}

extern "C" ct_status ct_cuda_asr_create(ct_cuda *c, ct_cuda_weight_fn get, void *ctx, ct_cuda_asr **out) {
    return ct_cuda_asr_create_heads(c, get, ctx, 0, out);
}

extern "C" ct_status ct_cuda_asr_create_heads(ct_cuda *c, ct_cuda_weight_fn get, void *ctx, int dec_heads,
                                              ct_cuda_asr **out) {
    *out = NULL;
    ct_cuda_asr *m = (ct_cuda_asr *)calloc(1, sizeof *m);
    if (!m) return ct_fail(CT_ERR_OOM, "model");
    m->c = c;
    m->d.dec_heads = dec_heads;
    loader L = {c, get, ctx, &m->weight_bytes};
    ct_status s = load_all(&L, m);
    if (s != CT_OK) {
        ct_cuda_asr_free(m);
        return s;
    }
    *out = m;
    return CT_OK;
}

extern "C" const ct_cuda_asr_dims *ct_cuda_asr_get_dims(const ct_cuda_asr *m) { return &m->d; }
extern "C" size_t ct_cuda_asr_weight_bytes(const ct_cuda_asr *m) { return m->weight_bytes; }
