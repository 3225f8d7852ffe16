/* cuda_asr_run.cu — one batch through the CUDA model: GPU mel frontend (or
 * given features), subsampling, the Conformer encoder (relative-position
 * attention in one fused kernel, or as batched GEMMs + shift/mask/softmax on
 * the reference path: CT_CUDA_ATTN=unfused), the encoder→decoder
 * projection and every layer's cross K/V in one GEMM, then greedy decoding
 * one position per step for all rows, replayed through a CUDA graph.
 * All activations live in one workspace allocation per batch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <thread>
#include <vector>

#include "compute/cuda/cuda_asr_impl.h"
extern "C" {
#include "core/fs.h" /* ct_now: stage timings */
}

/* Bump allocator over the batch workspace; a first pass with base NULL sizes it. */
typedef struct { char *base; size_t off; } bump;
static void *take(bump *b, size_t n) {
    size_t o = (b->off + 255) & ~(size_t)255;
    b->off = o + n;
    return b->base ? b->base + o : NULL;
}

/* bd rows padded to 8 floats: cuBLAS picks far faster kernels for 32-byte aligned rows */
static int bd_ld(int T) { return (2 * T - 1 + 7) & ~7; }

static int next_len(int L) { return L > 0 ? (L - 1) / 2 + 1 : 0; }

typedef struct {
    int B, Tm, T1, T2, T3, F1, F2, F3, S;
    int fused; /* encoder attention in one kernel; 0: the unfused reference path (score buffers allocated) */
    int dec_skip; /* finished rows skip their decoder attention (CT_CUDA_DEC_SKIP=0: off, for A/B) */
    int *dL0, *dL1, *dL2, *dL3; /* device lengths */
    float *pcm, *frames, *spec, *power, *feats;
    uint16_t *y1, *y2a, *y2b, *y3a, *y3b;
    float *x;
    uint16_t *a, *big, *o, *pe, *rp, *P, *ymid;
    float *ac, *bd, *vr;
    uint16_t *encb, *encp, *ckv, *scache;
    float *dx, *logits;
    uint16_t *da, *dqkv, *dq, *dout, *dh;
    int *tok, *out, *pos, *finished, *prompt, *rowlim, *forced;
    int has_forced;
} plan;

static void layout(ct_cuda_asr *m, plan *p, bump *b, int with_pcm, size_t ns) {
    const ct_cuda_asr_dims *d = &m->d;
    int B = p->B, C = d->sub_channels, D = d->d_enc, H = d->enc_heads, T = p->T3;
    size_t R = (size_t)B * T, Rm = (size_t)B * p->Tm;
    p->dL0 = (int *)take(b, B * 4); p->dL1 = (int *)take(b, B * 4);
    p->dL2 = (int *)take(b, B * 4); p->dL3 = (int *)take(b, B * 4);
    if (with_pcm) {
        p->pcm = (float *)take(b, (size_t)B * ns * 4);
        p->frames = (float *)take(b, Rm * 400 * 4);
        p->spec = (float *)take(b, Rm * 514 * 4);
        p->power = (float *)take(b, Rm * 257 * 4);
    }
    p->feats = (float *)take(b, Rm * d->n_mels * 4);
    p->y1 = (uint16_t *)take(b, (size_t)B * p->T1 * p->F1 * C * 2);
    p->y2a = (uint16_t *)take(b, (size_t)B * p->T2 * p->F2 * C * 2);
    p->y2b = (uint16_t *)take(b, (size_t)B * p->T2 * p->F2 * C * 2);
    p->y3a = (uint16_t *)take(b, (size_t)B * p->T3 * p->F3 * C * 2);
    p->y3b = (uint16_t *)take(b, (size_t)B * p->T3 * p->F3 * C * 2);
    p->x = (float *)take(b, R * D * 4);
    p->a = (uint16_t *)take(b, R * D * 2);
    size_t bigw = d->enc_ff > 3 * D ? d->enc_ff : 3 * D;
    p->big = (uint16_t *)take(b, R * bigw * 2);
    p->o = (uint16_t *)take(b, R * D * 2);
    p->vr = (float *)take(b, (size_t)H * (2 * T - 1) * 4);
    p->ymid = (uint16_t *)take(b, R * D * 2);
    p->pe = (uint16_t *)take(b, (size_t)(2 * T - 1) * D * 2);
    p->rp = (uint16_t *)take(b, (size_t)(2 * T - 1) * D * 2);
    if (!p->fused) { /* 128 × 30 s: 1.9 GB of scores the fused kernel never writes */
        p->ac = (float *)take(b, (size_t)H * R * T * 4);
        p->bd = (float *)take(b, (size_t)H * R * bd_ld(T) * 4);
        p->P = (uint16_t *)take(b, (size_t)H * R * T * 2);
    }
    int DD = d->d_dec, L = d->dec_layers;
    p->encb = (uint16_t *)take(b, R * D * 2);
    p->encp = (uint16_t *)take(b, R * DD * 2);
    p->ckv = (uint16_t *)take(b, R * (size_t)L * 2 * DD * 2);
    p->scache = (uint16_t *)take(b, (size_t)L * B * p->S * 2 * DD * 2);
    p->dx = (float *)take(b, (size_t)B * DD * 4);
    p->logits = (float *)take(b, (size_t)B * d->vocab * 4);
    p->da = (uint16_t *)take(b, (size_t)B * DD * 2);
    p->dqkv = (uint16_t *)take(b, (size_t)B * 3 * DD * 2);
    p->dq = (uint16_t *)take(b, (size_t)B * DD * 2);
    p->dout = (uint16_t *)take(b, (size_t)B * DD * 2);
    p->dh = (uint16_t *)take(b, (size_t)B * d->dec_ff * 2);
    p->tok = (int *)take(b, B * 4);
    p->out = (int *)take(b, (size_t)B * p->S * 4);
    p->pos = (int *)take(b, 4);
    p->finished = (int *)take(b, B * 4);
    p->prompt = (int *)take(b, (size_t)p->S * 4);
    p->rowlim = (int *)take(b, (size_t)B * 4);
    if (p->has_forced) p->forced = (int *)take(b, (size_t)B * p->S * 4); /* (B, max_new) fits in (B, S) */
}

