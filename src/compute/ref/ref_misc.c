/* ref_misc.c — reference relative positional table, token + position
 * embedding and argmax (ties to the lowest id, as torch.argmax). */
#include <math.h>

#include "compute/ref/ops_ref.h"

ct_status ct_ref_pos_relative(ct_backend *be, float *y, int T, int D) {
    // y (2T-1, D); float32 throughout, as the reference computes it
    for (int kk = 0; kk < 2 * T - 1; kk++) {
        float pos = (float)(T - 1 - kk);
        for (int i = 0; i < D / 2; i++) {
            float inv_freq = 1.0f / powf(10000.0f, (float)(2 * i) / (float)D);
            float a = inv_freq * pos;
            y[(size_t)kk * D + 2 * i] = sinf(a);
            y[(size_t)kk * D + 2 * i + 1] = cosf(a);
        }
    }
    return CT_OK;
}

ct_status ct_ref_embed(ct_backend *be, float *y, const int32_t *ids, const int32_t *positions, int n,
                       const ct_tensor *tok, const ct_tensor *pos, int D) {
    // y (n,D), ids (n), positions (n), tok (V,D), pos (P,D)
    int64_t V = tok->shape[0], P = pos->shape[0];
    for (int r = 0; r < n; r++) {
        if (ids[r] < 0 || ids[r] >= V) return ct_fail(CT_ERR_INVALID_ARG, "embed: token id %d outside [0,%lld)", ids[r], (long long)V);
        if (positions[r] < 0 || positions[r] >= P)
            return ct_fail(CT_ERR_INVALID_ARG, "embed: position %d outside [0,%lld)", positions[r], (long long)P);
        for (int d = 0; d < D; d++)
            y[(size_t)r * D + d] = ct_ref_weight_at(tok, (size_t)ids[r] * D + d) +
                                   ct_ref_weight_at(pos, (size_t)positions[r] * D + d);
    }
    return CT_OK;
}

ct_status ct_ref_argmax(ct_backend *be, int32_t *ids, const float *x, int n, int N) {
    // ids (n), x (n,N)
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * N;
        int best = 0;
        for (int j = 1; j < N; j++)
            if (xr[j] > xr[best] || (isnan(xr[j]) && !isnan(xr[best]))) best = j;
        ids[r] = best;
    }
    return CT_OK;
}
