/* cpu_elementwise.c — OpenMP versions of the cheap ops (layer norm,
 * activations, GLU, the subsampling convolutions, depthwise conv1d). Each
 * computes every element as its reference twin does, split across threads;
 * SiLU and sigmoid use the vectorisable ct_fast_expf (≈2 ulp from libm), the
 * rest equals the reference bit for bit. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "compute/cpu/cpu_fast.h"
#include "core/dtype.h"
#include "compute/cpu/cpu_math.h"
#include "compute/cpu/cpu_vec.h"
#include "compute/ref/ops_ref.h"

/* SiLU x/(1 + e^(−x)) of 16 lanes in place: the operations of ct_fast_silu
 * (no FMA contraction), so each lane equals the scalar result. */
static inline void v_silu(vf *v) {
    vf e = -*v;
    v_exp(&e);
    *v = *v / (e + 1.0f);
}

/* alpha·relu?(y + b) + r, with whether b and r exist fixed at compile time
 * (hb, hr are literals at every call). A loop that tests `b ? b[i] : 0`
 * inside is vectorised as a masked load from b, and with b NULL every
 * masked-off load of an unmapped page takes a fault-suppression microcode
 * assist: on Sapphire Rapids those loads cost ~45 % of the int8 op's
 * epilogue (perf annotate; docs/PERFORMANCE.md "The int8 op's epilogue").
 * Adding a literal 0.0f keeps the bits of the branchy form. */
static inline __attribute__((always_inline)) void bias_act_lin(float *restrict y, const float *restrict b,
                                                               const float *restrict r, float alpha, const int relu,
                                                               int n, const int hb, const int hr) {
#pragma omp simd
    for (int i = 0; i < n; i++) {
        float v = y[i] + (hb ? b[i] : 0.0f);
        if (relu) v = v > 0.0f ? v : 0.0f;
        y[i] = alpha * v + (hr ? r[i] : 0.0f);
    }
}

CT_VCLONES void ct_fast_bias_act(float *restrict y, const float *restrict b, const float *restrict r, float alpha,
                                 int act, int n) {
    if (act == 2) { /* SiLU; the tail through one zero-padded vector */
        vf v, bv = V_SPLAT(0.0f), rv = V_SPLAT(0.0f);
        for (int i = 0; i < n; i += CT_V) {
            const int k = n - i < CT_V ? n - i : CT_V;
            v = V_SPLAT(0.0f);
            memcpy(&v, y + i, (size_t)k * sizeof *y);
            if (b) memcpy(&bv, b + i, (size_t)k * sizeof *b);
            if (r) memcpy(&rv, r + i, (size_t)k * sizeof *r);
            v += bv;
            v_silu(&v);
            v = alpha * v + rv;
            memcpy(y + i, &v, (size_t)k * sizeof *y);
        }
    } else if (act == 1) {
        if (b && r) bias_act_lin(y, b, r, alpha, 1, n, 1, 1);
        else if (b) bias_act_lin(y, b, r, alpha, 1, n, 1, 0);
        else if (r) bias_act_lin(y, b, r, alpha, 1, n, 0, 1);
        else bias_act_lin(y, b, r, alpha, 1, n, 0, 0);
    } else {
        if (b && r) bias_act_lin(y, b, r, alpha, 0, n, 1, 1);
        else if (b) bias_act_lin(y, b, r, alpha, 0, n, 1, 0);
        else if (r) bias_act_lin(y, b, r, alpha, 0, n, 0, 1);
        else bias_act_lin(y, b, r, alpha, 0, n, 0, 0);
    }
}

typedef uint32_t vu __attribute__((vector_size(CT_V * 4)));
typedef uint16_t vh __attribute__((vector_size(CT_V * 2)));

CT_VCLONES void ct_fast_f32_to_bf16(uint16_t *restrict dst, const float *restrict x, size_t n) {
    size_t i = 0;
    for (; i + CT_V <= n; i += CT_V) {
        vu u;
        memcpy(&u, x + i, sizeof u);
        const vu nan = (vu)((u & 0x7fffffffu) > 0x7f800000u); /* all ones where NaN */
        const vu r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        const vu q = (u >> 16) | 0x40u;
        const vh h = __builtin_convertvector((nan & q) | (~nan & r), vh);
        memcpy(dst + i, &h, sizeof h);
    }
    for (; i < n; i++) dst[i] = ct_f32_to_bf16(x[i]);
}

ct_status ct_cpu_layer_norm(ct_backend *be, float *y, const float *x, const float *g, const float *b, int M,
                            int D, float eps) {
    // y (M,D), x (M,D), g (D), b (D)
#pragma omp parallel for schedule(static) if ((size_t)M * D > CT_PAR_MIN)
    for (int m = 0; m < M; m++) ct_ref_layer_norm(be, y + (size_t)m * D, x + (size_t)m * D, g, b, 1, D, eps);
    return CT_OK;
}

ct_status ct_cpu_activate(ct_backend *be, float *x, size_t n, ct_act act) {
    // x (n)
    if (act == CT_ACT_NONE) return CT_OK;
    const size_t chunk = 4096;
#pragma omp parallel for schedule(static) if (n > CT_PAR_MIN)
    for (size_t i = 0; i < n; i += chunk)
        ct_fast_bias_act(x + i, NULL, NULL, 1.0f, (int)act, (int)(n - i < chunk ? n - i : chunk));
    return CT_OK;
}

