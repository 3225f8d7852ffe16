/* ref_attention.c — reference attention: the encoder's relative-position MHSA
 * (Transformer-XL u/v biases, rel-shift as index T−1−i+j), the decoder's causal
 * self-attention over a KV cache and its cross-attention over encoder frames.
 * One query row at a time, scores in float32, softmax with -inf masking. */
#include <math.h>

#include "compute/ref/ops_ref.h"

/* out_i = softmax(scores) · V for one query row; s (nk) holds the scores. */
static void weighted_sum(float *out, float *s, const float *v, size_t v_stride, int nk, int Dh) {
    ct_ref_softmax(NULL, s, 1, nk);
    for (int d = 0; d < Dh; d++) out[d] = 0.0f;
    for (int j = 0; j < nk; j++) {
        const float *vj = v + (size_t)j * v_stride;
        for (int d = 0; d < Dh; d++) out[d] += s[j] * vj[d];
    }
}

ct_status ct_ref_attn_relpos(ct_backend *be, float *out, const float *q, const float *k, const float *v,
                             const float *p, const float *u, const float *vb, const int *len, int B, int T,
                             int H, int Dh, ct_arena *ws) {
    // out, q, k, v (B,T,H*Dh); p (2T-1, H*Dh); u, vb (H,Dh); len (B)
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    size_t mark = ct_arena_mark(ws);
    float *s = ct_arena_alloc(ws, sizeof(float) * (size_t)T);
    if (!s) return CT_ERR_OOM;
    for (int b = 0; b < B; b++) {
        int L = len[b] < T ? len[b] : T;
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < T; i++) {
                float *o = out + ((size_t)b * T + i) * D + (size_t)h * Dh;
                if (i >= L) { /* padded query rows are never read: write zeros */
                    for (int d = 0; d < Dh; d++) o[d] = 0.0f;
                    continue;
                }
                const float *qi = q + ((size_t)b * T + i) * D + (size_t)h * Dh;
                for (int j = 0; j < T; j++) {
                    if (j >= L) {
                        s[j] = -INFINITY;
                        continue;
                    }
                    const float *kj = k + ((size_t)b * T + j) * D + (size_t)h * Dh;
                    const float *pk = p + (size_t)(T - 1 - i + j) * D + (size_t)h * Dh;
                    float ac = 0.0f, bd = 0.0f;
                    for (int d = 0; d < Dh; d++) {
                        ac += (qi[d] + u[h * Dh + d]) * kj[d];
                        bd += (qi[d] + vb[h * Dh + d]) * pk[d];
                    }
                    s[j] = ac * scale + bd * scale;
                }
                weighted_sum(o, s, v + (size_t)b * T * D + (size_t)h * Dh, (size_t)D, T, Dh);
            }
        }
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

ct_status ct_ref_kv_write(ct_backend *be, float *cache, const float *src, const int *slot, int n, int S,
                          int pos0, int Smax, int D) {
    // cache (slots,Smax,D), src (n,S,D), slot (n)
    if (pos0 < 0 || pos0 + S > Smax) return ct_fail(CT_ERR_INVALID_ARG, "kv_write: positions %d+%d beyond %d", pos0, S, Smax);
    for (int r = 0; r < n; r++)
        for (int s = 0; s < S; s++)
            for (int d = 0; d < D; d++)
                cache[((size_t)slot[r] * Smax + pos0 + s) * D + d] = src[((size_t)r * S + s) * D + d];
    return CT_OK;
}

ct_status ct_ref_attn_causal(ct_backend *be, float *out, const float *q, const float *kc, const float *vc,
                             const int *slot, int n, int S, int pos0, int Smax, int H, int Dh, ct_arena *ws) {
    // out, q (n,S,H*Dh); kc, vc (slots,Smax,H*Dh); slot (n)
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    if (pos0 + S > Smax) return ct_fail(CT_ERR_INVALID_ARG, "attn_causal: position %d beyond %d", pos0 + S, Smax);
    size_t mark = ct_arena_mark(ws);
    float *s = ct_arena_alloc(ws, sizeof(float) * (size_t)(pos0 + S));
    if (!s) return CT_ERR_OOM;
    for (int r = 0; r < n; r++) {
        const float *K = kc + (size_t)slot[r] * Smax * D, *V = vc + (size_t)slot[r] * Smax * D;
        for (int h = 0; h < H; h++)
            for (int t = 0; t < S; t++) {
                const float *qi = q + ((size_t)r * S + t) * D + (size_t)h * Dh;
                int nk = pos0 + t + 1;
                for (int j = 0; j < nk; j++) {
                    float acc = 0.0f;
                    for (int d = 0; d < Dh; d++) acc += qi[d] * K[(size_t)j * D + h * Dh + d];
                    s[j] = acc * scale;
                }
                weighted_sum(out + ((size_t)r * S + t) * D + (size_t)h * Dh, s, V + (size_t)h * Dh, (size_t)D,
                             nk, Dh);
            }
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

ct_status ct_ref_attn_cross(ct_backend *be, float *out, const float *q, const float *ek, const float *ev,
                            const int *slot, const int *enc_len, int n, int S, int Tenc, int H, int Dh,
                            ct_arena *ws) {
    // out, q (n,S,H*Dh); ek, ev (slots,Tenc,H*Dh); slot (n); enc_len (slots)
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    size_t mark = ct_arena_mark(ws);
    float *s = ct_arena_alloc(ws, sizeof(float) * (size_t)Tenc);
    if (!s) return CT_ERR_OOM;
    for (int r = 0; r < n; r++) {
        const float *K = ek + (size_t)slot[r] * Tenc * D, *V = ev + (size_t)slot[r] * Tenc * D;
        int L = enc_len[slot[r]] < Tenc ? enc_len[slot[r]] : Tenc;
        for (int h = 0; h < H; h++)
            for (int t = 0; t < S; t++) {
                const float *qi = q + ((size_t)r * S + t) * D + (size_t)h * Dh;
                for (int j = 0; j < Tenc; j++) {
                    if (j >= L) {
                        s[j] = -INFINITY;
                        continue;
                    }
                    float acc = 0.0f;
                    for (int d = 0; d < Dh; d++) acc += qi[d] * K[(size_t)j * D + h * Dh + d];
                    s[j] = acc * scale;
                }
                weighted_sum(out + ((size_t)r * S + t) * D + (size_t)h * Dh, s, V + (size_t)h * Dh, (size_t)D,
                             Tenc, Dh);
            }
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}
