/* decoder.c — decoder preparation (projection, cross K/V) and one decoding
 * step, written against the backend ops. Positions are shared by all rows of
 * a step because every row starts with a prompt of the same length. */
#include "asr/decoder.h"

#include <stdlib.h>
#include <string.h>

#include "compute/ops.h"

/* The residual stream x and the logits are float32; projections, attention
 * and caches are in the backend's activation type (compute/ops.h). */
#define F32(t) ((const float *)(t).data)

static size_t fbytes(size_t n) { return (n * sizeof(float) + 2 * CT_ARENA_ALIGN) / CT_ARENA_ALIGN * CT_ARENA_ALIGN; }

/* Q8_0 is blocks (34 bytes per 32 weights), not an element type: its
 * ct_dtype_size is 0, so count through ct_dtype_nbytes */
static size_t tensor_bytes(const ct_tensor *t) { return ct_dtype_nbytes(t->dtype, (size_t)ct_tensor_numel(t)); }

size_t ct_decoder_weight_bytes(const ct_asr_weights *w) {
    if (!w->dec) return 0; /* hyper-parameters only: no weights loaded */
    size_t n = tensor_bytes(&w->head_w);
    for (int l = 0; l < w->hp.dec_layers; l++) {
        const ct_dec_layer *L = &w->dec[l];
        n += tensor_bytes(&L->sq_w) + tensor_bytes(&L->sk_w) + tensor_bytes(&L->sv_w) + tensor_bytes(&L->so_w) +
             tensor_bytes(&L->cq_w) + tensor_bytes(&L->co_w) + tensor_bytes(&L->fc1_w) + tensor_bytes(&L->fc2_w);
    }
    return n;
}

size_t ct_decoder_state_bytes(const ct_asr_hparams *hp, int B, int Tenc, int Smax) {
    size_t d = (size_t)hp->d_dec, L = (size_t)hp->dec_layers;
    return 2 * L * fbytes((size_t)B * Tenc * d) + 2 * L * fbytes((size_t)B * Smax * d) +
           fbytes((size_t)B * Tenc * d) + 4096;
}

size_t ct_decoder_step_bytes(const ct_asr_hparams *hp, int n, int S, int Tenc, int Smax, int threads) {
    size_t d = (size_t)hp->d_dec, M = (size_t)n * S, nth = threads > 0 ? (size_t)threads : 1;
    size_t ff = (size_t)hp->dec_ff > d ? (size_t)hp->dec_ff : d;
    /* what ct_decoder_step allocates: x, h, q, k, v, att (M × d each), f (M ×
     * ff), last and its norm (n × d), each rounded up to the arena's alignment; the
     * matmuls' per-thread weight tiles or the attention scratch come on top */
    size_t acts = 6 * fbytes(M * d) + fbytes(M * ff) + 2 * fbytes((size_t)n * d) + 2 * fbytes((size_t)n * S) +
                  fbytes(3 * M * d) + 16 * CT_ARENA_ALIGN; /* + the fused step's packed q|k|v */
    size_t K = ff > (size_t)hp->d_enc ? ff : (size_t)hp->d_enc;
    size_t att = nth * (size_t)(Tenc > Smax ? Tenc : Smax) + (size_t)(Tenc > Smax ? Tenc : Smax);
    size_t tiles = nth * 64 * K;
    return acts + fbytes(att > tiles ? att : tiles) + 4096;
}

