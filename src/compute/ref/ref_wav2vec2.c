/* ref_wav2vec2.c — reference ops of backend version 2, for the wav2vec2 CTC
 * aligner: strided conv1d (channels last), the grouped "same" positional
 * conv, exact GELU, elementwise add, plain bidirectional attention. Obvious
 * loops that define the ops; cpu_wav2vec2.c and tests compare against them. */
#include <math.h>

#include "compute/ref/ops_ref.h"

ct_status ct_ref_conv1d(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *bias, int B, int T,
                        int Ci, int Co, int K, int stride, ct_arena *ws) {
    // y (B,To,Co), x (B,T,Ci), w (Co,Ci,K), bias (Co)
    if (T < K || stride < 1) return ct_fail(CT_ERR_INVALID_ARG, "conv1d: %d frames for kernel %d stride %d", T, K, stride);
    if (ct_tensor_numel(w) != (int64_t)Co * Ci * K)
        return ct_fail(CT_ERR_INVALID_ARG, "conv1d: weight has %lld elements, want %d x %d x %d",
                       (long long)ct_tensor_numel(w), Co, Ci, K);
    const int To = (T - K) / stride + 1;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < To; t++)
            for (int o = 0; o < Co; o++) {
                float acc = bias ? bias[o] : 0.0f;
                for (int i = 0; i < Ci; i++)
                    for (int k = 0; k < K; k++)
                        acc += ct_ref_weight_at(w, ((size_t)o * Ci + i) * K + k) *
                               x[((size_t)b * T + (size_t)t * stride + k) * Ci + i];
                y[((size_t)b * To + t) * Co + o] = acc;
            }
    return CT_OK;
}

ct_status ct_ref_conv1d_grouped(ct_backend *be, float *y, const float *x, const float *w, const float *bias, int B,
                                int T, int C, int G, int K) {
    // y (B,T,C), x (B,T,C), w (C,C/G,K), bias (C)
    if (G < 1 || C % G) return ct_fail(CT_ERR_INVALID_ARG, "conv1d_grouped: %d channels in %d groups", C, G);
    const int Cg = C / G, pad = K / 2;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int o = 0; o < C; o++) {
                const int g = o / Cg;
                float acc = bias ? bias[o] : 0.0f;
                for (int i = 0; i < Cg; i++)
                    for (int k = 0; k < K; k++) {
                        int ti = t + k - pad;
                        if (ti < 0 || ti >= T) continue;
                        acc += w[((size_t)o * Cg + i) * K + k] * x[((size_t)b * T + ti) * C + (size_t)g * Cg + i];
                    }
                y[((size_t)b * T + t) * C + o] = acc;
            }
    return CT_OK;
}

ct_status ct_ref_gelu(ct_backend *be, float *x, size_t n) {
    // x (n)
    for (size_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)M_SQRT1_2));
    return CT_OK;
}

ct_status ct_ref_add(ct_backend *be, float *y, const float *a, const float *b, size_t n) {
    // y, a, b (n)
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
    return CT_OK;
}

/* x rounded to bf16 and back (round to nearest even): the BF16 products' inputs. */
static float bf16_round(float x, int bf16) { return bf16 ? ct_bf16_to_f32(ct_f32_to_bf16(x)) : x; }

ct_status ct_ref_attn_full(ct_backend *be, float *out, const float *q, const float *k, const float *v, int B, int T,
                           int H, int Dh, ct_dtype prod, ct_arena *ws) {
    // out, q, k, v (B,T,H*Dh)
    if (prod != CT_DTYPE_F32 && prod != CT_DTYPE_BF16)
        return ct_fail(CT_ERR_INVALID_ARG, "attn_full: products in %s", ct_dtype_name(prod));
    const int D = H * Dh, r = prod == CT_DTYPE_BF16;
    const float scale = 1.0f / sqrtf((float)Dh);
    size_t mark = ct_arena_mark(ws);
    float *s = ct_arena_alloc(ws, sizeof(float) * (size_t)(T > 0 ? T : 1));
    if (!s) return ct_fail(CT_ERR_OOM, "attn_full: scratch for %d keys", T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                const float *qi = q + ((size_t)b * T + i) * D + (size_t)h * Dh;
                for (int j = 0; j < T; j++) {
                    const float *kj = k + ((size_t)b * T + j) * D + (size_t)h * Dh;
                    float acc = 0.0f;
                    for (int d = 0; d < Dh; d++) acc += bf16_round(qi[d], r) * bf16_round(kj[d], r);
                    s[j] = acc * scale;
                }
                ct_ref_softmax(be, s, 1, T);
                for (int j = 0; j < T; j++) s[j] = bf16_round(s[j], r);
                float *o = out + ((size_t)b * T + i) * D + (size_t)h * Dh;
                for (int d = 0; d < Dh; d++) o[d] = 0.0f;
                for (int j = 0; j < T; j++) {
                    const float *vj = v + ((size_t)b * T + j) * D + (size_t)h * Dh;
                    for (int d = 0; d < Dh; d++) o[d] += s[j] * bf16_round(vj[d], r);
                }
            }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}
