/* cpu_wav2vec2.c — fast CPU paths of the version-2 ops: strided conv1d as
 * im2col tiles × OpenBLAS sgemm, attention as two sgemm per (row, head) with
 * an OpenMP softmax between, OpenMP loops for the grouped positional conv,
 * GELU and add. Tested against ref_wav2vec2.c in tests/unit/test_align_ops.c. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_math.h"
#include "compute/ref/ops_ref.h"

#define CT_CONV_ROWS 2048 /* output frames per im2col tile (12.6 MB at 512 channels × 3 taps) */

ct_status ct_cpu_conv1d(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *bias, int B, int T,
                        int Ci, int Co, int K, int stride, ct_arena *ws) {
    // y (B,To,Co), x (B,T,Ci), w (Co,Ci,K), bias (Co)
    if (T < K || stride < 1) return ct_fail(CT_ERR_INVALID_ARG, "conv1d: %d frames for kernel %d stride %d", T, K, stride);
    if (ct_tensor_numel(w) != (int64_t)Co * Ci * K)
        return ct_fail(CT_ERR_INVALID_ARG, "conv1d: weight has %lld elements, want %d x %d x %d",
                       (long long)ct_tensor_numel(w), Co, Ci, K);
    const int To = (T - K) / stride + 1, CK = Ci * K;
    size_t mark = ct_arena_mark(ws);
    const float *wf = w->data;
    if (w->dtype != CT_DTYPE_F32) {
        float *tmp = ct_arena_alloc(ws, sizeof(float) * (size_t)Co * CK);
        if (!tmp) return ct_fail(CT_ERR_OOM, "conv1d: widened weight");
        ct_widen_half(tmp, (const uint16_t *)w->data, (size_t)Co * CK, w->dtype == CT_DTYPE_BF16);
        wf = tmp;
    }
    float *col = ct_arena_alloc(ws, sizeof(float) * (size_t)CT_CONV_ROWS * CK);
    if (!col) {
        ct_arena_rewind(ws, mark);
        return ct_fail(CT_ERR_OOM, "conv1d: im2col tile of %d x %d", CT_CONV_ROWS, CK);
    }
    for (int b = 0; b < B; b++)
        for (int t0 = 0; t0 < To; t0 += CT_CONV_ROWS) {
            const int nt = To - t0 < CT_CONV_ROWS ? To - t0 : CT_CONV_ROWS;
#pragma omp parallel for schedule(static) if ((size_t)nt * CK > CT_PAR_MIN)
            for (int r = 0; r < nt; r++) {
                const float *xs = x + ((size_t)b * T + (size_t)(t0 + r) * stride) * Ci;
                float *c = col + (size_t)r * CK;
                for (int i = 0; i < Ci; i++)
                    for (int k = 0; k < K; k++) c[i * K + k] = xs[(size_t)k * Ci + i];
            }
            float *yt = y + ((size_t)b * To + t0) * Co;
            if (bias)
                for (int r = 0; r < nt; r++) memcpy(yt + (size_t)r * Co, bias, sizeof(float) * Co);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nt, Co, CK, 1.0f, col, CK, wf, CK,
                        bias ? 1.0f : 0.0f, yt, Co);
        }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

ct_status ct_cpu_conv1d_grouped(ct_backend *be, float *y, const float *x, const float *w, const float *bias, int B,
                                int T, int C, int G, int K) {
    // y (B,T,C), x (B,T,C), w (C,C/G,K), bias (C)
    if (G < 1 || C % G) return ct_fail(CT_ERR_INVALID_ARG, "conv1d_grouped: %d channels in %d groups", C, G);
    const int Cg = C / G, pad = K / 2;
#pragma omp parallel for schedule(static) if ((size_t)B * T * C * Cg * K > CT_PAR_MIN)
    for (int bt = 0; bt < B * T; bt++) {
        const int b = bt / T, t = bt % T;
        float *yr = y + (size_t)bt * C;
        for (int o = 0; o < C; o++) yr[o] = bias ? bias[o] : 0.0f;
        for (int k = 0; k < K; k++) {
            const int ti = t + k - pad;
            if (ti < 0 || ti >= T) continue;
            const float *xr = x + ((size_t)b * T + ti) * C;
            for (int o = 0; o < C; o++) {
                const float *wo = w + (size_t)o * Cg * K + k;
                const float *xg = xr + (size_t)(o / Cg) * Cg;
                float acc = 0.0f;
                for (int i = 0; i < Cg; i++) acc += wo[(size_t)i * K] * xg[i];
                yr[o] += acc;
            }
        }
    }
    return CT_OK;
}

ct_status ct_cpu_gelu(ct_backend *be, float *x, size_t n) {
    // x (n)
#pragma omp parallel for schedule(static) if (n > CT_PAR_MIN)
    for (size_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)M_SQRT1_2));
    return CT_OK;
}

ct_status ct_cpu_add(ct_backend *be, float *y, const float *a, const float *b, size_t n) {
    // y, a, b (n)
#pragma omp parallel for schedule(static) if (n > CT_PAR_MIN)
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
    return CT_OK;
}

ct_status ct_cpu_attn_full(ct_backend *be, float *out, const float *q, const float *k, const float *v, int B, int T,
                           int H, int Dh, ct_arena *ws) {
    // out, q, k, v (B,T,H*Dh)
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    size_t mark = ct_arena_mark(ws);
    float *s = ct_arena_alloc(ws, sizeof(float) * (size_t)T * (size_t)(T > 0 ? T : 1));
    if (!s) return ct_fail(CT_ERR_OOM, "attn_full: %d x %d scores", T, T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const size_t off = (size_t)b * T * D + (size_t)h * Dh;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, Dh, scale, q + off, D, k + off, D, 0.0f, s, T);
#pragma omp parallel for schedule(static) if ((size_t)T * T > CT_PAR_MIN)
            for (int i = 0; i < T; i++) ct_ref_softmax(be, s + (size_t)i * T, 1, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, Dh, T, 1.0f, s, T, v + off, D, 0.0f, out + off,
                        D);
        }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}