ct_status ct_decoder_prepare(const ct_asr_weights *w, ct_backend *be, ct_arena *act, ct_arena *ws,
                             const float *enc, const int *enc_len, int B, int Tenc, int Smax,
                             ct_decoder_state *st) {
    const ct_asr_hparams *hp = &w->hp;
    const int d = hp->d_dec, L = hp->dec_layers, M = B * Tenc;
    memset(st, 0, sizeof *st);
    if (Smax > hp->max_pos) Smax = hp->max_pos;
    const ct_dtype at = ct_backend_act_dtype(be);
    st->act = at;
    st->slots = B;
    st->Tenc = Tenc;
    st->Smax = Smax;
    st->enc_len = calloc((size_t)B, sizeof(int));
    st->ptrs = calloc((size_t)4 * L, sizeof(void *));
    st->positions = malloc(sizeof(int32_t) * (size_t)B * (Smax > 0 ? Smax : 1));
    if (!st->enc_len || !st->ptrs || !st->positions) {
        ct_decoder_state_free(st);
        return ct_fail(CT_ERR_OOM, "decoder state");
    }
    memcpy(st->enc_len, enc_len, sizeof(int) * (size_t)B);
    st->ck = st->ptrs;
    st->cv = st->ptrs + L;
    st->sk = st->ptrs + 2 * L;
    st->sv = st->ptrs + 3 * L;
    for (int i = 0; i < 4 * L; i++) {
        size_t n = (size_t)B * (i < 2 * L ? Tenc : Smax) * d;
        st->ptrs[i] = ct_arena_alloc(act, ct_dtype_size(at) * n);
        if (!st->ptrs[i]) {
            ct_decoder_state_free(st);
            return ct_fail_wrap(CT_ERR_OOM, "decoder caches");
        }
    }
    /* enc_proj is needed only to make the cross K/V: take it from the top of
     * act, and so the encoder output in the activation type where that is not
     * float32 (a matmul's x is an activation; the caches above were counted
     * as float32, which leaves room for it when activations are narrower) */
    size_t mark = ct_arena_mark(act);
    ct_buf proj = ct_buf_make(ct_arena_alloc(act, ct_dtype_size(at) * (size_t)M * d), at);
    ct_buf x = ct_buf_f32(enc);
    if (proj.data && at != CT_DTYPE_F32)
        x = ct_buf_make(ct_arena_alloc(act, ct_dtype_size(at) * (size_t)M * hp->d_enc), at);
    if (!proj.data || !x.data) {
        ct_arena_rewind(act, mark);
        ct_decoder_state_free(st);
        return ct_fail_wrap(CT_ERR_OOM, "decoder projection");
    }
    ct_status s = x.data == enc ? CT_OK : ct_op_convert(be, x, ct_buf_f32(enc), (size_t)M * hp->d_enc);
    if (s == CT_OK)
        s = ct_op_matmul(be, proj, x, &w->proj_w, F32(w->proj_b), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, d, hp->d_enc, ws);
    for (int l = 0; l < L && s == CT_OK; l++) {
        const ct_dec_layer *dl = &w->dec[l];
        s = ct_op_matmul(be, ct_buf_make(st->ck[l], at), proj, &dl->ck_w, F32(dl->ck_b), CT_BUF_NONE, 1.0f,
                         CT_ACT_NONE, M, d, d, ws);
        if (s == CT_OK)
            s = ct_op_matmul(be, ct_buf_make(st->cv[l], at), proj, &dl->cv_w, F32(dl->cv_b), CT_BUF_NONE, 1.0f,
                             CT_ACT_NONE, M, d, d, ws);
    }
    ct_arena_rewind(act, mark);
    if (s != CT_OK) ct_decoder_state_free(st);
    return s;
}

void ct_decoder_state_free(ct_decoder_state *st) {
    if (!st) return;
    free(st->enc_len);
    free(st->ptrs);
    free(st->positions);
    memset(st, 0, sizeof *st);
}

#define ALLOC(p, n, dt)                                                             \
    do {                                                                            \
        (p) = ct_buf_make(ct_arena_alloc(ws, ct_dtype_size(dt) * (size_t)(n)), dt); \
        if (!(p).data) {                                                            \
            ct_arena_rewind(ws, mark);                                              \
            return ct_fail_wrap(CT_ERR_OOM, "decoder step");                        \
        }                                                                           \
    } while (0)
#define TRY(expr)                                  \
    do {                                           \
        ct_status s_ = (expr);                     \
        if (s_ != CT_OK) {                         \
            ct_arena_rewind(ws, mark);             \
            return s_;                             \
        }                                          \
    } while (0)

/* Where a step's token ids and position come from: host arrays (any S,
 * pos0 on the host) or int32 backend memory (S = 1, ct_decoder_step_dev). */
typedef struct step_in {
    const int32_t *ids; /* host (n·S), or NULL */
    int pos0;
    const int32_t *ids_dev, *pos_dev; /* backend memory, or NULL */
} step_in;

