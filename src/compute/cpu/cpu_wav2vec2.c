/* cpu_wav2vec2.c — fast CPU paths of the version-2 ops: strided conv1d as
 * im2col tiles × OpenBLAS sgemm (bf16 weights on native bf16: bf16 tiles ×
 * oneDNN's bf16 product), the grouped positional conv as one shifted sgemm
 * per tap, attention as two sgemm per (row, head, query block) with a
 * vectorised softmax between (bf16 products on AVX512-BF16:
 * cpu_attn_bf16.c), OpenMP loops for GELU and add. Tested against
 * ref_wav2vec2.c in tests/unit/test_align_wav2vec2.c (test_ops_cpu_vs_ref,
 * test_ops_bf16_cpu_vs_ref). */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compute/cpu/cpu_attn_bf16.h"
#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_math.h"
#include "compute/cpu/cpu_state.h"
#include "compute/cpu/cpu_vec.h"
#include "compute/ref/ops_ref.h"

/* ---- GELU and softmax over the shared 16-lane vectors (cpu_vec.h) ---- */

/* Exact GELU x·½(1 + erf(x/√2)) in place, with erfc from Abramowitz & Stegun
 * 7.1.26 (|error| ≤ 1.5e-7 on erf): for z = |x|/√2, E = P(t)·e^(−z²),
 * t = 1/(1 + pz), is erfc(z), so 1 + erf(x/√2) is 2 − E for x ≥ 0 and E for
 * x < 0 (no cancellation on the negative side). The reference keeps erff. */
static inline void v_gelu(vf *v) {
    const vf x = *v;
    vf z = (vf)((vi)x & 0x7fffffff) * 0.70710678118654752f;
    vf t = 1.0f / (z * 0.3275911f + 1.0f);
    vf P = t * (t * (t * (t * (t * 1.061405429f - 1.453152027f) + 1.421413741f) - 0.284496736f) + 0.254829592f);
    vf E = -(z * z);
    v_exp(&E);
    E *= P;
    *v = 0.5f * x * V_SELECT(x < 0.0f, E, 2.0f - E);
}

/* x[0..n) in place; the tail goes through one zero-padded vector. */
CT_VCLONES static void gelu_span(float *x, size_t n) {
    vf v;
    size_t j = 0;
    for (; j + CT_V <= n; j += CT_V) {
        memcpy(&v, x + j, sizeof v);
        v_gelu(&v);
        memcpy(x + j, &v, sizeof v);
    }
    if (j < n) {
        v = V_SPLAT(0.0f);
        memcpy(&v, x + j, (n - j) * sizeof *x);
        v_gelu(&v);
        memcpy(x + j, &v, (n - j) * sizeof *x);
    }
}

/* Softmax of one row of finite scores (attn_full has no mask) times scale > 0
 * (exp((x − max)·scale): the bf16 path applies 1/√Dh here, the f32 path in
 * its sgemm with scale 1, which leaves x − max unchanged). */
