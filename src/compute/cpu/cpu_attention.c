/* cpu_attention.c — attention on sgemm (encoder) and plain loops (one decoder
 * query), OpenMP over (row, head) pairs (OpenBLAS runs single-threaded inside
 * an active parallel region). The encoder path
 * computes only the L valid query rows and the 2L−1 relative positions they
 * use; per-thread scratch comes from the workspace. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_math.h"
#include "compute/ref/ops_ref.h"

/* The end of a softmax, in place: s[j] = exp(s[j] - mx) / Σ_k exp(s[k] - mx),
 * where mx is the largest of s[0..n) (n > 0). */
static inline void exp_normalise(float *s, int n, float mx) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < n; j++) {
        s[j] = ct_fast_expf(s[j] - mx);
        sum += s[j];
    }
    float inv = 1.0f / sum;
    for (int j = 0; j < n; j++) s[j] *= inv;
}

ct_status ct_cpu_attn_relpos(ct_backend *be, float *out, const float *q, const float *k, const float *v,
                             const float *p, const float *u, const float *vb, const int *len, int B, int T,
                             int H, int Dh, ct_arena *ws) {
    // out, q, k, v (B,T,H*Dh); p (2T-1, H*Dh); u, vb (H,Dh); len (B)
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    const int nth = omp_get_max_threads();
    /* per thread: Qu, Qv (T,Dh), AC (T,T), BD (T, 2T-1) */
    const size_t per = (size_t)2 * T * Dh + (size_t)T * T + (size_t)T * (2 * T - 1);
    size_t mark = ct_arena_mark(ws);
    float *scratch = ct_arena_alloc(ws, sizeof(float) * per * (size_t)nth);
    if (!scratch) return CT_ERR_OOM;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
    for (int bh = 0; bh < B * H; bh++) {
        const int b = bh / H, h = bh % H;
        const int L = len[b] < T ? (len[b] < 0 ? 0 : len[b]) : T;
        float *qu = scratch + per * (size_t)omp_get_thread_num();
        float *qv = qu + (size_t)T * Dh, *ac = qv + (size_t)T * Dh, *bd = ac + (size_t)T * T;
        const size_t base = (size_t)b * T * D + (size_t)h * Dh;
        for (int i = L; i < T; i++) memset(out + base + (size_t)i * D, 0, sizeof(float) * Dh);
        if (L == 0) continue;
        for (int i = 0; i < L; i++)
            for (int d = 0; d < Dh; d++) {
                float qd = q[base + (size_t)i * D + d];
                qu[(size_t)i * Dh + d] = qd + u[h * Dh + d];
                qv[(size_t)i * Dh + d] = qd + vb[h * Dh + d];
            }
        /* ac (L,L) = Qu · Kᵀ;  bd (L, 2L-1) = Qv · P'ᵀ, P' = rows T-L .. T+L-2 of p */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, Dh, 1.0f, qu, Dh, k + base, D, 0.0f, ac, L);
        const float *pp = p + (size_t)(T - L) * D + (size_t)h * Dh;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, 2 * L - 1, Dh, 1.0f, qv, Dh, pp, D, 0.0f, bd,
                    2 * L - 1);
        for (int i = 0; i < L; i++) {
            float *s = ac + (size_t)i * L;
            const float *bdi = bd + (size_t)i * (2 * L - 1) + (L - 1 - i); /* bd[i][L-1-i+j] */
            float mx = -INFINITY;
            for (int j = 0; j < L; j++) {
                s[j] = s[j] * scale + bdi[j] * scale;
                if (s[j] > mx) mx = s[j];
            }
            exp_normalise(s, L, mx);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, Dh, L, 1.0f, ac, L, v + base, D, 0.0f,
                    out + base, D);
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