static ct_status step_embed(ct_backend *be, ct_decoder_state *st, ct_buf x, const step_in *in, int n, int S,
                            const ct_asr_weights *w, int d) {
    if (in->ids_dev) return ct_op_embed_dev(be, x, in->ids_dev, in->pos_dev, n, &w->tok_emb, &w->pos_emb, d);
    int32_t *positions = st->positions; /* n·S ≤ slots·Smax since pos0 + S ≤ Smax */
    for (int r = 0; r < n; r++)
        for (int s = 0; s < S; s++) positions[r * S + s] = in->pos0 + s;
    return ct_op_embed(be, x, in->ids, positions, n * S, &w->tok_emb, &w->pos_emb, d);
}

static ct_status step_kv_write(ct_backend *be, ct_buf cache, ct_buf src, const step_in *in, const int *slot, int n,
                               int S, int Smax, int d) {
    if (in->pos_dev) return ct_op_kv_write_dev(be, cache, src, slot, n, in->pos_dev, Smax, d);
    return ct_op_kv_write(be, cache, src, slot, n, S, in->pos0, Smax, d);
}

static ct_status step_attn(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const step_in *in,
                           const int *slot, int n, int S, int Smax, int H, int Dh, ct_arena *ws) {
    if (in->pos_dev) return ct_op_attn_causal_dev(be, out, q, kc, vc, slot, n, in->pos_dev, Smax, H, Dh, ws);
    return ct_op_attn_causal(be, out, q, kc, vc, slot, n, S, in->pos0, Smax, H, Dh, ws);
}

