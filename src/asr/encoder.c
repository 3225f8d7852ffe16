/* encoder.c — Conformer encoder forward over a padded batch, written once
 * against the backend ops. Subsampling runs a few rows at a time so that its
 * big (C, T/2, 64) maps fit in the room the layers need anyway: one row
 * where activations are float32 (the CPU), as many 16-bit rows as fit
 * elsewhere (fewer, larger launches on CUDA). */
#include "asr/encoder.h"

#include <math.h>
#include <string.h>

#include "compute/ops.h"

/* Activations are ct_bufs: the residual stream x is float32 on every
 * backend, everything else is in the backend's activation type (float32 on
 * the CPU, bf16/f16 on CUDA), as compute/ops.h says per op. */
#define F32(t) ((const float *)(t).data)

enum { CT_SUB_ROWS_MAX = 32 };

static int stride2(int L) { return L <= 0 ? 0 : (L - 1) / 2 + 1; }

int ct_encoder_frames(int T) { return stride2(stride2(stride2(T))); }

static size_t fbytes(size_t n) { return (n * sizeof(float) + 2 * CT_ARENA_ALIGN) / CT_ARENA_ALIGN * CT_ARENA_ALIGN; }

size_t ct_encoder_act_bytes(const ct_asr_hparams *hp, int B, int T) {
    size_t C = (size_t)hp->sub_channels, d = (size_t)hp->d_enc, M = (size_t)hp->n_mels;
    size_t T1 = stride2(T), T2 = stride2((int)T1), T3 = stride2((int)T2);
    size_t F1 = stride2((int)M), F2 = stride2((int)F1), F3 = stride2((int)F2);
    size_t BT = (size_t)B * T3;
    size_t ff = (size_t)hp->enc_ff > 2 * d ? (size_t)hp->enc_ff : 2 * d;
    size_t out = fbytes(BT * d);
    size_t sub = fbytes(C * T1 * F1) + 2 * fbytes(C * T2 * F2) + 2 * fbytes(C * T3 * F3) + fbytes(T3 * C * F3);
    size_t layers = 6 * fbytes(BT * d) + fbytes(BT * ff) + 2 * fbytes((2 * T3 + 1) * d) + fbytes(BT * d);
    return out + (sub > layers ? sub : layers) + 4096;
}

size_t ct_encoder_ws_bytes(const ct_asr_hparams *hp, int B, int T, int threads) {
    size_t T3 = (size_t)ct_encoder_frames(T), d = (size_t)hp->d_enc, C = (size_t)hp->sub_channels;
    size_t Dh = d / (size_t)hp->enc_heads, nth = threads > 0 ? (size_t)threads : 1;
    size_t attn = nth * (2 * T3 * Dh + T3 * T3 + T3 * (2 * T3 + 1)) + T3;
    size_t K = (size_t)hp->enc_ff;
    if (d > K) K = d;
    if (C * 16 > K) K = C * 16;
    size_t tiles = nth * 64 * K + C * C;
    /* a CPU backend without native 16-bit products widens a whole 16-bit
     * weight (at most enc_ff × d) and keeps an (BT, N) product beside it
     * (cpu_matmul_dnnl.c); with less room it multiplies in smaller blocks */
    size_t BT = (size_t)B * T3, ff = (size_t)hp->enc_ff > 2 * d ? (size_t)hp->enc_ff : 2 * d;
    size_t widened = ff * d + BT * ff;
    if (widened > tiles) tiles = widened;
    return fbytes(attn > tiles ? attn : tiles) + 4096;
}

/* n elements of type dt from the activation arena (sizes above count float32, an upper bound) */
#define ALLOC(p, n, dt)                                                              \
    do {                                                                             \
        (p) = ct_buf_make(ct_arena_alloc(act, ct_dtype_size(dt) * (size_t)(n)), dt); \
        if (!(p).data) return ct_fail_wrap(CT_ERR_OOM, "encoder activations");       \
    } while (0)

