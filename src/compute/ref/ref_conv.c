/* ref_conv.c — reference convolutions of the subsampling stage (3×3 stride-2
 * conv 1→C, depthwise 3×3 stride 2) and of the conformer conv module
 * (depthwise conv1d with BatchNorm folded), plus time masking and the
 * channel-major flatten. Zero padding everywhere (PyTorch Conv semantics). */
#include "compute/ref/ops_ref.h"

ct_status ct_ref_conv2d_s2(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B,
                           int C, int T, int F, ct_act act) {
    // y (B,C,To,Fo), x (B,T,F), w (C,1,3,3), b (C)
    const int To = (T - 1) / 2 + 1, Fo = (F - 1) / 2 + 1;
    for (int bb = 0; bb < B; bb++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < To; t++)
                for (int f = 0; f < Fo; f++) {
                    float acc = b ? b[c] : 0.0f;
                    for (int dt = 0; dt < 3; dt++)
                        for (int df = 0; df < 3; df++) {
                            int ti = 2 * t - 1 + dt, fi = 2 * f - 1 + df;
                            if (ti < 0 || ti >= T || fi < 0 || fi >= F) continue;
                            acc += w[c * 9 + dt * 3 + df] * x[((size_t)bb * T + ti) * F + fi];
                        }
                    y[(((size_t)bb * C + c) * To + t) * Fo + f] = ct_ref_act(acc, act);
                }
    return CT_OK;
}

ct_status ct_ref_dwconv2d_s2(ct_backend *be, float *y, const float *x, const float *w, const float *b,
                             int B, int C, int T, int F, ct_act act) {
    // y (B,C,To,Fo), x (B,C,T,F), w (C,1,3,3), b (C)
    const int To = (T - 1) / 2 + 1, Fo = (F - 1) / 2 + 1;
    for (int bb = 0; bb < B; bb++)
        for (int c = 0; c < C; c++) {
            const float *xc = x + ((size_t)bb * C + c) * T * F;
            for (int t = 0; t < To; t++)
                for (int f = 0; f < Fo; f++) {
                    float acc = b ? b[c] : 0.0f;
                    for (int dt = 0; dt < 3; dt++)
                        for (int df = 0; df < 3; df++) {
                            int ti = 2 * t - 1 + dt, fi = 2 * f - 1 + df;
                            if (ti < 0 || ti >= T || fi < 0 || fi >= F) continue;
                            acc += w[c * 9 + dt * 3 + df] * xc[(size_t)ti * F + fi];
                        }
                    y[(((size_t)bb * C + c) * To + t) * Fo + f] = ct_ref_act(acc, act);
                }
        }
    return CT_OK;
}

ct_status ct_ref_mask_time(ct_backend *be, float *x, const int *len, int B, int C, int T, int F) {
    // x (B,C,T,F), len (B)
    for (int bb = 0; bb < B; bb++)
        for (int c = 0; c < C; c++)
            for (int t = len[bb] < 0 ? 0 : len[bb]; t < T; t++)
                for (int f = 0; f < F; f++) x[(((size_t)bb * C + c) * T + t) * F + f] = 0.0f;
    return CT_OK;
}

ct_status ct_ref_flatten_ct(ct_backend *be, float *y, const float *x, int B, int C, int T, int F) {
    // y (B,T,C*F), x (B,C,T,F)
    for (int bb = 0; bb < B; bb++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < T; t++)
                for (int f = 0; f < F; f++)
                    y[((size_t)bb * T + t) * C * F + (size_t)c * F + f] = x[(((size_t)bb * C + c) * T + t) * F + f];
    return CT_OK;
}

ct_status ct_ref_dwconv1d(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B,
                          int T, int C, int K, ct_act act) {
    // y (B,T,C), x (B,T,C), w (C,K), b (C)
    const int pad = (K - 1) / 2;
    for (int bb = 0; bb < B; bb++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                float acc = b ? b[c] : 0.0f;
                for (int k = 0; k < K; k++) {
                    int ti = t - pad + k;
                    if (ti < 0 || ti >= T) continue;
                    acc += w[c * K + k] * x[((size_t)bb * T + ti) * C + c];
                }
                y[((size_t)bb * T + t) * C + c] = ct_ref_act(acc, act);
            }
    return CT_OK;
}