CT_VCLONES static void softmax_row(float *x, int n, float scale) {
    const int nv = n / CT_V * CT_V;
    vf v;
    float mx = x[0];
    if (nv) {
        vf m;
        memcpy(&m, x, sizeof m);
        for (int j = CT_V; j < nv; j += CT_V) {
            memcpy(&v, x + j, sizeof v);
            m = V_SELECT(v > m, v, m);
        }
        for (int l = 0; l < CT_V; l++) mx = m[l] > mx ? m[l] : mx;
    }
    for (int j = nv; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    v_exp_normalise(x, n, mx, scale);
}

/* native bf16 products through oneDNN on this backend, or NULL */
static ct_dnnl *bf16_dnnl(const ct_backend *be) {
    const ct_cpu_state *st = ct_cpu_state_of(be);
    return st && st->dnnl && st->dnnl_bf16 ? st->dnnl : NULL;
}

#define CT_CONV_ROWS 2048 /* output frames per im2col tile (12.6 MB at 512 channels × 3 taps) */

/* conv1d with bf16 weights (Co, Ci·K) on native bf16: the im2col tile is
 * written in bf16 (the weight row's layout, i·K + k) and multiplied by
 * oneDNN into y's rows, then the bias is added. */
static ct_status conv1d_bf16(ct_dnnl *dn, float *y, const float *x, const uint16_t *w, const float *bias, int B, int T,
                             int Ci, int Co, int K, int stride, ct_arena *ws) {
    const int To = (T - K) / stride + 1, CK = Ci * K;
    size_t mark = ct_arena_mark(ws);
    uint16_t *col = ct_arena_alloc(ws, sizeof(uint16_t) * (size_t)CT_CONV_ROWS * CK);
    if (!col) return ct_fail(CT_ERR_OOM, "conv1d: bf16 im2col tile of %d x %d", CT_CONV_ROWS, CK);
    ct_status rc = CT_OK;
    for (int b = 0; b < B && rc == CT_OK; b++)
        for (int t0 = 0; t0 < To && rc == CT_OK; t0 += CT_CONV_ROWS) {
            const int nt = To - t0 < CT_CONV_ROWS ? To - t0 : CT_CONV_ROWS;
#pragma omp parallel for schedule(static) if ((size_t)nt * CK > CT_PAR_MIN)
            for (int r = 0; r < nt; r++) {
                const float *xs = x + ((size_t)b * T + (size_t)(t0 + r) * stride) * Ci;
                uint16_t *c = col + (size_t)r * CK;
                for (int i = 0; i < Ci; i++)
                    for (int k = 0; k < K; k++) c[i * K + k] = ct_f32_to_bf16(xs[(size_t)k * Ci + i]);
            }
            float *yt = y + ((size_t)b * To + t0) * Co;
            rc = ct_dnnl_matmul(dn, CT_DNNL_BF16, yt, col, w, nt, Co, CK);
            if (rc == CT_OK && bias) {
#pragma omp parallel for schedule(static) if ((size_t)nt * Co > CT_PAR_MIN)
                for (int r = 0; r < nt; r++)
                    for (int o = 0; o < Co; o++) yt[(size_t)r * Co + o] += bias[o];
            }
        }
    ct_arena_rewind(ws, mark);
    return rc == CT_OK ? CT_OK : ct_fail_wrap(rc, "conv1d %d x %d x %d bf16", To, Co, CK);
}

ct_status ct_cpu_conv1d(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *bias, int B, int T,
                        int Ci, int Co, int K, int stride, ct_arena *ws) {
    // y (B,To,Co), x (B,T,Ci), w (Co,Ci,K), bias (Co)
    if (T < K || stride < 1) return ct_fail(CT_ERR_INVALID_ARG, "conv1d: %d frames for kernel %d stride %d", T, K, stride);
    if (ct_tensor_numel(w) != (int64_t)Co * Ci * K)
        return ct_fail(CT_ERR_INVALID_ARG, "conv1d: weight has %lld elements, want %d x %d x %d",
                       (long long)ct_tensor_numel(w), Co, Ci, K);
    const int To = (T - K) / stride + 1, CK = Ci * K;
    size_t mark = ct_arena_mark(ws);
    ct_dnnl *dn = w->dtype == CT_DTYPE_BF16 ? bf16_dnnl(be) : NULL;
    if (dn) return conv1d_bf16(dn, y, x, w->data, bias, B, T, Ci, Co, K, stride, ws);
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
    /* As K shifted products per group, no im2col: tap k adds
     * x[t + k − pad][g·Cg + i] · w[g·Cg + o][i][k] to y[t][g·Cg + o] for the
     * rows t whose input frame is inside the sequence, one (rows, Cg) × (Cg,
     * Cg) sgemm straight on x's and y's strided rows. The im2col tiles this
     * replaced wrote K·Cg floats per output frame and group (16 × 8 192 per
     * frame at the MMS sizes) and cost more than the products. The taps'
     * weights are first gathered as wk[g][k][o][i] (a plain matrix per tap).
     * One thread per (row, group): the group's y columns stay in its cache
     * across the K taps, and OpenBLAS runs single-threaded inside the region. */
    const int Cg = C / G, pad = K / 2;
    float *wk = malloc(sizeof(float) * (size_t)C * Cg * K);
    if (!wk) return ct_fail(CT_ERR_OOM, "conv1d_grouped: %d x %d x %d tap weights", C, Cg, K);
#pragma omp parallel for schedule(static) if ((size_t)C * Cg * K > CT_PAR_MIN)
    for (int oc = 0; oc < C; oc++) {
        const int g = oc / Cg, o = oc % Cg;
        for (int i = 0; i < Cg; i++)
            for (int k = 0; k < K; k++)
                wk[(((size_t)g * K + k) * Cg + o) * Cg + i] = w[((size_t)oc * Cg + i) * K + k];
    }
    const int tasks = B * G;
#pragma omp parallel for schedule(dynamic, 1) if (tasks > 1 && (size_t)T * C * Cg * K > CT_PAR_MIN)
    for (int task = 0; task < tasks; task++) {
        const int b = task / G, g = task % G;
        float *yg = y + (size_t)b * T * C + (size_t)g * Cg;
        const float *xg = x + (size_t)b * T * C + (size_t)g * Cg;
        for (int t = 0; t < T; t++) {
            if (bias) memcpy(yg + (size_t)t * C, bias + (size_t)g * Cg, sizeof(float) * Cg);
            else memset(yg + (size_t)t * C, 0, sizeof(float) * Cg);
        }
        for (int k = 0; k < K; k++) {
            const int lo = pad - k > 0 ? pad - k : 0, hi = T + pad - k < T ? T + pad - k : T;
            if (hi <= lo) continue;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, hi - lo, Cg, Cg, 1.0f,
                        xg + (size_t)(lo + k - pad) * C, C, wk + ((size_t)g * K + k) * Cg * Cg, Cg, 1.0f,
                        yg + (size_t)lo * C, C);
        }
    }
    free(wk);
    return CT_OK;
}