/* Rows per subsampling pass: 1 for float32 activations (the CPU path
 * unchanged); else as many as the activation arena's estimate, which is
 * counted in float32, leaves room for in the activation type. */
static int sub_rows(const ct_asr_hparams *hp, ct_dtype at, int B, int T) {
    if (at == CT_DTYPE_F32 || B <= 1) return 1;
    size_t C = (size_t)hp->sub_channels, d = (size_t)hp->d_enc, M = (size_t)hp->n_mels;
    size_t T1 = stride2(T), T2 = stride2((int)T1), T3 = stride2((int)T2);
    size_t F1 = stride2((int)M), F2 = stride2((int)F1), F3 = stride2((int)F2);
    size_t BT = (size_t)B * T3, ff = (size_t)hp->enc_ff > 2 * d ? (size_t)hp->enc_ff : 2 * d;
    size_t row = (C * T1 * F1 + 2 * C * T2 * F2 + 3 * C * T3 * F3) * ct_dtype_size(at) + 8 * CT_ARENA_ALIGN;
    size_t sub1 = fbytes(C * T1 * F1) + 2 * fbytes(C * T2 * F2) + 2 * fbytes(C * T3 * F3) + fbytes(T3 * C * F3);
    size_t layers = 6 * fbytes(BT * d) + fbytes(BT * ff) + 2 * fbytes((2 * T3 + 1) * d) + fbytes(BT * d);
    size_t room = sub1 > layers ? sub1 : layers, R = room / row;
    return R < 1 ? 1 : R > (size_t)B ? B : (int)R;
}

