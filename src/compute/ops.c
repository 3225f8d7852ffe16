/* ops.c — the typed op calls of ops.h: a backend's version-3 entry when it
 * has one, else its float32 entry after checking that every buffer is F32.
 * No arithmetic here; the CPU tables are reached exactly as before. */
#include "compute/ops.h"

ct_dtype ct_backend_act_dtype(const ct_backend *be) { return be->act_dtype; }

/* The float32 entries see plain float pointers. */
#define F(buf) ((float *)(buf).data)

static int all_f32(const ct_buf *b, int n) {
    for (int i = 0; i < n; i++)
        if (b[i].data && b[i].dtype != CT_DTYPE_F32) return 0;
    return 1;
}

static ct_status not_typed(const ct_backend *be, const char *op, const ct_buf *b, int n) {
    for (int i = 0; i < n; i++)
        if (b[i].data && b[i].dtype != CT_DTYPE_F32)
            return ct_fail(CT_ERR_UNSUPPORTED, "backend %s: %s computes in float32 only (buffer %d is %s)",
                           be->ops->name, op, i, ct_dtype_name(b[i].dtype));
    return ct_fail(CT_ERR_UNSUPPORTED, "backend %s: no %s", be->ops->name, op);
}

/* Typed entry if the table has it (version ≥ 3), else the float32 entry. */
#define HAS_T(e) (be->ops->version >= 3 && be->ops->e)
#define FALLBACK(name, ...)                                                          \
    do {                                                                             \
        const ct_buf bufs_[] = {__VA_ARGS__};                                        \
        const int nb_ = (int)(sizeof bufs_ / sizeof bufs_[0]);                       \
        if (!be->ops->name || !all_f32(bufs_, nb_)) return not_typed(be, #name, bufs_, nb_); \
    } while (0)

ct_status ct_op_matmul(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, ct_buf residual,
                       float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    if (HAS_T(matmul_t)) return be->ops->matmul_t(be, y, x, w, b, residual, alpha, act, M, N, K, ws);
    FALLBACK(matmul, y, x, residual);
    return be->ops->matmul(be, F(y), F(x), w, b, F(residual), alpha, act, M, N, K, ws);
}

ct_status ct_op_layer_norm(ct_backend *be, ct_buf y, ct_buf x, const float *g, const float *b, int M, int D,
                           float eps) {
    if (HAS_T(layer_norm_t)) return be->ops->layer_norm_t(be, y, x, g, b, M, D, eps);
    FALLBACK(layer_norm, y, x);
    return be->ops->layer_norm(be, F(y), F(x), g, b, M, D, eps);
}

ct_status ct_op_glu(ct_backend *be, ct_buf y, ct_buf x, int M, int D) {
    if (HAS_T(glu_t)) return be->ops->glu_t(be, y, x, M, D);
    FALLBACK(glu, y, x);
    return be->ops->glu(be, F(y), F(x), M, D);
}

ct_status ct_op_attn_relpos(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, ct_buf p, const float *u,
                            const float *vb, const int *len, int B, int T, int H, int Dh, ct_arena *ws) {
    if (HAS_T(attn_relpos_t)) return be->ops->attn_relpos_t(be, out, q, k, v, p, u, vb, len, B, T, H, Dh, ws);
    FALLBACK(attn_relpos, out, q, k, v, p);
    return be->ops->attn_relpos(be, F(out), F(q), F(k), F(v), F(p), u, vb, len, B, T, H, Dh, ws);
}

ct_status ct_op_kv_write(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, int S, int pos0, int Smax,
                         int D) {
    if (HAS_T(kv_write_t)) return be->ops->kv_write_t(be, cache, src, slot, n, S, pos0, Smax, D);
    FALLBACK(kv_write, cache, src);
    return be->ops->kv_write(be, F(cache), F(src), slot, n, S, pos0, Smax, D);
}

ct_status ct_op_attn_causal(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot, int n, int S,
                            int pos0, int Smax, int H, int Dh, ct_arena *ws) {
    if (HAS_T(attn_causal_t)) return be->ops->attn_causal_t(be, out, q, kc, vc, slot, n, S, pos0, Smax, H, Dh, ws);
    FALLBACK(attn_causal, out, q, kc, vc);
    return be->ops->attn_causal(be, F(out), F(q), F(kc), F(vc), slot, n, S, pos0, Smax, H, Dh, ws);
}

ct_status ct_op_attn_cross(ct_backend *be, ct_buf out, ct_buf q, ct_buf ek, ct_buf ev, const int *slot,
                           const int *enc_len, int n, int S, int Tenc, int H, int Dh, ct_arena *ws) {
    if (HAS_T(attn_cross_t)) return be->ops->attn_cross_t(be, out, q, ek, ev, slot, enc_len, n, S, Tenc, H, Dh, ws);
    FALLBACK(attn_cross, out, q, ek, ev);
    return be->ops->attn_cross(be, F(out), F(q), F(ek), F(ev), slot, enc_len, n, S, Tenc, H, Dh, ws);
}

ct_status ct_op_conv2d_s2(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int C, int T,
                          int Fq, ct_act act) {
    if (HAS_T(conv2d_s2_t)) return be->ops->conv2d_s2_t(be, y, x, w, b, B, C, T, Fq, act);
    FALLBACK(conv2d_s2, y, x);
    return be->ops->conv2d_s2(be, F(y), F(x), w, b, B, C, T, Fq, act);
}

ct_status ct_op_dwconv2d_s2(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int C, int T,
                            int Fq, ct_act act) {
    if (HAS_T(dwconv2d_s2_t)) return be->ops->dwconv2d_s2_t(be, y, x, w, b, B, C, T, Fq, act);
    FALLBACK(dwconv2d_s2, y, x);
    return be->ops->dwconv2d_s2(be, F(y), F(x), w, b, B, C, T, Fq, act);
}

ct_status ct_op_conv_pointwise(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, int B, int Ci,
                               int Co, int P, ct_act act, ct_arena *ws) {
    if (HAS_T(conv_pointwise_t)) return be->ops->conv_pointwise_t(be, y, x, w, b, B, Ci, Co, P, act, ws);
    FALLBACK(conv_pointwise, y, x);
    return be->ops->conv_pointwise(be, F(y), F(x), w, b, B, Ci, Co, P, act, ws);
}

ct_status ct_op_mask_time(ct_backend *be, ct_buf x, const int *len, int B, int C, int T, int Fq) {
    if (HAS_T(mask_time_t)) return be->ops->mask_time_t(be, x, len, B, C, T, Fq);
    FALLBACK(mask_time, x);
    return be->ops->mask_time(be, F(x), len, B, C, T, Fq);
}

ct_status ct_op_flatten_ct(ct_backend *be, ct_buf y, ct_buf x, int B, int C, int T, int Fq) {
    if (HAS_T(flatten_ct_t)) return be->ops->flatten_ct_t(be, y, x, B, C, T, Fq);
    FALLBACK(flatten_ct, y, x);
    return be->ops->flatten_ct(be, F(y), F(x), B, C, T, Fq);
}

ct_status ct_op_dwconv1d(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int T, int C,
                         int K, ct_act act) {
    if (HAS_T(dwconv1d_t)) return be->ops->dwconv1d_t(be, y, x, w, b, B, T, C, K, act);
    FALLBACK(dwconv1d, y, x);
    return be->ops->dwconv1d(be, F(y), F(x), w, b, B, T, C, K, act);
}

ct_status ct_op_pos_relative(ct_backend *be, ct_buf y, int T, int D) {
    if (HAS_T(pos_relative_t)) return be->ops->pos_relative_t(be, y, T, D);
    FALLBACK(pos_relative, y);
    return be->ops->pos_relative(be, F(y), T, D);
}

ct_status ct_op_embed(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *positions, int n,
                      const ct_tensor *tok, const ct_tensor *pos, int D) {
    if (HAS_T(embed_t)) return be->ops->embed_t(be, y, ids, positions, n, tok, pos, D);
    FALLBACK(embed, y);
    return be->ops->embed(be, F(y), ids, positions, n, tok, pos, D);
}

ct_status ct_op_argmax(ct_backend *be, int32_t *ids, ct_buf x, int n, int N) {
    if (HAS_T(argmax_t)) return be->ops->argmax_t(be, ids, x, n, N);
    FALLBACK(argmax, x);
    return be->ops->argmax(be, ids, F(x), n, N);
}

ct_status ct_op_convert(ct_backend *be, ct_buf y, ct_buf x, size_t n) {
    if (HAS_T(convert)) return be->ops->convert(be, y, x, n);
    if (y.dtype != x.dtype)
        return ct_fail(CT_ERR_UNSUPPORTED, "backend %s: no conversion %s -> %s", be->ops->name,
                       ct_dtype_name(x.dtype), ct_dtype_name(y.dtype));
    if (y.data == x.data || n == 0) return CT_OK;
    return be->ops->copy(be, y.data, x.data, ct_buf_bytes(x, n));
}

/* ---- version 4 ------------------------------------------------------------ */
#define HAS_V4(e) (be->ops->version >= 4 && be->ops->e)

int ct_backend_has_device_steps(const ct_backend *be) {
    return HAS_V4(embed_dev) && HAS_V4(kv_write_dev) && HAS_V4(attn_causal_dev) && HAS_V4(greedy_step);
}

int ct_backend_has_graphs(const ct_backend *be) {
    return HAS_V4(graph_begin) && HAS_V4(graph_end) && HAS_V4(graph_launch) && HAS_V4(graph_free);
}

/* a missing version-4 or later entry */
static ct_status no_v4(const ct_backend *be, const char *op) {
    return ct_fail(CT_ERR_UNSUPPORTED, "backend %s: no %s (table version %d)", be->ops->name, op, be->ops->version);
}

ct_status ct_op_embed_dev(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *pos, int n, const ct_tensor *tok,
                          const ct_tensor *posemb, int D) {
    if (!HAS_V4(embed_dev)) return no_v4(be, "embed_dev");
    return be->ops->embed_dev(be, y, ids, pos, n, tok, posemb, D);
}

ct_status ct_op_kv_write_dev(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, const int32_t *pos,
                             int Smax, int D) {
    if (!HAS_V4(kv_write_dev)) return no_v4(be, "kv_write_dev");
    return be->ops->kv_write_dev(be, cache, src, slot, n, pos, Smax, D);
}

ct_status ct_op_attn_causal_dev(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot, int n,
                                const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws) {
    if (!HAS_V4(attn_causal_dev)) return no_v4(be, "attn_causal_dev");
    return be->ops->attn_causal_dev(be, out, q, kc, vc, slot, n, pos, Smax, H, Dh, ws);
}

ct_status ct_op_greedy_step(ct_backend *be, const ct_greedy_state *g, ct_buf logits, int n, int V) {
    if (!HAS_V4(greedy_step)) return no_v4(be, "greedy_step");
    if (logits.dtype != CT_DTYPE_F32) return ct_fail(CT_ERR_UNSUPPORTED, "greedy_step: logits must be float32");
    return be->ops->greedy_step(be, g, logits, n, V);
}

/* ---- version 5 ------------------------------------------------------------ */
#define HAS_V5(e) (be->ops->version >= 5 && be->ops->e)

int ct_backend_has_fused_encoder(const ct_backend *be) {
    return HAS_V5(layer_norm2) && HAS_V5(glu_dwconv1d) && HAS_V5(attn_relpos_qkv);
}

ct_status ct_op_layer_norm2(ct_backend *be, ct_buf y, ct_buf z, ct_buf x, const float *g1, const float *b1,
                            const float *g2, const float *b2, int M, int D, float eps) {
    if (!HAS_V5(layer_norm2)) return no_v4(be, "layer_norm2");
    return be->ops->layer_norm2(be, y, z, x, g1, b1, g2, b2, M, D, eps);
}

ct_status ct_op_glu_dwconv1d(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, const int *len, int B,
                             int T, int C, int K, ct_act act, ct_arena *ws) {
    if (!HAS_V5(glu_dwconv1d)) return no_v4(be, "glu_dwconv1d");
    return be->ops->glu_dwconv1d(be, y, x, w, b, len, B, T, C, K, act, ws);
}

ct_status ct_op_attn_relpos_qkv(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf p, const float *c, const int *len, int B,
                                int T, int H, int Dh, ct_arena *ws) {
    if (!HAS_V5(attn_relpos_qkv)) return no_v4(be, "attn_relpos_qkv");
    return be->ops->attn_relpos_qkv(be, out, qkv, p, c, len, B, T, H, Dh, ws);
}

/* ---- version 6 ------------------------------------------------------------ */
#define HAS_V6(e) (be->ops->version >= 6 && be->ops->e)

int ct_backend_has_fused_decoder(const ct_backend *be) { return HAS_V6(attn_causal_qkv_dev); }

ct_status ct_op_attn_causal_qkv_dev(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf kc, ct_buf vc, const int *slot,
                                    int n, const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws) {
    if (!HAS_V6(attn_causal_qkv_dev)) return no_v4(be, "attn_causal_qkv_dev");
    return be->ops->attn_causal_qkv_dev(be, out, qkv, kc, vc, slot, n, pos, Smax, H, Dh, ws);
}

int ct_backend_has_fused_subsample(const ct_backend *be) { return HAS_V6(subsample); }

ct_status ct_op_subsample(ct_backend *be, ct_buf x, ct_buf feats, const ct_subsample_weights *w, const int *len, int B,
                          int T, int M, int C, int d, ct_buf a, ct_buf b, ct_arena *ws) {
    if (!HAS_V6(subsample)) return no_v4(be, "subsample");
    return be->ops->subsample(be, x, feats, w, len, B, T, M, C, d, a, b, ws);
}

/* ---- version 5 (continued): the wav2vec2 aligner's ops ------------------ */

int ct_backend_has_w2v2_ops(const ct_backend *be) {
    if (HAS_V5(conv1d_t) && HAS_V5(conv1d_grouped_t) && HAS_V5(gelu_t) && HAS_V5(add_t) && HAS_V5(attn_full_t))
        return 1;
    return be->ops->version >= 2 && be->ops->conv1d && be->ops->conv1d_grouped && be->ops->gelu && be->ops->add &&
           be->ops->attn_full;
}

ct_status ct_op_conv1d(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *bias, int B, int T, int Ci,
                       int Co, int K, int stride, ct_arena *ws) {
    if (HAS_V5(conv1d_t)) return be->ops->conv1d_t(be, y, x, w, bias, B, T, Ci, Co, K, stride, ws);
    FALLBACK(conv1d, y, x);
    return be->ops->conv1d(be, F(y), F(x), w, bias, B, T, Ci, Co, K, stride, ws);
}

ct_status ct_op_conv1d_grouped(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *bias, int B, int T,
                               int C, int G, int K, ct_arena *ws) {
    if (HAS_V5(conv1d_grouped_t)) return be->ops->conv1d_grouped_t(be, y, x, w, bias, B, T, C, G, K, ws);
    FALLBACK(conv1d_grouped, y, x);
    return be->ops->conv1d_grouped(be, F(y), F(x), w, bias, B, T, C, G, K);
}

ct_status ct_op_gelu(ct_backend *be, ct_buf x, size_t n) {
    if (HAS_V5(gelu_t)) return be->ops->gelu_t(be, x, n);
    FALLBACK(gelu, x);
    return be->ops->gelu(be, F(x), n);
}

ct_status ct_op_add(ct_backend *be, ct_buf y, ct_buf a, ct_buf b, size_t n) {
    if (HAS_V5(add_t)) return be->ops->add_t(be, y, a, b, n);
    FALLBACK(add, y, a, b);
    return be->ops->add(be, F(y), F(a), F(b), n);
}

ct_status ct_op_attn_full(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, const int *len, int B, int T,
                          int H, int Dh, ct_dtype prod, ct_arena *ws) {
    if (HAS_V5(attn_full_t)) return be->ops->attn_full_t(be, out, q, k, v, len, B, T, H, Dh, prod, ws);
    FALLBACK(attn_full, out, q, k, v);
    for (int b = 0; len && b < B; b++)
        if (len[b] < T)
            return ct_fail(CT_ERR_UNSUPPORTED, "backend %s: attn_full has no key mask (row %d: %d of %d keys)",
                           be->ops->name, b, len[b], T);
    return be->ops->attn_full(be, F(out), F(q), F(k), F(v), B, T, H, Dh, prod, ws);
}
