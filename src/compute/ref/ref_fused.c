/* ref_fused.c — the version-5 fused encoder ops and the version-6 fused
 * decoder step (backend.h), each written as
 * the composition of the reference ops it fuses: the definition the CUDA
 * kernels are tested against. Float32 buffers only (ct_buf views for the
 * signature's sake). */
#include <stdlib.h>
#include <string.h>

#include "compute/ref/ops_ref.h"

#define F(buf) ((float *)(buf).data)

static ct_status f32_only(const char *op, const ct_buf *b, int n) {
    for (int i = 0; i < n; i++)
        if (b[i].data && b[i].dtype != CT_DTYPE_F32)
            return ct_fail(CT_ERR_UNSUPPORTED, "reference %s: float32 buffers only", op);
    return CT_OK;
}

ct_status ct_ref_layer_norm2(ct_backend *be, ct_buf y, ct_buf z, ct_buf x, const float *g1, const float *b1,
                             const float *g2, const float *b2, int M, int D, float eps) {
    const ct_buf bufs[] = {y, z, x};
    CT_TRY(f32_only("layer_norm2", bufs, 3));
    CT_TRY(ct_ref_layer_norm(be, F(y), F(x), g1, b1, M, D, eps));
    return ct_ref_layer_norm(be, F(z), F(y), g2, b2, M, D, eps);
}

ct_status ct_ref_glu_dwconv1d(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, const int *len, int B,
                              int T, int C, int K, ct_act act, ct_arena *ws) {
    const ct_buf bufs[] = {y, x};
    CT_TRY(f32_only("glu_dwconv1d", bufs, 2));
    size_t mark = ct_arena_mark(ws);
    float *g = ct_arena_alloc(ws, sizeof(float) * (size_t)B * T * C);
    if (!g)
        return ct_fail(CT_ERR_OOM, "reference glu_dwconv1d: scratch");
    ct_status s = ct_ref_glu(be, g, F(x), B * T, C);
    if (s == CT_OK)
        s = ct_ref_mask_time(be, g, len, B, 1, T, C);
    if (s == CT_OK)
        s = ct_ref_dwconv1d(be, F(y), g, w, b, B, T, C, K, act);
    ct_arena_rewind(ws, mark);
    return s;
}

ct_status ct_ref_attn_relpos_qkv(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf p, const float *c, const int *len,
                                 int B, int T, int H, int Dh, ct_arena *ws) {
    const ct_buf bufs[] = {out, qkv, p};
    CT_TRY(f32_only("attn_relpos_qkv", bufs, 3));
    const size_t D = (size_t)H * Dh, rows = (size_t)B * T;
    size_t mark = ct_arena_mark(ws);
    float *q = ct_arena_alloc(ws, sizeof(float) * rows * D), *k = ct_arena_alloc(ws, sizeof(float) * rows * D),
          *v = ct_arena_alloc(ws, sizeof(float) * rows * D), *zero = ct_arena_alloc(ws, sizeof(float) * D);
    if (!q || !k || !v || !zero) {
        ct_arena_rewind(ws, mark);
        return ct_fail(CT_ERR_OOM, "reference attn_relpos_qkv: scratch");
    }
    const float *src = F(qkv);
    for (size_t r = 0; r < rows; r++) {
        memcpy(q + r * D, src + r * 3 * D, sizeof(float) * D);
        memcpy(k + r * D, src + r * 3 * D + D, sizeof(float) * D);
        memcpy(v + r * D, src + r * 3 * D + 2 * D, sizeof(float) * D);
    }
    memset(zero, 0, sizeof(float) * D);
    ct_status s = ct_ref_attn_relpos(be, F(out), q, k, v, F(p), zero, c, len, B, T, H, Dh, ws);
    ct_arena_rewind(ws, mark);
    return s;
}

ct_status ct_ref_attn_causal_qkv_dev(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf kc, ct_buf vc, const int *slot,
                                     int n, const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws) {
    const ct_buf bufs[] = {out, qkv, kc, vc};
    CT_TRY(f32_only("attn_causal_qkv_dev", bufs, 4));
    const size_t D = (size_t)H * Dh;
    size_t mark = ct_arena_mark(ws);
    float *q = ct_arena_alloc(ws, sizeof(float) * (size_t)n * D), *k = ct_arena_alloc(ws, sizeof(float) * (size_t)n * D),
          *v = ct_arena_alloc(ws, sizeof(float) * (size_t)n * D);
    if (!q || !k || !v) {
        ct_arena_rewind(ws, mark);
        return ct_fail(CT_ERR_OOM, "reference attn_causal_qkv_dev: scratch");
    }
    const float *src = F(qkv);
    for (int r = 0; r < n; r++) {
        memcpy(q + (size_t)r * D, src + (size_t)r * 3 * D, sizeof(float) * D);
        memcpy(k + (size_t)r * D, src + (size_t)r * 3 * D + D, sizeof(float) * D);
        memcpy(v + (size_t)r * D, src + (size_t)r * 3 * D + 2 * D, sizeof(float) * D);
    }
    ct_status s = ct_ref_kv_write_dev(be, kc, ct_buf_f32(k), slot, n, pos, Smax, (int)D);
    if (s == CT_OK) s = ct_ref_kv_write_dev(be, vc, ct_buf_f32(v), slot, n, pos, Smax, (int)D);
    if (s == CT_OK) s = ct_ref_attn_causal_dev(be, out, ct_buf_f32(q), kc, vc, slot, n, pos, Smax, H, Dh, ws);
    ct_arena_rewind(ws, mark);
    return s;
}

