/* decoder.c — decoder preparation (projection, cross K/V) and one decoding
 * step, written against the backend ops. Positions are shared by all rows of
 * a step because every row starts with a prompt of the same length. */
#include "asr/decoder.h"

#include <stdlib.h>
#include <string.h>

#define F32(t) ((const float *)(t).data)
#define OPS (be->ops)

static size_t fbytes(size_t n) { return (n * sizeof(float) + 2 * CT_ARENA_ALIGN) / CT_ARENA_ALIGN * CT_ARENA_ALIGN; }

static size_t tensor_bytes(const ct_tensor *t) { return (size_t)ct_tensor_numel(t) * ct_dtype_size(t->dtype); }

size_t ct_decoder_weight_bytes(const ct_asr_weights *w) {
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
     * ff), last (n × d), each rounded up to the arena's alignment; the
     * matmuls' per-thread weight tiles or the attention scratch come on top */
    size_t acts = 6 * fbytes(M * d) + fbytes(M * ff) + fbytes((size_t)n * d) + 2 * fbytes((size_t)n * S) +
                  16 * CT_ARENA_ALIGN;
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
    st->slots = B;
    st->Tenc = Tenc;
    st->Smax = Smax;
    st->enc_len = calloc((size_t)B, sizeof(int));
    st->ptrs = calloc((size_t)4 * L, sizeof(float *));
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
        st->ptrs[i] = ct_arena_alloc(act, sizeof(float) * n);
        if (!st->ptrs[i]) {
            ct_decoder_state_free(st);
            return ct_fail_wrap(CT_ERR_OOM, "decoder caches");
        }
    }
    /* enc_proj is needed only to make the cross K/V: take it from the top of act */
    size_t mark = ct_arena_mark(act);
    float *proj = ct_arena_alloc(act, sizeof(float) * (size_t)M * d);
    if (!proj) {
        ct_decoder_state_free(st);
        return ct_fail_wrap(CT_ERR_OOM, "decoder projection");
    }
    ct_status s = OPS->matmul(be, proj, enc, &w->proj_w, F32(w->proj_b), NULL, 1.0f, CT_ACT_NONE, M, d, hp->d_enc, ws);
    for (int l = 0; l < L && s == CT_OK; l++) {
        const ct_dec_layer *dl = &w->dec[l];
        s = OPS->matmul(be, st->ck[l], proj, &dl->ck_w, F32(dl->ck_b), NULL, 1.0f, CT_ACT_NONE, M, d, d, ws);
        if (s == CT_OK)
            s = OPS->matmul(be, st->cv[l], proj, &dl->cv_w, F32(dl->cv_b), NULL, 1.0f, CT_ACT_NONE, M, d, d, ws);
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

#define ALLOC(p, n)                                                         \
    do {                                                                    \
        (p) = ct_arena_alloc(ws, sizeof(float) * (size_t)(n));              \
        if (!(p)) {                                                         \
            ct_arena_rewind(ws, mark);                                      \
            return ct_fail_wrap(CT_ERR_OOM, "decoder step");                \
        }                                                                   \
    } while (0)
#define TRY(expr)                                  \
    do {                                           \
        ct_status s_ = (expr);                     \
        if (s_ != CT_OK) {                         \
            ct_arena_rewind(ws, mark);             \
            return s_;                             \
        }                                          \
    } while (0)

ct_status ct_decoder_step(const ct_asr_weights *w, ct_backend *be, ct_decoder_state *st, ct_arena *ws,
                          const int32_t *ids, const int *slot, int n, int S, int pos0, float *logits) {
    const ct_asr_hparams *hp = &w->hp;
    const int d = hp->d_dec, H = hp->dec_heads, Dh = d / H, M = n * S;
    const float eps = 1e-5f;
    if (pos0 < 0 || pos0 + S > st->Smax)
        return ct_fail(CT_ERR_LIMIT, "decoder: positions %d..%d exceed the cache of %d", pos0, pos0 + S - 1, st->Smax);
    size_t mark = ct_arena_mark(ws);
    float *x, *h, *q, *k, *v, *att, *f, *last;
    ALLOC(x, (size_t)M * d);
    ALLOC(h, (size_t)M * d);
    ALLOC(q, (size_t)M * d);
    ALLOC(k, (size_t)M * d);
    ALLOC(v, (size_t)M * d);
    ALLOC(att, (size_t)M * d);
    ALLOC(f, (size_t)M * (hp->dec_ff > d ? hp->dec_ff : d));
    ALLOC(last, (size_t)n * d);
    /* ids and positions are host arrays (backend.h convention) */
    if (n > st->slots) {
        ct_arena_rewind(ws, mark);
        return ct_fail(CT_ERR_INVALID_ARG, "decoder: %d rows for %d slots", n, st->slots);
    }
    int32_t *positions = st->positions; /* n·S ≤ slots·Smax since pos0 + S ≤ Smax */
    for (int r = 0; r < n; r++)
        for (int s = 0; s < S; s++) positions[r * S + s] = pos0 + s;
    /* x = LN_emb(tok[id] + pos[p]) */
    TRY(OPS->embed(be, x, ids, positions, M, &w->tok_emb, &w->pos_emb, d));
    TRY(OPS->layer_norm(be, x, x, F32(w->emb_ln_g), F32(w->emb_ln_b), M, d, eps));
    for (int l = 0; l < hp->dec_layers; l++) {
        const ct_dec_layer *L = &w->dec[l];
        /* x += SelfAttn(LN1(x)) over the cache */
        TRY(OPS->layer_norm(be, h, x, F32(L->ln1_g), F32(L->ln1_b), M, d, eps));
        TRY(OPS->matmul(be, q, h, &L->sq_w, F32(L->sq_b), NULL, 1.0f, CT_ACT_NONE, M, d, d, ws));
        TRY(OPS->matmul(be, k, h, &L->sk_w, F32(L->sk_b), NULL, 1.0f, CT_ACT_NONE, M, d, d, ws));
        TRY(OPS->matmul(be, v, h, &L->sv_w, F32(L->sv_b), NULL, 1.0f, CT_ACT_NONE, M, d, d, ws));
        TRY(OPS->kv_write(be, st->sk[l], k, slot, n, S, pos0, st->Smax, d));
        TRY(OPS->kv_write(be, st->sv[l], v, slot, n, S, pos0, st->Smax, d));
        TRY(OPS->attn_causal(be, att, q, st->sk[l], st->sv[l], slot, n, S, pos0, st->Smax, H, Dh, ws));
        TRY(OPS->matmul(be, x, att, &L->so_w, F32(L->so_b), x, 1.0f, CT_ACT_NONE, M, d, d, ws));
        /* x += CrossAttn(LN2(x), enc) */
        TRY(OPS->layer_norm(be, h, x, F32(L->ln2_g), F32(L->ln2_b), M, d, eps));
        TRY(OPS->matmul(be, q, h, &L->cq_w, F32(L->cq_b), NULL, 1.0f, CT_ACT_NONE, M, d, d, ws));
        TRY(OPS->attn_cross(be, att, q, st->ck[l], st->cv[l], slot, st->enc_len, n, S, st->Tenc, H, Dh, ws));
        TRY(OPS->matmul(be, x, att, &L->co_w, F32(L->co_b), x, 1.0f, CT_ACT_NONE, M, d, d, ws));
        /* x += W2·ReLU(W1·LN3(x)) */
        TRY(OPS->layer_norm(be, h, x, F32(L->ln3_g), F32(L->ln3_b), M, d, eps));
        TRY(OPS->matmul(be, f, h, &L->fc1_w, F32(L->fc1_b), NULL, 1.0f, CT_ACT_RELU, M, hp->dec_ff, d, ws));
        TRY(OPS->matmul(be, x, f, &L->fc2_w, F32(L->fc2_b), x, 1.0f, CT_ACT_NONE, M, d, hp->dec_ff, ws));
    }
    /* logits of each row's last position only */
    for (int r = 0; r < n; r++)
        TRY(OPS->copy(be, last + (size_t)r * d, x + ((size_t)r * S + S - 1) * d, sizeof(float) * d));
    TRY(OPS->layer_norm(be, last, last, F32(w->final_ln_g), F32(w->final_ln_b), n, d, eps));
    TRY(OPS->matmul(be, logits, last, &w->head_w, w->head_b.data ? F32(w->head_b) : NULL, NULL, 1.0f, CT_ACT_NONE, n,
                    hp->vocab, d, ws));
    ct_arena_rewind(ws, mark);
    return CT_OK;
}