/* One query against nk keys/values with row stride D: o = softmax(K·q·scale) · V. */
static void attend_one(float *o, const float *qi, const float *K, const float *V, int nk, int D, int Dh,
                       float scale, float *s) {
    if (nk <= 0) {
        memset(o, 0, sizeof(float) * Dh);
        return;
    }
    /* Plain loops, not cblas_sgemv: the callers run this inside an OpenMP
     * region that is often inactive (its `if` is false while decoding), and
     * OpenBLAS-openmp then opens a nested team, for which libgomp creates
     * and joins fresh threads on every call (about 1,500 a second, 4x slower
     * decoding with two threads; docs/PERFORMANCE.md). */
    for (int j = 0; j < nk; j++) {
        const float *kj = K + (size_t)j * D;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int d = 0; d < Dh; d++) dot += kj[d] * qi[d];
        s[j] = scale * dot;
    }
    float mx = -INFINITY;
    for (int j = 0; j < nk; j++)
        if (s[j] > mx) mx = s[j];
    exp_normalise(s, nk, mx);
    memset(o, 0, sizeof(float) * Dh);
    for (int j = 0; j < nk; j++) {
        const float *vj = V + (size_t)j * D;
        const float sj = s[j];
#pragma omp simd
        for (int d = 0; d < Dh; d++) o[d] += sj * vj[d];
    }
}

ct_status ct_cpu_attn_causal(ct_backend *be, float *out, const float *q, const float *kc, const float *vc,
                             const int *slot, int n, int S, int pos0, int Smax, int H, int Dh, ct_arena *ws) {
    // out, q (n,S,H*Dh); kc, vc (slots,Smax,H*Dh); slot (n)
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    if (pos0 + S > Smax) return ct_fail(CT_ERR_INVALID_ARG, "attn_causal: position %d beyond %d", pos0 + S, Smax);
    const int nth = omp_get_max_threads();
    size_t mark = ct_arena_mark(ws);
    float *scratch = ct_arena_alloc(ws, sizeof(float) * (size_t)(pos0 + S) * nth);
    if (!scratch) return CT_ERR_OOM;
#pragma omp parallel for schedule(static) num_threads(nth) if ((size_t)n * H * S * (pos0 + S) * Dh > 16 * CT_PAR_MIN)
    for (int rh = 0; rh < n * H; rh++) {
        const int r = rh / H, h = rh % H;
        float *s = scratch + (size_t)(pos0 + S) * omp_get_thread_num();
        const size_t cb = (size_t)slot[r] * Smax * D + (size_t)h * Dh;
        for (int t = 0; t < S; t++) {
            size_t qo = ((size_t)r * S + t) * D + (size_t)h * Dh;
            attend_one(out + qo, q + qo, kc + cb, vc + cb, pos0 + t + 1, D, Dh, scale, s);
        }
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

ct_status ct_cpu_attn_cross(ct_backend *be, float *out, const float *q, const float *ek, const float *ev,
                            const int *slot, const int *enc_len, int n, int S, int Tenc, int H, int Dh,
                            ct_arena *ws) {
    // out, q (n,S,H*Dh); ek, ev (slots,Tenc,H*Dh); slot (n); enc_len (slots)
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    const int nth = omp_get_max_threads();
    size_t mark = ct_arena_mark(ws);
    float *scratch = ct_arena_alloc(ws, sizeof(float) * (size_t)(Tenc > 0 ? Tenc : 1) * nth);
    if (!scratch) return CT_ERR_OOM;
#pragma omp parallel for schedule(static) num_threads(nth) if ((size_t)n * H * S * Tenc * Dh > 16 * CT_PAR_MIN)
    for (int rh = 0; rh < n * H; rh++) {
        const int r = rh / H, h = rh % H;
        float *s = scratch + (size_t)Tenc * omp_get_thread_num();
        int L = enc_len[slot[r]] < Tenc ? enc_len[slot[r]] : Tenc;
        const size_t cb = (size_t)slot[r] * Tenc * D + (size_t)h * Dh;
        for (int t = 0; t < S; t++) {
            size_t qo = ((size_t)r * S + t) * D + (size_t)h * Dh;
            attend_one(out + qo, q + qo, ek + cb, ev + cb, L, D, Dh, scale, s);
        }
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}