static int stride2(int L) { return L <= 0 ? 0 : (L - 1) / 2 + 1; }

/* Float32 only; its maps are its own (channels-first, as the composition
 * in asr/encoder.c), so a and b are not used. */
ct_status ct_ref_subsample(ct_backend *be, ct_buf x, ct_buf feats, const ct_subsample_weights *w, const int *len,
                           int B, int T, int M, int C, int d, ct_buf a, ct_buf b, ct_arena *ws) {
    (void)a, (void)b;
    const ct_buf bufs[] = {x, feats};
    CT_TRY(f32_only("subsample", bufs, 2));
    const int T1 = stride2(T), T2 = stride2(T1), T3 = stride2(T2);
    const int F1 = stride2(M), F2 = stride2(F1), F3 = stride2(F2);
    int *L = malloc(sizeof(int) * 3 * (size_t)(B > 0 ? B : 1));
    float *s1 = malloc(sizeof(float) * ((size_t)B * C * T1 * F1 + 1)), *s2 = malloc(sizeof(float) * ((size_t)B * C * T2 * F2 + 1)),
          *s3 = malloc(sizeof(float) * ((size_t)B * C * T2 * F2 + 1)), *s4 = malloc(sizeof(float) * ((size_t)B * C * T3 * F3 + 1)),
          *s5 = malloc(sizeof(float) * ((size_t)B * C * T3 * F3 + 1)), *flat = malloc(sizeof(float) * ((size_t)B * T3 * C * F3 + 1));
    ct_status s = L && s1 && s2 && s3 && s4 && s5 && flat ? CT_OK : ct_fail(CT_ERR_OOM, "reference subsample: scratch");
    int *L1 = L, *L2 = L ? L + B : NULL, *L3 = L ? L + 2 * B : NULL;
    for (int r = 0; s == CT_OK && r < B; r++) {
        L1[r] = stride2(len[r] < T ? len[r] : T);
        L2[r] = stride2(L1[r]);
        L3[r] = stride2(L2[r]);
    }
    if (s == CT_OK) s = ct_ref_conv2d_s2(be, s1, F(feats), w->c0_w, w->c0_b, B, C, T, M, CT_ACT_RELU);
    if (s == CT_OK) s = ct_ref_mask_time(be, s1, L1, B, C, T1, F1);
    if (s == CT_OK) s = ct_ref_dwconv2d_s2(be, s2, s1, w->dw1_w, w->dw1_b, B, C, T1, F1, CT_ACT_NONE);
    if (s == CT_OK) s = ct_ref_mask_time(be, s2, L2, B, C, T2, F2);
    if (s == CT_OK) s = ct_ref_conv_pointwise(be, s3, s2, w->pw1_w, w->pw1_b, B, C, C, T2 * F2, CT_ACT_RELU, ws);
    if (s == CT_OK) s = ct_ref_mask_time(be, s3, L2, B, C, T2, F2);
    if (s == CT_OK) s = ct_ref_dwconv2d_s2(be, s4, s3, w->dw2_w, w->dw2_b, B, C, T2, F2, CT_ACT_NONE);
    if (s == CT_OK) s = ct_ref_mask_time(be, s4, L3, B, C, T3, F3);
    if (s == CT_OK) s = ct_ref_conv_pointwise(be, s5, s4, w->pw2_w, w->pw2_b, B, C, C, T3 * F3, CT_ACT_RELU, ws);
    if (s == CT_OK) s = ct_ref_mask_time(be, s5, L3, B, C, T3, F3);
    if (s == CT_OK) {
        for (int r = 0; r < B; r++) /* channels-last flatten: [b, t][f·C + c] */
            for (int c = 0; c < C; c++)
                for (int t = 0; t < T3; t++)
                    for (int f = 0; f < F3; f++)
                        flat[((size_t)r * T3 + t) * C * F3 + (size_t)f * C + c] =
                            s5[(((size_t)r * C + c) * T3 + t) * F3 + f];
        s = ct_ref_matmul(be, F(x), flat, w->out_w, w->out_b, NULL, 1.0f, CT_ACT_NONE, B * T3, d, C * F3, ws);
    }
    free(L), free(s1), free(s2), free(s3), free(s4), free(s5), free(flat);
    return s;
}
