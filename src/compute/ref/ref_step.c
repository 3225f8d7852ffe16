/* ref_step.c — the version 4 step ops on the CPU tables (backend.h):
 * backend memory is host memory there, so each reads its device-resident
 * ids and position and calls the op it stands for (embed, kv_write,
 * attn_causal of the same table), and the greedy step is the host loop's
 * rule (asr/generate.c) written over the state arrays. These are the
 * definitions the CUDA kernels are compared against. */
#include <math.h>

#include "compute/ref/ops_ref.h"

ct_status ct_ref_embed_dev(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *pos, int n,
                           const ct_tensor *tok, const ct_tensor *posemb, int D) {
    if (y.dtype != CT_DTYPE_F32) return ct_fail(CT_ERR_UNSUPPORTED, "embed_dev: float32 only on the CPU");
    for (int r = 0; r < n; r++) /* one row at a time: every row shares the position *pos */
        CT_TRY(ct_ref_embed(be, (float *)y.data + (size_t)r * D, ids + r, pos, 1, tok, posemb, D));
    return CT_OK;
}

ct_status ct_ref_kv_write_dev(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, const int32_t *pos,
                              int Smax, int D) {
    if (cache.dtype != CT_DTYPE_F32 || src.dtype != CT_DTYPE_F32)
        return ct_fail(CT_ERR_UNSUPPORTED, "kv_write_dev: float32 only on the CPU");
    return be->ops->kv_write(be, cache.data, src.data, slot, n, 1, *pos, Smax, D);
}

ct_status ct_ref_attn_causal_dev(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot, int n,
                                 const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws) {
    if (out.dtype != CT_DTYPE_F32 || q.dtype != CT_DTYPE_F32 || kc.dtype != CT_DTYPE_F32 || vc.dtype != CT_DTYPE_F32)
        return ct_fail(CT_ERR_UNSUPPORTED, "attn_causal_dev: float32 only on the CPU");
    return be->ops->attn_causal(be, out.data, q.data, kc.data, vc.data, slot, n, 1, *pos, Smax, H, Dh, ws);
}

ct_status ct_ref_greedy_step(ct_backend *be, const ct_greedy_state *g, ct_buf logits, int n, int V) {
    const float *x = logits.data;
    for (int r = 0; r < n; r++) {
        if (g->stop[r]) continue; /* finished rows are left alone */
        int32_t t;
        CT_TRY(ct_ref_argmax(be, &t, x + (size_t)r * V, 1, V));
        if (g->count[r] >= g->budget) return ct_fail(CT_ERR_INTERNAL, "greedy_step: row %d past its budget", r);
        g->tokens[(size_t)r * g->budget + g->count[r]] = t;
        int c = ++g->count[r];
        int stop = 0;
        if (g->stop_eos && t == g->eos && !g->forced) stop = g->stop_eos;
        else if (c >= g->budget) stop = g->stop_budget;
        else if (g->row_budget && c >= g->row_budget[r]) stop = g->stop_row_budget;
        if (stop) {
            g->stop[r] = stop;
            --*g->active;
        } else {
            g->ids[r] = g->forced ? g->forced[(size_t)r * g->forced_stride + c - 1] : t;
        }
    }
    ++*g->pos;
    return CT_OK;
}