/* R rows: feats (R, T, M) → x (R, T3, d); L0 (R) valid frames per row. */
static ct_status subsample_rows(const ct_asr_weights *w, ct_backend *be, ct_arena *act, ct_arena *ws,
                                ct_buf feats, const int *L0, int R, int T, ct_buf x) {
    const ct_asr_hparams *hp = &w->hp;
    const int C = hp->sub_channels, M = hp->n_mels;
    const int T1 = stride2(T), T2 = stride2(T1), T3 = stride2(T2);
    const int F1 = stride2(M), F2 = stride2(F1), F3 = stride2(F2);
    int L1[CT_SUB_ROWS_MAX], L2[CT_SUB_ROWS_MAX], L3[CT_SUB_ROWS_MAX];
    if (R > CT_SUB_ROWS_MAX) return ct_fail(CT_ERR_INTERNAL, "encoder: %d subsampling rows", R);
    for (int r = 0; r < R; r++) {
        L1[r] = stride2(L0[r] < T ? L0[r] : T);
        L2[r] = stride2(L1[r]);
        L3[r] = stride2(L2[r]);
    }
    const ct_dtype at = ct_backend_act_dtype(be);
    size_t mark = ct_arena_mark(act);
    if (ct_backend_has_fused_subsample(be) && w->sub_w_cl.data) {
        /* the same composition as one op (backend.h, subsample): two maps
         * of scratch, within the room counted for the five below */
        ct_subsample_weights sw = {F32(w->c0_w),  F32(w->c0_b),  F32(w->dw1_w), F32(w->dw1_b),
                                   &w->pw1_w,     F32(w->pw1_b), F32(w->dw2_w), F32(w->dw2_b),
                                   &w->pw2_w,     F32(w->pw2_b), &w->sub_w_cl,  F32(w->sub_b)};
        ct_buf a, b;
        ALLOC(a, (size_t)R * C * T1 * F1, at);
        ALLOC(b, (size_t)R * C * T2 * F2, at);
        ct_status st = ct_op_subsample(be, x, feats, &sw, L0, R, T, M, C, hp->d_enc, a, b, ws);
        ct_arena_rewind(act, mark);
        return st;
    }
    ct_buf s1, s2, s3, s4, s5, flat;
    ALLOC(s1, (size_t)R * C * T1 * F1, at);
    ALLOC(s2, (size_t)R * C * T2 * F2, at);
    ALLOC(s3, (size_t)R * C * T2 * F2, at);
    ALLOC(s4, (size_t)R * C * T3 * F3, at);
    ALLOC(s5, (size_t)R * C * T3 * F3, at);
    ALLOC(flat, (size_t)R * T3 * C * F3, at);
    /* the reference zeroes time rows ≥ the running length after every conv */
    CT_TRY(ct_op_conv2d_s2(be, s1, feats, F32(w->c0_w), F32(w->c0_b), R, C, T, M, CT_ACT_RELU));
    CT_TRY(ct_op_mask_time(be, s1, L1, R, C, T1, F1));
    CT_TRY(ct_op_dwconv2d_s2(be, s2, s1, F32(w->dw1_w), F32(w->dw1_b), R, C, T1, F1, CT_ACT_NONE));
    CT_TRY(ct_op_mask_time(be, s2, L2, R, C, T2, F2));
    CT_TRY(ct_op_conv_pointwise(be, s3, s2, &w->pw1_w, F32(w->pw1_b), R, C, C, T2 * F2, CT_ACT_RELU, ws));
    CT_TRY(ct_op_mask_time(be, s3, L2, R, C, T2, F2));
    CT_TRY(ct_op_dwconv2d_s2(be, s4, s3, F32(w->dw2_w), F32(w->dw2_b), R, C, T2, F2, CT_ACT_NONE));
    CT_TRY(ct_op_mask_time(be, s4, L3, R, C, T3, F3));
    CT_TRY(ct_op_conv_pointwise(be, s5, s4, &w->pw2_w, F32(w->pw2_b), R, C, C, T3 * F3, CT_ACT_RELU, ws));
    CT_TRY(ct_op_mask_time(be, s5, L3, R, C, T3, F3));
    CT_TRY(ct_op_flatten_ct(be, flat, s5, R, C, T3, F3));
    CT_TRY(ct_op_matmul(be, x, flat, &w->sub_w, F32(w->sub_b), CT_BUF_NONE, 1.0f, CT_ACT_NONE, R * T3, hp->d_enc,
                        C * F3, ws));
    ct_arena_rewind(act, mark);
    return CT_OK;
}

typedef struct scratch {
    ct_buf ln, h, q, k, v, att, pos, pp, glu; /* activation type */
    int fused; /* the backend's fused encoder ops (version 5): fewer passes, same definition */
} scratch;

/* One Conformer block. With s->fused (CUDA) the same arithmetic runs as the
 * version-5 fused entries: s->ln arrives holding LN_ff1(x) (the previous
 * block's layer_norm2, or the forward's first norm), q̃|k|v come from one
 * packed GEMM into s->h when the layer has wqkv, GLU + mask + depthwise conv
 * run as one op, and the block's last norm is fused with the next block's
 * first (next: that block, or NULL). Without it (the CPU tables) each op
 * runs on its own, exactly as before. */