ct_status ct_cpu_glu(ct_backend *be, float *y, const float *x, int M, int D) {
    // y (M,D), x (M,2D)
#pragma omp parallel for schedule(static) if ((size_t)M * D > CT_PAR_MIN)
    for (int m = 0; m < M; m++) {
        const float *a = x + (size_t)m * 2 * D, *g = a + D;
        float *yr = y + (size_t)m * D;
#pragma omp simd
        for (int c = 0; c < D; c++) yr[c] = a[c] * ct_fast_sigmoid(g[c]);
    }
    return CT_OK;
}

/* One 3x3, stride-2, pad-1 plane: y (To,Fo) from x (T,F). The reference's
 * loops turned inside out so that the innermost runs along an output row
 * (vectorisable, stride-2 reads): each output still starts from the bias
 * and adds its taps in the reference's (dt, df) order, skipping the same
 * padded ones, without FMA contraction (ISO C mode), so it equals
 * ct_ref_conv2d_s2 bit for bit (test_convs_and_elementwise). */
CT_VCLONES static void conv3x3_s2_plane(float *restrict y, const float *restrict x, const float *w9, float bias,
                                        int T, int F, int act) {
    const int To = (T - 1) / 2 + 1, Fo = (F - 1) / 2 + 1;
    for (int t = 0; t < To; t++) {
        float *yr = y + (size_t)t * Fo;
        for (int f = 0; f < Fo; f++) yr[f] = bias;
        for (int dt = 0; dt < 3; dt++) {
            const int ti = 2 * t - 1 + dt;
            if (ti < 0 || ti >= T) continue;
            const float *xr = x + (size_t)ti * F;
            for (int df = 0; df < 3; df++) {
                const float wv = w9[dt * 3 + df];
                /* fi = 2f - 1 + df inside [0, F) */
                const int lim = F - df, f0 = df == 0 ? 1 : 0;
                const int f1 = lim < 0 ? 0 : lim / 2 + 1 < Fo ? lim / 2 + 1 : Fo;
#pragma omp simd
                for (int f = f0; f < f1; f++) yr[f] += wv * xr[2 * f - 1 + df];
            }
        }
        if (act == CT_ACT_RELU)
            for (int f = 0; f < Fo; f++) yr[f] = yr[f] > 0.0f ? yr[f] : 0.0f;
        else if (act != CT_ACT_NONE)
            for (int f = 0; f < Fo; f++) yr[f] = ct_ref_act(yr[f], (ct_act)act);
    }
}

ct_status ct_cpu_conv2d_s2(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B,
                           int C, int T, int F, ct_act act) {
    // y (B,C,To,Fo), x (B,T,F), w (C,1,3,3), b (C)
    const int To = (T - 1) / 2 + 1, Fo = (F - 1) / 2 + 1;
#pragma omp parallel for collapse(2) schedule(static)
    for (int bb = 0; bb < B; bb++)
        for (int c = 0; c < C; c++)
            conv3x3_s2_plane(y + ((size_t)bb * C + c) * To * Fo, x + (size_t)bb * T * F, w + (size_t)c * 9,
                             b ? b[c] : 0.0f, T, F, (int)act);
    return CT_OK;
}

ct_status ct_cpu_dwconv2d_s2(ct_backend *be, float *y, const float *x, const float *w, const float *b,
                             int B, int C, int T, int F, ct_act act) {
    // y (B,C,To,Fo), x (B,C,T,F), w (C,1,3,3), b (C)
    const int To = (T - 1) / 2 + 1, Fo = (F - 1) / 2 + 1;
#pragma omp parallel for collapse(2) schedule(static)
    for (int bb = 0; bb < B; bb++)
        for (int c = 0; c < C; c++)
            conv3x3_s2_plane(y + ((size_t)bb * C + c) * To * Fo, x + ((size_t)bb * C + c) * T * F, w + (size_t)c * 9,
                             b ? b[c] : 0.0f, T, F, (int)act);
    return CT_OK;
}

ct_status ct_cpu_dwconv1d(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B,
                          int T, int C, int K, ct_act act) {
    // y (B,T,C), x (B,T,C), w (C,K), b (C)
    const int pad = (K - 1) / 2;
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * T * C * K > CT_PAR_MIN)
    for (int bb = 0; bb < B; bb++)
        for (int t = 0; t < T; t++) {
            float *yr = y + ((size_t)bb * T + t) * C;
            for (int c = 0; c < C; c++) yr[c] = b ? b[c] : 0.0f;
            for (int k = 0; k < K; k++) {
                int ti = t - pad + k;
                if (ti < 0 || ti >= T) continue;
                const float *xr = x + ((size_t)bb * T + ti) * C;
                for (int c = 0; c < C; c++) yr[c] += w[(size_t)c * K + k] * xr[c];
            }
            ct_fast_bias_act(yr, NULL, NULL, 1.0f, (int)act, C);
        }
    return CT_OK;
}

void ct_fast_product_epilogue(float *y, const float *b, const float *r, float alpha, int act, int M, int N,
                              int accumulate) {
#pragma omp parallel for schedule(static) if ((size_t)M * N > CT_PAR_MIN)
    for (int m = 0; m < M; m++) {
        float *yr = y + (size_t)m * N;
        if (accumulate) {
            if (b)
                for (int n = 0; n < N; n++) yr[n] += alpha * b[n];
        } else {
            ct_fast_bias_act(yr, b, r ? r + (size_t)m * N : NULL, alpha, act, N);
        }
    }
}
