/* ops_ref.h — the plain float32 reference implementation of every op of
 * compute/backend.h: obvious loops, no BLAS, no intrinsics. They define what
 * each op computes; the fast CPU paths and the CUDA kernels are tested
 * against them. Signatures and shapes are those of ct_backend_ops.
 */
#ifndef CT_COMPUTE_REF_OPS_REF_H
#define CT_COMPUTE_REF_OPS_REF_H

#include <math.h>

#include "compute/backend.h"

/* Float value of weight element i (any float dtype). */
float ct_ref_weight_at(const ct_tensor *w, size_t i);
static inline float ct_ref_act(float x, ct_act act) {
    switch (act) {
    case CT_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case CT_ACT_SILU: return x / (1.0f + expf(-x));
    default: return x;
    }
}

ct_status ct_ref_matmul(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                        const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws);
ct_status ct_ref_layer_norm(ct_backend *be, float *y, const float *x, const float *g, const float *b, int M,
                            int D, float eps);
ct_status ct_ref_softmax(ct_backend *be, float *x, int M, int N);
ct_status ct_ref_activate(ct_backend *be, float *x, size_t n, ct_act act);
ct_status ct_ref_glu(ct_backend *be, float *y, const float *x, int M, int D);
ct_status ct_ref_attn_relpos(ct_backend *be, float *out, const float *q, const float *k, const float *v,
                             const float *p, const float *u, const float *vb, const int *len, int B, int T,
                             int H, int Dh, ct_arena *ws);
ct_status ct_ref_kv_write(ct_backend *be, float *cache, const float *src, const int *slot, int n, int S,
                          int pos0, int Smax, int D);
ct_status ct_ref_attn_causal(ct_backend *be, float *out, const float *q, const float *kc, const float *vc,
                             const int *slot, int n, int S, int pos0, int Smax, int H, int Dh, ct_arena *ws);
ct_status ct_ref_attn_cross(ct_backend *be, float *out, const float *q, const float *ek, const float *ev,
                            const int *slot, const int *enc_len, int n, int S, int Tenc, int H, int Dh,
                            ct_arena *ws);
ct_status ct_ref_conv2d_s2(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B,
                           int C, int T, int F, ct_act act);
ct_status ct_ref_dwconv2d_s2(ct_backend *be, float *y, const float *x, const float *w, const float *b,
                             int B, int C, int T, int F, ct_act act);
ct_status ct_ref_conv_pointwise(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                                int B, int Ci, int Co, int P, ct_act act, ct_arena *ws);
ct_status ct_ref_mask_time(ct_backend *be, float *x, const int *len, int B, int C, int T, int F);
ct_status ct_ref_flatten_ct(ct_backend *be, float *y, const float *x, int B, int C, int T, int F);
ct_status ct_ref_dwconv1d(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B,
                          int T, int C, int K, ct_act act);
ct_status ct_ref_pos_relative(ct_backend *be, float *y, int T, int D);
ct_status ct_ref_embed(ct_backend *be, float *y, const int32_t *ids, const int32_t *positions, int n,
                       const ct_tensor *tok, const ct_tensor *pos, int D);
ct_status ct_ref_argmax(ct_backend *be, int32_t *ids, const float *x, int n, int N);
/* version 4 (ref_step.c) */
ct_status ct_ref_embed_dev(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *pos, int n,
                           const ct_tensor *tok, const ct_tensor *posemb, int D);
ct_status ct_ref_kv_write_dev(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, const int32_t *pos,
                              int Smax, int D);
ct_status ct_ref_attn_causal_dev(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot, int n,
                                 const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws);
ct_status ct_ref_greedy_step(ct_backend *be, const ct_greedy_state *g, ct_buf logits, int n, int V);
/* version 5 (ref_fused.c): the compositions the fused entries stand for */
ct_status ct_ref_layer_norm2(ct_backend *be, ct_buf y, ct_buf z, ct_buf x, const float *g1, const float *b1,
                             const float *g2, const float *b2, int M, int D, float eps);
ct_status ct_ref_glu_dwconv1d(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, const int *len,
                              int B, int T, int C, int K, ct_act act, ct_arena *ws);
ct_status ct_ref_attn_relpos_qkv(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf p, const float *c, const int *len,
                                 int B, int T, int H, int Dh, ct_arena *ws);
/* version 6 (ref_fused.c) */
ct_status ct_ref_attn_causal_qkv_dev(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf kc, ct_buf vc, const int *slot,
                                     int n, const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws);
ct_status ct_ref_subsample(ct_backend *be, ct_buf x, ct_buf feats, const ct_subsample_weights *w, const int *len,
                           int B, int T, int M, int C, int d, ct_buf a, ct_buf b, ct_arena *ws);
/* version 2 (ref_wav2vec2.c) */
ct_status ct_ref_conv1d(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *bias, int B, int T,
                        int Ci, int Co, int K, int stride, ct_arena *ws);
ct_status ct_ref_conv1d_grouped(ct_backend *be, float *y, const float *x, const float *w, const float *bias, int B,
                                int T, int C, int G, int K);
ct_status ct_ref_gelu(ct_backend *be, float *x, size_t n);
ct_status ct_ref_add(ct_backend *be, float *y, const float *a, const float *b, size_t n);
ct_status ct_ref_attn_full(ct_backend *be, float *out, const float *q, const float *k, const float *v, int B, int T,
                           int H, int Dh, ct_dtype prod, ct_arena *ws);

#endif