static ct_status block(const ct_enc_layer *l, const ct_enc_layer *next, ct_backend *be, ct_arena *ws,
                       const ct_asr_hparams *hp, ct_buf x, const scratch *s, const int *len, int B, int T) {
    const int d = hp->d_enc, ff = hp->enc_ff, H = hp->enc_heads, M = B * T;
    const float eps = 1e-5f;
    /* x += 0.5 · FF1(LN(x)) */
    if (!s->fused) CT_TRY(ct_op_layer_norm(be, s->ln, x, F32(l->ln_ff1_g), F32(l->ln_ff1_b), M, d, eps));
    CT_TRY(ct_op_matmul(be, s->h, s->ln, &l->ff1_w1, F32(l->ff1_b1), CT_BUF_NONE, 1.0f, CT_ACT_SILU, M, ff, d, ws));
    CT_TRY(ct_op_matmul(be, x, s->h, &l->ff1_w2, F32(l->ff1_b2), x, 0.5f, CT_ACT_NONE, M, d, ff, ws));
    /* x += MHSA(LN(x)) */
    CT_TRY(ct_op_layer_norm(be, s->ln, x, F32(l->ln_att_g), F32(l->ln_att_b), M, d, eps));
    CT_TRY(ct_op_matmul(be, s->pp, s->pos, &l->wpos, NULL, CT_BUF_NONE, 1.0f, CT_ACT_NONE, 2 * T - 1, d, d, ws));
    if (s->fused && l->wqkv.data) {
        CT_TRY(ct_op_matmul(be, s->h, s->ln, &l->wqkv, F32(l->bqkv), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, 3 * d, d, ws));
        CT_TRY(ct_op_attn_relpos_qkv(be, s->att, s->h, s->pp, F32(l->pos_c), len, B, T, H, d / H, ws));
    } else {
        CT_TRY(ct_op_matmul(be, s->q, s->ln, &l->wq, F32(l->bq), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, d, d, ws));
        CT_TRY(ct_op_matmul(be, s->k, s->ln, &l->wk, F32(l->bk), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, d, d, ws));
        CT_TRY(ct_op_matmul(be, s->v, s->ln, &l->wv, F32(l->bv), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, d, d, ws));
        CT_TRY(ct_op_attn_relpos(be, s->att, s->q, s->k, s->v, s->pp, F32(l->pos_u), F32(l->pos_v), len, B, T, H,
                                 d / H, ws));
    }
    CT_TRY(ct_op_matmul(be, x, s->att, &l->wo, F32(l->bo), x, 1.0f, CT_ACT_NONE, M, d, d, ws));
    /* x += Conv(LN(x)): pointwise → GLU → mask → depthwise+BN → SiLU → pointwise */
    CT_TRY(ct_op_layer_norm(be, s->ln, x, F32(l->ln_conv_g), F32(l->ln_conv_b), M, d, eps));
    CT_TRY(ct_op_matmul(be, s->h, s->ln, &l->pw1_w, F32(l->pw1_b), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, 2 * d, d, ws));
    if (s->fused) {
        CT_TRY(ct_op_glu_dwconv1d(be, s->ln, s->h, F32(l->dw_w), F32(l->dw_b), len, B, T, d, hp->conv_kernel,
                                  CT_ACT_SILU, ws));
    } else {
        CT_TRY(ct_op_glu(be, s->glu, s->h, M, d));
        CT_TRY(ct_op_mask_time(be, s->glu, len, B, 1, T, d));
        CT_TRY(ct_op_dwconv1d(be, s->ln, s->glu, F32(l->dw_w), F32(l->dw_b), B, T, d, hp->conv_kernel, CT_ACT_SILU));
    }
    CT_TRY(ct_op_matmul(be, x, s->ln, &l->pw2_w, F32(l->pw2_b), x, 1.0f, CT_ACT_NONE, M, d, d, ws));
    /* x += 0.5 · FF2(LN(x)); x = LN(x) */
    CT_TRY(ct_op_layer_norm(be, s->ln, x, F32(l->ln_ff2_g), F32(l->ln_ff2_b), M, d, eps));
    CT_TRY(ct_op_matmul(be, s->h, s->ln, &l->ff2_w1, F32(l->ff2_b1), CT_BUF_NONE, 1.0f, CT_ACT_SILU, M, ff, d, ws));
    CT_TRY(ct_op_matmul(be, x, s->h, &l->ff2_w2, F32(l->ff2_b2), x, 0.5f, CT_ACT_NONE, M, d, ff, ws));
    if (s->fused && next)
        return ct_op_layer_norm2(be, x, s->ln, x, F32(l->ln_out_g), F32(l->ln_out_b), F32(next->ln_ff1_g),
                                 F32(next->ln_ff1_b), M, d, eps);
    return ct_op_layer_norm(be, x, x, F32(l->ln_out_g), F32(l->ln_out_b), M, d, eps);
}