static ct_status gemm(ct_cuda *c, int M, const uint16_t *A, const lin_t *w, void *D, int d_f32, float alpha,
                      float beta, ct_cuda_act act) {
    ct_cuda_gemm_args g = {M, w->n, w->k, A, w->k, w->w, w->k, w->b, D, w->n, d_f32, alpha, beta, act};
    return ct_cuda_gemm(c, &g);
}

/* Copy each row's PCM into the pinned staging buffer (rows ns apart). One
 * thread copies ≈ 5–10 GB/s, so 128 × 30 s (245 MB) took most of the 50 ms
 * the frontend spent per batch with the GPU idle; the rows are split over up
 * to 8 threads. */
static void stage_pcm(float *dst, size_t ns, const float *const *pcm, const size_t *n, int B) {
    unsigned hw = std::thread::hardware_concurrency();
    int nt = (int)(hw < 2 ? 1 : hw < 8 ? hw : 8);
    if (nt > B) nt = B;
    size_t total = 0;
    for (int b = 0; b < B; b++) total += n[b];
    if (nt <= 1 || total < ((size_t)1 << 22)) nt = 1; /* under 16 MB: threads cost more than they save */
    auto copy = [=](int t) {
        for (int b = t; b < B; b += nt) memcpy(dst + (size_t)b * ns, pcm[b], n[b] * sizeof(float));
    };
    std::vector<std::thread> th;
    try {
        for (int t = 1; t < nt; t++) th.emplace_back(copy, t);
    } catch (...) { /* no thread: the caller's thread copies that share too */
        for (int t = (int)th.size() + 1; t < nt; t++) copy(t);
    }
    copy(0);
    for (auto &x : th) x.join();
}

