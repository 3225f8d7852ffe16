/* ops.h — the ops as the model code calls them: typed activations (ct_buf)
 * over a backend's table (backend.h), one function per op.
 *
 * Each ct_op_X calls the backend's version-3 entry X_t when it has one;
 * otherwise (the CPU tables) every buffer must be F32 and the float32 entry
 * X runs, unchanged. The semantics of each op are those written beside the
 * float32 entry in backend.h; what this header adds is which buffers take
 * which element type:
 *   - "act": the backend's activation type (ct_backend_act_dtype: F32 on the
 *     CPU, BF16 or F16 on CUDA);
 *   - "f32": float32 on every backend (the residual stream, features,
 *     logits, the model's small parameters);
 *   - "act|f32": either; the backend converts on the way in or out.
 * A backend may accept more combinations; these are the ones the model uses
 * and the tests check.
 */
#ifndef CT_COMPUTE_OPS_H
#define CT_COMPUTE_OPS_H

#include "compute/backend.h"

ct_dtype ct_backend_act_dtype(const ct_backend *be);

/* y (act|f32) = residual (f32) + alpha · act(x (act) · wᵀ + b); residual
 * may be CT_BUF_NONE; y f32 when residual is given. */
ct_status ct_op_matmul(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, ct_buf residual,
                       float alpha, ct_act act, int M, int N, int K, ct_arena *ws);
/* y (act|f32) = LN(x (f32)); y may equal x when both are f32. The aligner
 * also passes x in act (its first conv's output, the feature projection's
 * input): CUDA takes either, in place when the types agree. */
ct_status ct_op_layer_norm(ct_backend *be, ct_buf y, ct_buf x, const float *g, const float *b, int M, int D,
                           float eps);
/* y, x: act. */
ct_status ct_op_glu(ct_backend *be, ct_buf y, ct_buf x, int M, int D);
/* out, q, k, v, p: act; u, vb f32 parameters. */
ct_status ct_op_attn_relpos(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, ct_buf p, const float *u,
                            const float *vb, const int *len, int B, int T, int H, int Dh, ct_arena *ws);
/* cache, src: act. */
ct_status ct_op_kv_write(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, int S, int pos0, int Smax,
                         int D);
/* out, q, kc, vc: act. */
ct_status ct_op_attn_causal(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot, int n, int S,
                            int pos0, int Smax, int H, int Dh, ct_arena *ws);
/* out, q, ek, ev: act. */
ct_status ct_op_attn_cross(ct_backend *be, ct_buf out, ct_buf q, ct_buf ek, ct_buf ev, const int *slot,
                           const int *enc_len, int n, int S, int Tenc, int H, int Dh, ct_arena *ws);
/* y act, x f32 (features). */
ct_status ct_op_conv2d_s2(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int C, int T,
                          int F, ct_act act);
/* y, x: act. */
ct_status ct_op_dwconv2d_s2(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int C, int T,
                            int F, ct_act act);
/* y, x: act. */
ct_status ct_op_conv_pointwise(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, int B, int Ci,
                               int Co, int P, ct_act act, ct_arena *ws);
/* x: act. */
ct_status ct_op_mask_time(ct_backend *be, ct_buf x, const int *len, int B, int C, int T, int F);
/* y, x: act. */
ct_status ct_op_flatten_ct(ct_backend *be, ct_buf y, ct_buf x, int B, int C, int T, int F);
/* y, x: act. */
ct_status ct_op_dwconv1d(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int T, int C,
                         int K, ct_act act);
/* y: act. */
ct_status ct_op_pos_relative(ct_backend *be, ct_buf y, int T, int D);
/* y: f32 (the decoder's residual stream). */
ct_status ct_op_embed(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *positions, int n,
                      const ct_tensor *tok, const ct_tensor *pos, int D);
/* x: f32 (logits). */
ct_status ct_op_argmax(ct_backend *be, int32_t *ids, ct_buf x, int n, int N);
/* y = x elementwise in y's type, n elements; same types: a copy. */
ct_status ct_op_convert(ct_backend *be, ct_buf y, ct_buf x, size_t n);

/* Version 4 (backend.h): one decoder position whose ids and position are
 * int32 backend memory. y f32; cache, src, out, q, kc, vc act. A backend
 * without the entry refuses (CT_ERR_UNSUPPORTED). */