ct_status ct_encoder_forward(const ct_asr_weights *w, ct_backend *be, ct_arena *act, ct_arena *ws,
                             const float *feats, const int *feat_len, int B, int T, float **y, int *enc_len,
                             int *Te) {
    const ct_asr_hparams *hp = &w->hp;
    if (hp->xscaling)
        return ct_fail(CT_ERR_UNSUPPORTED, "encoder: xscaling (input ×√d) is not implemented; the release has it off");
    if (B <= 0 || T <= 0) return ct_fail(CT_ERR_INVALID_ARG, "encoder: batch %d × %d frames", B, T);
    const int d = hp->d_enc, T3 = ct_encoder_frames(T), M = B * T3;
    const int ffw = hp->enc_ff > 2 * d ? hp->enc_ff : 2 * d;
    const ct_dtype at = ct_backend_act_dtype(be);
    ct_buf x;
    ALLOC(x, (size_t)M * d, CT_DTYPE_F32); /* the residual stream and the output */
    size_t mark = ct_arena_mark(act);
    for (int b = 0; b < B; b++) {
        if (feat_len[b] < 0 || feat_len[b] > T)
            return ct_fail(CT_ERR_INVALID_ARG, "encoder: row %d has %d valid frames of %d", b, feat_len[b], T);
        enc_len[b] = ct_encoder_frames(feat_len[b]);
    }
    int R = sub_rows(hp, at, B, T);
    if (R > CT_SUB_ROWS_MAX) R = CT_SUB_ROWS_MAX;
    for (int b = 0; b < B; b += R) {
        int r = B - b < R ? B - b : R;
        CT_TRY(subsample_rows(w, be, act, ws, ct_buf_f32(feats + (size_t)b * T * hp->n_mels), feat_len + b, r, T,
                              ct_buf_at(x, (size_t)b * T3 * d)));
    }
    scratch s;
    memset(&s, 0, sizeof s);
    s.fused = ct_backend_has_fused_encoder(be);
    /* fused: q̃|k|v (3d wide) go to h, and q, k, v, glu are not needed; the
     * arena estimate (six d-wide buffers and one ffw-wide, in float32) covers both */
    ALLOC(s.ln, (size_t)M * d, at);
    ALLOC(s.h, (size_t)M * (s.fused && 3 * d > ffw ? 3 * d : ffw), at);
    if (!s.fused) {
        ALLOC(s.q, (size_t)M * d, at);
        ALLOC(s.k, (size_t)M * d, at);
        ALLOC(s.v, (size_t)M * d, at);
        ALLOC(s.glu, (size_t)M * d, at);
    }
    ALLOC(s.att, (size_t)M * d, at);
    ALLOC(s.pos, (size_t)(2 * T3 - 1) * d, at);
    ALLOC(s.pp, (size_t)(2 * T3 - 1) * d, at);
    CT_TRY(ct_op_pos_relative(be, s.pos, T3, d));
    if (s.fused) /* the first block's first norm; later ones come from layer_norm2 */
        CT_TRY(ct_op_layer_norm(be, s.ln, x, F32(w->enc[0].ln_ff1_g), F32(w->enc[0].ln_ff1_b), M, d, 1e-5f));
    for (int i = 0; i < hp->enc_layers; i++) {
        const ct_enc_layer *next = i + 1 < hp->enc_layers ? &w->enc[i + 1] : NULL;
        ct_status st = block(&w->enc[i], next, be, ws, hp, x, &s, enc_len, B, T3);
        if (st != CT_OK) return ct_fail_wrap(st, "encoder layer %d", i);
    }
    ct_arena_rewind(act, mark);
    *y = (float *)x.data;
    *Te = T3;
    return CT_OK;
}