static ct_status frontend(ct_cuda_asr *m, plan *p, const ct_cuda_asr_request *rq, size_t ns) {
    ct_cuda *c = m->c;
    int B = p->B, M = m->d.n_mels;
    size_t need = (size_t)B * ns;
    if (m->pinned_floats < need) {
        ct_cuda_host_free(m->pinned);
        m->pinned = NULL;
        m->pinned_floats = 0;
        CT_TRY(ct_cuda_host_alloc((void **)&m->pinned, need * 4));
        m->pinned_floats = need;
    }
    int *n = (int *)malloc(B * sizeof(int));
    if (!n) return ct_fail(CT_ERR_OOM, "batch");
    for (int b = 0; b < B; b++) n[b] = (int)rq->n_samples[b];
    stage_pcm(m->pinned, ns, rq->pcm, rq->n_samples, B);
    ct_status s = ct_cuda_h2d(c, p->pcm, m->pinned, need * 4);
    int *dn = (int *)p->power; /* the sample counts: power is written only after framing, so it is free scratch */
    if (s == CT_OK) s = ct_cuda_h2d(c, dn, n, B * sizeof(int));
    if (s == CT_OK) s = ct_cuda_mel_frames(c, p->frames, p->pcm, dn, B, (int)ns, p->Tm, m->window);
    if (s == CT_OK) s = ct_cuda_sync(c); /* n[] lives on the host stack frame until here */
    free(n);
    CT_TRY(s);
    size_t rows = (size_t)B * p->Tm;
    CT_TRY(ct_cuda_sgemm(c, (int)rows, 514, 400, p->frames, 400, m->dft, 514, p->spec, 514));
    CT_TRY(ct_cuda_mel_power(c, p->power, p->spec, rows));
    CT_TRY(ct_cuda_sgemm(c, (int)rows, M, 257, p->power, 257, m->mel_fb_t, M, p->feats, M));
    return ct_cuda_mel_normalize(c, p->feats, p->dL0, B, p->Tm, M);
}

/* Optional per-op timing (CT_CUDA_PROFILE=1): an event before and after each
 * launch group, summed per name: every encoder op, and the decoder's first
 * step (run eagerly; later steps replay as a graph), names prefixed dec_.
 * pf NULL: no timing (inside a graph capture). */
typedef struct {
    int on, n;
    cudaEvent_t ev[2][4096];
    const char *name[4096];
} prof;

#define PROF(pf, st, nm, expr)                                               \
    do {                                                                     \
        if ((pf) && (pf)->on && (pf)->n < 4096) cudaEventRecord((pf)->ev[0][(pf)->n], st); \
        CT_TRY(expr);                                                        \
        if ((pf) && (pf)->on && (pf)->n < 4096) {                            \
            cudaEventRecord((pf)->ev[1][(pf)->n], st);                       \
            (pf)->name[(pf)->n++] = nm;                                      \
        }                                                                    \
    } while (0)