static ct_status step_run(const ct_asr_weights *w, ct_backend *be, ct_decoder_state *st, ct_arena *ws,
                          const step_in *in, const int *slot, int n, int S, float *logits) {
    const ct_asr_hparams *hp = &w->hp;
    const int d = hp->d_dec, H = hp->dec_heads, Dh = d / H, M = n * S;
    const float eps = 1e-5f;
    const ct_dtype at = st->act, f32 = CT_DTYPE_F32;
    size_t mark = ct_arena_mark(ws);
    ct_buf x, h, q, k, v, att, f, last, lastn;
    ALLOC(x, (size_t)M * d, f32);
    ALLOC(h, (size_t)M * d, at);
    ALLOC(q, (size_t)M * d, at);
    ALLOC(k, (size_t)M * d, at);
    ALLOC(v, (size_t)M * d, at);
    ALLOC(att, (size_t)M * d, at);
    ALLOC(f, (size_t)M * (hp->dec_ff > d ? hp->dec_ff : d), at);
    ALLOC(last, (size_t)n * d, f32);
    ALLOC(lastn, (size_t)n * d, at);
    /* a device step on a backend with the fused step (version 6): q|k|v from
     * one packed product, the cache writes inside the attention */
    const int fused = in->pos_dev && S == 1 && ct_backend_has_fused_decoder(be) && w->dec[0].sqkv_w.data;
    ct_buf qkv = CT_BUF_NONE;
    if (fused) ALLOC(qkv, (size_t)3 * M * d, at);
    if (n > st->slots) {
        ct_arena_rewind(ws, mark);
        return ct_fail(CT_ERR_INVALID_ARG, "decoder: %d rows for %d slots", n, st->slots);
    }
    /* x = LN_emb(tok[id] + pos[p]) */
    TRY(step_embed(be, st, x, in, n, S, w, d));
    TRY(ct_op_layer_norm(be, x, x, F32(w->emb_ln_g), F32(w->emb_ln_b), M, d, eps));
    for (int l = 0; l < hp->dec_layers; l++) {
        const ct_dec_layer *L = &w->dec[l];
        const ct_buf sk = ct_buf_make(st->sk[l], at), sv = ct_buf_make(st->sv[l], at);
        const ct_buf ck = ct_buf_make(st->ck[l], at), cv = ct_buf_make(st->cv[l], at);
        /* x += SelfAttn(LN1(x)) over the cache */
        TRY(ct_op_layer_norm(be, h, x, F32(L->ln1_g), F32(L->ln1_b), M, d, eps));
        if (fused && L->sqkv_w.data) {
            TRY(ct_op_matmul(be, qkv, h, &L->sqkv_w, F32(L->sqkv_b), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, 3 * d, d, ws));
            TRY(ct_op_attn_causal_qkv_dev(be, att, qkv, sk, sv, slot, n, in->pos_dev, st->Smax, H, Dh, ws));
        } else {
            TRY(ct_op_matmul(be, q, h, &L->sq_w, F32(L->sq_b), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, d, d, ws));
            TRY(ct_op_matmul(be, k, h, &L->sk_w, F32(L->sk_b), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, d, d, ws));
            TRY(ct_op_matmul(be, v, h, &L->sv_w, F32(L->sv_b), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, d, d, ws));
            TRY(step_kv_write(be, sk, k, in, slot, n, S, st->Smax, d));
            TRY(step_kv_write(be, sv, v, in, slot, n, S, st->Smax, d));
            TRY(step_attn(be, att, q, sk, sv, in, slot, n, S, st->Smax, H, Dh, ws));
        }
        TRY(ct_op_matmul(be, x, att, &L->so_w, F32(L->so_b), x, 1.0f, CT_ACT_NONE, M, d, d, ws));
        /* x += CrossAttn(LN2(x), enc) */
        TRY(ct_op_layer_norm(be, h, x, F32(L->ln2_g), F32(L->ln2_b), M, d, eps));
        TRY(ct_op_matmul(be, q, h, &L->cq_w, F32(L->cq_b), CT_BUF_NONE, 1.0f, CT_ACT_NONE, M, d, d, ws));
        TRY(ct_op_attn_cross(be, att, q, ck, cv, slot, st->enc_len, n, S, st->Tenc, H, Dh, ws));
        TRY(ct_op_matmul(be, x, att, &L->co_w, F32(L->co_b), x, 1.0f, CT_ACT_NONE, M, d, d, ws));
        /* x += W2·ReLU(W1·LN3(x)) */
        TRY(ct_op_layer_norm(be, h, x, F32(L->ln3_g), F32(L->ln3_b), M, d, eps));
        TRY(ct_op_matmul(be, f, h, &L->fc1_w, F32(L->fc1_b), CT_BUF_NONE, 1.0f, CT_ACT_RELU, M, hp->dec_ff, d, ws));
        TRY(ct_op_matmul(be, x, f, &L->fc2_w, F32(L->fc2_b), x, 1.0f, CT_ACT_NONE, M, d, hp->dec_ff, ws));
    }
    /* logits of each row's last position only */
    if (S == 1) {
        last = x; /* already one row each */
    } else {
        for (int r = 0; r < n; r++)
            TRY(be->ops->copy(be, ct_buf_at(last, (size_t)r * d).data, ct_buf_at(x, ((size_t)r * S + S - 1) * d).data,
                              ct_buf_bytes(last, (size_t)d)));
    }
    TRY(ct_op_layer_norm(be, lastn, last, F32(w->final_ln_g), F32(w->final_ln_b), n, d, eps));
    TRY(ct_op_matmul(be, ct_buf_f32(logits), lastn, &w->head_w, w->head_b.data ? F32(w->head_b) : NULL, CT_BUF_NONE,
                     1.0f, CT_ACT_NONE, n, hp->vocab, d, ws));
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

ct_status ct_decoder_step(const ct_asr_weights *w, ct_backend *be, ct_decoder_state *st, ct_arena *ws,
                          const int32_t *ids, const int *slot, int n, int S, int pos0, float *logits) {
    if (pos0 < 0 || pos0 + S > st->Smax)
        return ct_fail(CT_ERR_LIMIT, "decoder: positions %d..%d exceed the cache of %d", pos0, pos0 + S - 1, st->Smax);
    step_in in = {ids, pos0, NULL, NULL};
    return step_run(w, be, st, ws, &in, slot, n, S, logits);
}

ct_status ct_decoder_step_dev(const ct_asr_weights *w, ct_backend *be, ct_decoder_state *st, ct_arena *ws,
                              const int32_t *ids_dev, const int32_t *pos_dev, const int *slot, int n, float *logits) {
    step_in in = {NULL, 0, ids_dev, pos_dev};
    return step_run(w, be, st, ws, &in, slot, n, 1, logits);
}