ct_status ct_cpu_gelu(ct_backend *be, float *x, size_t n) {
    // x (n)
    const size_t chunk = 4096;
#pragma omp parallel for schedule(static) if (n > CT_PAR_MIN)
    for (size_t i = 0; i < n; i += chunk) gelu_span(x + i, n - i < chunk ? n - i : chunk);
    return CT_OK;
}

ct_status ct_cpu_add(ct_backend *be, float *y, const float *a, const float *b, size_t n) {
    // y, a, b (n)
#pragma omp parallel for schedule(static) if (n > CT_PAR_MIN)
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
    return CT_OK;
}

/* Query rows per attention block: the block's scores (rows × T floats, 1.7 MB
 * at T = 1 699) stay near the core between the two products. In a
 * microbenchmark of one MMS layer (T 1 699, 16 heads of 64) on 2 threads, 256
 * rows took 0.23 s of CPU, 128 rows 0.27, 64 rows 0.31, 512 rows 0.22. */
#define CT_ATTN_ROWS 256

ct_status ct_cpu_attn_full(ct_backend *be, float *out, const float *q, const float *k, const float *v, int B, int T,
                           int H, int Dh, ct_dtype prod, ct_arena *ws) {
    // out, q, k, v (B,T,H*Dh)
    if (prod != CT_DTYPE_F32 && prod != CT_DTYPE_BF16)
        return ct_fail(CT_ERR_INVALID_ARG, "attn_full: products in %s", ct_dtype_name(prod));
    /* bf16 where the CPU has AVX512-BF16 (cpu_attn_bf16.c) and the backend
     * may use it; elsewhere float32 (closer to the model than the bf16 it
     * stands in for, and faster than emulation) */
    const ct_cpu_state *st = ct_cpu_state_of(be);
    if (prod == CT_DTYPE_BF16 && T > 0 && st && st->level >= CT_ISA_BF16 && ct_attn_bf16_supported(Dh))
        return ct_attn_bf16(out, q, k, v, B, T, H, Dh, softmax_row);
    /* Blocked over (row, head, query block): each thread takes whole blocks,
     * scores = q_blk·kᵀ, softmax, out_blk = scores·v, with single-threaded
     * sgemm (OpenBLAS's OpenMP build runs one thread inside a parallel
     * region), so the T×T matrix of a head is never materialised and no
     * product waits for the others. */
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    const int rows = T < CT_ATTN_ROWS ? (T > 0 ? T : 1) : CT_ATTN_ROWS;
    const int nblk = (T + rows - 1) / rows;
    /* one score block per thread; the forward sizes the workspace for a T×T
     * matrix (wav2vec2_run.c), which holds floor(T / rows) blocks */
    int nthr = omp_get_max_threads();
    if (nthr > T / rows) nthr = T / rows > 0 ? T / rows : 1;
    size_t mark = ct_arena_mark(ws);
    float *scratch = ct_arena_alloc(ws, sizeof(float) * (size_t)nthr * rows * (size_t)(T > 0 ? T : 1));
    if (!scratch) return ct_fail(CT_ERR_OOM, "attn_full: %d x %d x %d scores", nthr, rows, T);
    const long tasks = (long)B * H * nblk;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthr) if (tasks > 1 && (size_t)T * T * Dh > CT_PAR_MIN)
    for (long task = 0; task < tasks; task++) {
        const int blk = (int)(task % nblk), h = (int)(task / nblk % H), b = (int)(task / nblk / H);
        const int i0 = blk * rows, n = T - i0 < rows ? T - i0 : rows;
        float *s = scratch + (size_t)omp_get_thread_num() * rows * T;
        const size_t base = (size_t)b * T * D + (size_t)h * Dh;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, T, Dh, scale, q + base + (size_t)i0 * D, D,
                    k + base, D, 0.0f, s, T);
        for (int i = 0; i < n; i++) softmax_row(s + (size_t)i * T, T, 1.0f);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, Dh, T, 1.0f, s, T, v + base, D, 0.0f,
                    out + base + (size_t)i0 * D, D);
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}