static ct_status encoder(ct_cuda_asr *m, plan *p, prof *pf) {
    ct_cuda *c = m->c;
    cudaStream_t st = c->stream;
    const ct_cuda_asr_dims *d = &m->d;
    int B = p->B, C = d->sub_channels, D = d->d_enc, H = d->enc_heads, Dh = D / H, T = p->T3, FF = d->enc_ff;
    int R = B * T;
    PROF(pf, st, "subsampling", ct_cuda_subsample_conv0(c, p->y1, p->feats, m->conv0_w, m->conv0_b, p->dL0, p->dL1, B, p->Tm, d->n_mels, C));
    PROF(pf, st, "subsampling", ct_cuda_subsample_dw(c, p->y2a, p->y1, m->dw1_w, m->dw1_b, p->dL1, B, p->T1, p->F1, C));
    PROF(pf, st, "subsampling", gemm(c, B * p->T2 * p->F2, p->y2a, &m->pw1, p->y2b, 0, 1.f, 0.f, CT_CUDA_ACT_RELU));
    PROF(pf, st, "subsampling", ct_cuda_subsample_dw(c, p->y3a, p->y2b, m->dw2_w, m->dw2_b, p->dL2, B, p->T2, p->F2, C));
    PROF(pf, st, "subsampling", gemm(c, R * p->F3, p->y3a, &m->pw2, p->y3b, 0, 1.f, 0.f, CT_CUDA_ACT_RELU));
    PROF(pf, st, "subsampling", ct_cuda_mask_rows(c, p->y3b, p->dL3, B, T, (size_t)p->F3 * C));
    PROF(pf, st, "subsampling", gemm(c, R, p->y3b, &m->sub_out, p->x, 1, 1.f, 0.f, CT_CUDA_ACT_NONE));
    float scale = 1.f / sqrtf((float)Dh);
    long long sq = (long long)T * 3 * D;
    CT_TRY(ct_cuda_relpos_table(c, p->pe, T, D));
    PROF(pf, st, "layernorm", ct_cuda_layernorm(c, p->a, p->x, m->enc[0].ln_ff1.w, m->enc[0].ln_ff1.b, R, D, 1e-5f));
    for (int l = 0; l < d->enc_layers; l++) {
        enc_layer *e = &m->enc[l];
        /* x += 0.5 · FF1(LN(x)); a already holds LN_ff1(x) */
        PROF(pf, st, "gemm_ff_in", gemm(c, R, p->a, &e->ff1a, p->big, 0, 1.f, 0.f, CT_CUDA_ACT_NONE));
        PROF(pf, st, "silu", ct_cuda_silu(c, p->big, (size_t)R * FF));
        PROF(pf, st, "gemm_ff_out", gemm(c, R, p->big, &e->ff1b, p->x, 1, 0.5f, 1.f, CT_CUDA_ACT_NONE));
        /* x += MHSA(LN(x)) */
        PROF(pf, st, "layernorm", ct_cuda_layernorm(c, p->a, p->x, e->ln_att.w, e->ln_att.b, R, D, 1e-5f));
        PROF(pf, st, "gemm_qkv", gemm(c, R, p->a, &e->qkv, p->big, 0, 1.f, 0.f, CT_CUDA_ACT_NONE));
        PROF(pf, st, "gemm_pos", gemm(c, 2 * T - 1, p->pe, &e->pos, p->rp, 0, 1.f, 0.f, CT_CUDA_ACT_NONE));
        PROF(pf, st, "attn_uv", ct_cuda_relattn_uv(c, NULL, p->vr, p->big, p->rp, e->u, e->v, B, T, H, Dh));
        if (p->fused) {
            PROF(pf, st, "attn_fused", ct_cuda_relattn_fused(c, p->o, p->big, p->rp, p->vr, p->dL3, B, T, H, Dh, scale));
        } else {
            /* reference path: every score through memory. ac (H,B,T,T) = q·kᵀ, bd (H,R,2T−1) = q·rpᵀ,
             * GEMMs straight on the qkv rows; shift + mask + softmax; P·V per head into o's columns */
            for (int h = 0; h < H; h++) {
                ct_cuda_bgemm_args ac = {T, T, Dh, B, p->big + h * Dh, 3 * D, sq, p->big + D + h * Dh, 3 * D, sq, 1,
                                         p->ac + (size_t)h * B * T * T, T, (long long)T * T, 1, 1.f};
                PROF(pf, st, "attn_ac_gemm", ct_cuda_bgemm(c, &ac));
            }
            ct_cuda_bgemm_args bd = {R, 2 * T - 1, Dh, H, p->big, 3 * D, Dh, p->rp, D, Dh, 1,
                                     p->bd, bd_ld(T), (long long)R * bd_ld(T), 1, 1.f};
            PROF(pf, st, "attn_bd_gemm", ct_cuda_bgemm(c, &bd));
            PROF(pf, st, "attn_softmax", ct_cuda_relattn_softmax_uv(c, p->P, p->ac, p->bd, (size_t)bd_ld(T), NULL,
                                                                    p->vr, p->dL3, B, T, H, scale));
            for (int h = 0; h < H; h++) {
                ct_cuda_bgemm_args pv = {T, Dh, T, B, p->P + (size_t)h * B * T * T, T, (long long)T * T,
                                         p->big + 2 * D + h * Dh, 3 * D, sq, 0, p->o + h * Dh, D, (long long)T * D, 0,
                                         1.f};
                PROF(pf, st, "attn_pv_gemm", ct_cuda_bgemm(c, &pv));
            }
        }
        PROF(pf, st, "gemm_attn_out", gemm(c, R, p->o, &e->out, p->x, 1, 1.f, 1.f, CT_CUDA_ACT_NONE));
        /* x += Conv(LN(x)) */
        PROF(pf, st, "layernorm", ct_cuda_layernorm(c, p->a, p->x, e->ln_conv.w, e->ln_conv.b, R, D, 1e-5f));
        PROF(pf, st, "gemm_pw1", gemm(c, R, p->a, &e->pw1, p->big, 0, 1.f, 0.f, CT_CUDA_ACT_NONE));
        PROF(pf, st, "glu_dwconv", ct_cuda_glu_dwconv_silu(c, p->ymid, p->big, e->dw_w, e->dw_b, p->dL3, B, T, D, d->conv_kernel));
        PROF(pf, st, "gemm_pw2", gemm(c, R, p->ymid, &e->pw2, p->x, 1, 1.f, 1.f, CT_CUDA_ACT_NONE));
        /* x += 0.5 · FF2(LN(x)); x = LN(x) (fused with the next layer's first LN) */
        PROF(pf, st, "layernorm", ct_cuda_layernorm(c, p->a, p->x, e->ln_ff2.w, e->ln_ff2.b, R, D, 1e-5f));
        PROF(pf, st, "gemm_ff_in", gemm(c, R, p->a, &e->ff2a, p->big, 0, 1.f, 0.f, CT_CUDA_ACT_NONE));
        PROF(pf, st, "silu", ct_cuda_silu(c, p->big, (size_t)R * FF));
        PROF(pf, st, "gemm_ff_out", gemm(c, R, p->big, &e->ff2b, p->x, 1, 0.5f, 1.f, CT_CUDA_ACT_NONE));
        if (l + 1 < d->enc_layers)
            PROF(pf, st, "layernorm", ct_cuda_layernorm2(c, p->x, p->a, p->x, e->ln_out.w, e->ln_out.b,
                                                         m->enc[l + 1].ln_ff1.w, m->enc[l + 1].ln_ff1.b, R, D, 1e-5f));
        else
            PROF(pf, st, "layernorm", ct_cuda_layernorm_f32(c, p->x, p->x, e->ln_out.w, e->ln_out.b, R, D, 1e-5f));
    }
    return CT_OK;
}