ct_status ct_op_embed_dev(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *pos, int n, const ct_tensor *tok,
                          const ct_tensor *posemb, int D);
ct_status ct_op_kv_write_dev(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, const int32_t *pos,
                             int Smax, int D);
ct_status ct_op_attn_causal_dev(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot, int n,
                                const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws);
/* logits f32. */
ct_status ct_op_greedy_step(ct_backend *be, const ct_greedy_state *g, ct_buf logits, int n, int V);
/* Whether the backend has the step ops and whether it captures graphs. */
int ct_backend_has_device_steps(const ct_backend *be);
int ct_backend_has_graphs(const ct_backend *be);

/* Version 5 (backend.h): fused encoder ops. A backend without them refuses
 * (CT_ERR_UNSUPPORTED); the encoder then runs their compositions.
 * layer_norm2: y f32 (may equal x), z act, x f32. glu_dwconv1d: y, x act.
 * attn_relpos_qkv: out, qkv, p act; c f32. */
int ct_backend_has_fused_encoder(const ct_backend *be);
ct_status ct_op_layer_norm2(ct_backend *be, ct_buf y, ct_buf z, ct_buf x, const float *g1, const float *b1,
                            const float *g2, const float *b2, int M, int D, float eps);
ct_status ct_op_glu_dwconv1d(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, const int *len, int B,
                             int T, int C, int K, ct_act act, ct_arena *ws);
ct_status ct_op_attn_relpos_qkv(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf p, const float *c, const int *len, int B,
                                int T, int H, int Dh, ct_arena *ws);
/* Version 6 (backend.h): the fused decoder step. qkv (n, 3·H·Dh), out,
 * kc, vc act; pos int32 backend memory. Without it the decoder runs
 * kv_write_dev twice and attn_causal_dev over three separate products. */
int ct_backend_has_fused_decoder(const ct_backend *be);
ct_status ct_op_attn_causal_qkv_dev(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf kc, ct_buf vc, const int *slot,
                                    int n, const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws);
/* subsample: x f32 or act, feats f32, a, b act scratch (backend.h). */
int ct_backend_has_fused_subsample(const ct_backend *be);
ct_status ct_op_subsample(ct_backend *be, ct_buf x, ct_buf feats, const ct_subsample_weights *w, const int *len, int B,
                          int T, int M, int C, int d, ct_buf a, ct_buf b, ct_arena *ws);
/* Version 5 (backend.h): the wav2vec2 aligner's ops. Without the typed
 * entry, every buffer must be F32 and the version-2 float32 entry runs. */
/* y (act|f32) = conv1d(x (act|f32)); the backend may compute in float32 and
 * round once (CUDA: f32 accumulation, y f32 or act). */
ct_status ct_op_conv1d(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *bias, int B, int T, int Ci,
                       int Co, int K, int stride, ct_arena *ws);
/* y, x: act; w f32 (C, C/G, K). */
ct_status ct_op_conv1d_grouped(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *bias, int B, int T,
                               int C, int G, int K, ct_arena *ws);
/* x: act|f32, in place. */
ct_status ct_op_gelu(ct_backend *be, ct_buf x, size_t n);
/* y = a + b: y f32 (the residual stream), a f32, b act|f32; y may equal a. */
ct_status ct_op_add(ct_backend *be, ct_buf y, ct_buf a, ct_buf b, size_t n);
/* out, q, k, v: act. len NULL: no mask; else keys j ≥ len[b] masked and
 * query rows i ≥ len[b] zero (the CPU entries take no mask: a short length
 * fails there). prod as attn_full (a backend computing in act ignores it). */
ct_status ct_op_attn_full(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, const int *len, int B, int T,
                          int H, int Dh, ct_dtype prod, ct_arena *ws);
int ct_backend_has_w2v2_ops(const ct_backend *be);

/* Bytes of n elements of the buffer's type. */
static inline size_t ct_buf_bytes(ct_buf b, size_t n) { return n * ct_dtype_size(b.dtype); }
/* The buffer advanced by n elements. */
static inline ct_buf ct_buf_at(ct_buf b, size_t n) {
    return ct_buf_make(b.data ? (char *)b.data + ct_buf_bytes(b, n) : NULL, b.dtype);
}

#endif