/* One decoder position for all rows: reads tok/pos on the device, writes the
 * next tokens and advances pos, so the same launches replay as a graph. */
static ct_status dec_step(ct_cuda_asr *m, plan *p, const ct_cuda_asr_request *rq, prof *pf) {
    cudaStream_t st = m->c->stream;
    ct_cuda *c = m->c;
    const ct_cuda_asr_dims *d = &m->d;
    int B = p->B, DD = d->d_dec, H = d->dec_heads, Dh = DD / H, L = d->dec_layers;
    size_t ldkv = (size_t)L * 2 * DD;
    const int *skip = p->dec_skip ? p->finished : NULL;
    PROF(pf, st, "dec_embed", ct_cuda_dec_embed(c, p->dx, m->tok_emb, m->pos_emb, p->tok, p->pos, m->emb_ln.w, m->emb_ln.b, B, DD));
    for (int l = 0; l < L; l++) {
        dec_layer *e = &m->dec[l];
        uint16_t *cache = p->scache + (size_t)l * B * p->S * 2 * DD;
        PROF(pf, st, "dec_layernorm", ct_cuda_layernorm(c, p->da, p->dx, e->ln1.w, e->ln1.b, B, DD, 1e-5f));
        PROF(pf, st, "dec_gemm_qkv", gemm(c, B, p->da, &e->qkv, p->dqkv, 0, 1.f, 0.f, CT_CUDA_ACT_NONE));
        PROF(pf, st, "dec_self_attn", ct_cuda_dec_self_attn(c, p->dout, p->dqkv, cache, p->pos, skip, B, p->S, H, Dh));
        PROF(pf, st, "dec_gemm_out", gemm(c, B, p->dout, &e->so, p->dx, 1, 1.f, 1.f, CT_CUDA_ACT_NONE));
        PROF(pf, st, "dec_layernorm", ct_cuda_layernorm(c, p->da, p->dx, e->ln2.w, e->ln2.b, B, DD, 1e-5f));
        PROF(pf, st, "dec_gemm_q", gemm(c, B, p->da, &e->q, p->dq, 0, 1.f, 0.f, CT_CUDA_ACT_NONE));
        PROF(pf, st, "dec_cross_attn", ct_cuda_dec_cross_attn(c, p->dout, p->dq, p->ckv + (size_t)l * 2 * DD, ldkv, p->dL3, skip, B, p->T3, H, Dh));
        PROF(pf, st, "dec_gemm_out", gemm(c, B, p->dout, &e->co, p->dx, 1, 1.f, 1.f, CT_CUDA_ACT_NONE));
        PROF(pf, st, "dec_layernorm", ct_cuda_layernorm(c, p->da, p->dx, e->ln3.w, e->ln3.b, B, DD, 1e-5f));
        PROF(pf, st, "dec_gemm_fc1", gemm(c, B, p->da, &e->fc1, p->dh, 0, 1.f, 0.f, CT_CUDA_ACT_RELU));
        PROF(pf, st, "dec_gemm_fc2", gemm(c, B, p->dh, &e->fc2, p->dx, 1, 1.f, 1.f, CT_CUDA_ACT_NONE));
    }
    PROF(pf, st, "dec_layernorm", ct_cuda_layernorm(c, p->da, p->dx, m->final_ln.w, m->final_ln.b, B, DD, 1e-5f));
    PROF(pf, st, "dec_gemm_head", gemm(c, B, p->da, &m->head, p->logits, 1, 1.f, 0.f, CT_CUDA_ACT_NONE));
    PROF(pf, st, "dec_greedy", ct_cuda_greedy_step(c, p->tok, p->out, p->S, p->pos, p->finished, p->logits, p->prompt,
                                                  rq->prompt_len, rq->row_new ? p->rowlim : NULL,
                                                  rq->forced ? p->forced : NULL, rq->max_new, B, d->vocab, rq->eos,
                                                  rq->pad, rq->min_new));
    return CT_OK;
}

static ct_status decoder(ct_cuda_asr *m, plan *p, const ct_cuda_asr_request *rq, ct_cuda_asr_result *res, prof *pf) {
    ct_cuda *c = m->c;
    const ct_cuda_asr_dims *d = &m->d;
    int B = p->B, R = B * p->T3;
    CT_TRY(ct_cuda_cast_bf16(c, p->encb, p->x, (size_t)R * d->d_enc));
    CT_TRY(gemm(c, R, p->encb, &m->proj, p->encp, 0, 1.f, 0.f, CT_CUDA_ACT_NONE));
    CT_TRY(gemm(c, R, p->encp, &m->cross_kv, p->ckv, 0, 1.f, 0.f, CT_CUDA_ACT_NONE));
    /* initial state: every row at position 0 holding prompt[0] */
    int *init = (int *)calloc((size_t)B * 2 + 1 + p->S, sizeof(int));
    if (!init) return ct_fail(CT_ERR_OOM, "decoder state");
    for (int b = 0; b < B; b++) init[b] = rq->prompt[0];
    for (int i = 0; i < rq->prompt_len; i++) init[2 * B + 1 + i] = rq->prompt[i];
    ct_status s = ct_cuda_h2d(c, p->tok, init, B * sizeof(int));
    if (s == CT_OK) s = ct_cuda_memset(c, p->finished, 0, B * sizeof(int));
    if (s == CT_OK) s = ct_cuda_memset(c, p->pos, 0, sizeof(int));
    if (s == CT_OK) s = ct_cuda_memset(c, p->out, 0xff, (size_t)B * p->S * sizeof(int));
    if (s == CT_OK) s = ct_cuda_h2d(c, p->prompt, init + 2 * B + 1, rq->prompt_len * sizeof(int));
    if (s == CT_OK && rq->row_new) s = ct_cuda_h2d(c, p->rowlim, rq->row_new, B * sizeof(int));
    if (s == CT_OK && rq->forced) s = ct_cuda_h2d(c, p->forced, rq->forced, (size_t)B * rq->max_new * sizeof(int));
    if (s == CT_OK) s = ct_cuda_sync(c);
    free(init);
    CT_TRY(s);
    /* out[:, 0] = prompt[0] */
    for (int b = 0; b < B; b++) CT_TRY(ct_cuda_h2d(c, p->out + (size_t)b * p->S, rq->prompt, sizeof(int)));
    int steps = rq->prompt_len - 1 + rq->max_new;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    int *fin = (int *)malloc(B * sizeof(int));
    if (!fin) return ct_fail(CT_ERR_OOM, "decoder state");
    s = CT_OK;
    int step = 0;
    for (; step < steps && s == CT_OK; step++) {
        if (step == 0 || !rq->use_graph) {
            s = dec_step(m, p, rq, step == 0 ? pf : NULL);
        } else {
            if (!exec) {
                cudaStream_t st = c->stream;
                if (cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
                    s = ct_fail(CT_ERR_DEVICE, "CUDA graph: capture did not start");
                    break;
                }
                ct_status cs = dec_step(m, p, rq, NULL);
                cudaError_t e = cudaStreamEndCapture(st, &graph);
                if (cs != CT_OK) { s = cs; break; }
                if (e != cudaSuccess) { s = ct_cuda_status_(e, "cudaStreamEndCapture", __FILE__, __LINE__); break; }
                e = cudaGraphInstantiate(&exec, graph, 0);
                if (e != cudaSuccess) { s = ct_cuda_status_(e, "cudaGraphInstantiate", __FILE__, __LINE__); break; }
            }
            cudaError_t e = cudaGraphLaunch(exec, c->stream);
            if (e != cudaSuccess) s = ct_cuda_status_(e, "cudaGraphLaunch", __FILE__, __LINE__);
        }
        if (s != CT_OK) break;
        if (step == rq->prompt_len - 1 && res->first_logits)
            s = ct_cuda_d2h(c, res->first_logits, p->logits, (size_t)B * d->vocab * 4);
        int generated = step + 2 - rq->prompt_len;
        if (s == CT_OK && generated >= rq->min_new && generated > 0 && (generated % 8) == 0) {
            s = ct_cuda_d2h(c, fin, p->finished, B * sizeof(int));
            int all = 1;
            for (int b = 0; b < B && s == CT_OK; b++) all &= fin[b] != 0;
            if (s == CT_OK && all) { step++; break; }
        }
    }
    free(fin);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    CT_TRY(s);
    CT_TRY(ct_cuda_sync(c));
    res->steps = step;
    int total = rq->prompt_len + rq->max_new;
    int *out = (int *)malloc((size_t)B * p->S * sizeof(int));
    if (!out) return ct_fail(CT_ERR_OOM, "tokens");
    s = ct_cuda_d2h(c, out, p->out, (size_t)B * p->S * sizeof(int));
    for (int b = 0; b < B && s == CT_OK; b++) {
        int n = 0, done = 0;
        for (int i = 0; i < total; i++) {
            int t = i <= step ? out[(size_t)b * p->S + i] : rq->pad;
            if (t < 0 || (i >= rq->prompt_len && done)) t = rq->pad;
            if (res->tokens) res->tokens[(size_t)b * total + i] = t;
            if (i >= rq->prompt_len && i <= step && !done) {
                n++;
                if ((t == rq->eos && !rq->forced) || (rq->row_new && n >= rq->row_new[b])) done = 1;
            }
        }
        if (rq->row_new && rq->row_new[b] == 0) n = 0;
        if (res->n_generated) res->n_generated[b] = n;
    }
    free(out);
    return s;
}

extern "C" ct_status ct_cuda_asr_run(ct_cuda_asr *m, const ct_cuda_asr_request *rq, ct_cuda_asr_result *res) {
    ct_cuda *c = m->c;
    const ct_cuda_asr_dims *d = &m->d;
    double t0 = ct_now();
    int B = rq->batch;
    if (B < 1 || B > 1024) return ct_fail(CT_ERR_INVALID_ARG, "CUDA batch of %d rows (1..1024)", B);
    if (!rq->pcm && !rq->features) return ct_fail(CT_ERR_INVALID_ARG, "CUDA batch: no audio");
    if (rq->prompt_len < 1 || rq->max_new < 0 || rq->prompt_len + rq->max_new > d->max_pos)
        return ct_fail(CT_ERR_INVALID_ARG, "CUDA batch: prompt %d + %d new tokens exceed %d positions",
                       rq->prompt_len, rq->max_new, d->max_pos);
    plan p;
    memset(&p, 0, sizeof p);
    p.B = B;
    const char *attn = getenv("CT_CUDA_ATTN"); /* "unfused": the reference attention path, for A/B checks */
    p.fused = !(attn && strcmp(attn, "unfused") == 0) && ct_cuda_relattn_fused_supports(d->d_enc / d->enc_heads);
    p.has_forced = rq->forced != NULL;
    const char *sk = getenv("CT_CUDA_DEC_SKIP");
    p.dec_skip = !(sk && strcmp(sk, "0") == 0);
    int *L0 = (int *)malloc(4 * B * sizeof(int));
    if (!L0) return ct_fail(CT_ERR_OOM, "batch");
    size_t ns = 0;
    for (int b = 0; b < B; b++) {
        if (rq->pcm) {
            if (rq->n_samples[b] < 320 || rq->n_samples[b] > (size_t)1 << 30) {
                free(L0);
                return ct_fail(CT_ERR_INVALID_ARG, "CUDA batch row %d: %zu samples (need ≥ 320: two frames)", b,
                               rq->n_samples[b]);
            }
            if (rq->n_samples[b] > ns) ns = rq->n_samples[b];
            L0[b] = (int)(rq->n_samples[b] / 160);
        } else {
            L0[b] = rq->feature_lengths[b];
        }
    }
    p.Tm = rq->pcm ? (int)(1 + ns / 160) : rq->T_feat;
    for (int b = 0; b < B; b++) {
        L0[B + b] = next_len(L0[b]);
        L0[2 * B + b] = next_len(L0[B + b]);
        L0[3 * B + b] = next_len(L0[2 * B + b]);
    }
    p.T1 = next_len(p.Tm); p.T2 = next_len(p.T1); p.T3 = next_len(p.T2);
    p.F1 = next_len(d->n_mels); p.F2 = next_len(p.F1); p.F3 = next_len(p.F2);
    p.S = rq->prompt_len + rq->max_new;
    res->T_feat = p.Tm;
    res->T_enc = p.T3;
    for (int b = 0; b < B; b++) res->enc_lengths[b] = L0[3 * B + b];
    bump sz = {NULL, 0};
    layout(m, &p, &sz, rq->pcm != NULL, ns);
    res->workspace_bytes = sz.off;
    void *ws = NULL;
    ct_status s = ct_cuda_malloc(c, &ws, sz.off);
    if (s != CT_OK) {
        free(L0);
        return ct_fail_wrap(s, "CUDA batch of %d rows × %d frames: workspace of %.2f GiB", B, p.Tm,
                            sz.off / 1073741824.0);
    }
    bump bb = {(char *)ws, 0};
    layout(m, &p, &bb, rq->pcm != NULL, ns);
    s = ct_cuda_h2d(c, p.dL0, L0, B * sizeof(int));
    if (s == CT_OK) s = ct_cuda_h2d(c, p.dL1, L0 + B, B * sizeof(int));
    if (s == CT_OK) s = ct_cuda_h2d(c, p.dL2, L0 + 2 * B, B * sizeof(int));
    if (s == CT_OK) s = ct_cuda_h2d(c, p.dL3, L0 + 3 * B, B * sizeof(int));
    if (s == CT_OK) s = ct_cuda_sync(c);
    free(L0);
    double t1 = ct_now();
    if (s == CT_OK) {
        if (rq->pcm) s = frontend(m, &p, rq, ns);
        else s = ct_cuda_h2d(c, p.feats, rq->features, (size_t)B * p.Tm * d->n_mels * 4);
    }
    if (s == CT_OK) s = ct_cuda_sync(c);
    if (s == CT_OK && res->features_out) {
        for (int b = 0; b < B && s == CT_OK; b++)
            s = ct_cuda_d2h(c, res->features_out + (size_t)b * res->T_feat_cap * d->n_mels,
                            p.feats + (size_t)b * p.Tm * d->n_mels,
                            (size_t)(p.Tm < res->T_feat_cap ? p.Tm : res->T_feat_cap) * d->n_mels * 4);
    }
    double t2 = ct_now();
    static prof pf; /* large; one batch runs at a time per process here */
    const char *pe = getenv("CT_CUDA_PROFILE");
    pf.on = pe && *pe == '1';
    pf.n = 0;
    if (pf.on)
        for (int i = 0; i < 4096; i++) {
            if (!pf.ev[0][i]) cudaEventCreate(&pf.ev[0][i]);
            if (!pf.ev[1][i]) cudaEventCreate(&pf.ev[1][i]);
        }
    if (s == CT_OK) s = encoder(m, &p, &pf);
    if (s == CT_OK) s = ct_cuda_sync(c);
    double t3 = ct_now();
    if (s == CT_OK && res->encoder_out) {
        int T = p.T3 < res->T_enc_cap ? p.T3 : res->T_enc_cap;
        for (int b = 0; b < B && s == CT_OK; b++)
            s = ct_cuda_d2h(c, res->encoder_out + (size_t)b * res->T_enc_cap * d->d_enc,
                            p.x + (size_t)b * p.T3 * d->d_enc, (size_t)T * d->d_enc * 4);
    }
    double t4 = ct_now();
    if (s == CT_OK && !rq->encoder_only) s = decoder(m, &p, rq, res, &pf);
    double t5 = ct_now();
    ct_cuda_sync(c);
    res->n_prof = 0;
    for (int i = 0; pf.on && s == CT_OK && i < pf.n; i++) {
        float ms = 0;
        cudaEventElapsedTime(&ms, pf.ev[0][i], pf.ev[1][i]);
        int k = 0;
        while (k < res->n_prof && strcmp(res->prof_name[k], pf.name[i])) k++;
        if (k == res->n_prof) {
            if (k == 32) continue;
            res->prof_name[k] = pf.name[i];
            res->prof_ms[k] = 0;
            res->n_prof++;
        }
        res->prof_ms[k] += ms;
    }
    ct_cuda_dfree(c, ws);
    res->mel_s = t2 - t1;
    res->encoder_s = t3 - t2;
    res->decoder_s = t5 - t4;
    res->total_s = t5 - t0;
    return s;
}
