/* cpu_int8.c — dense layers with Q8 (int8, per-row scaled) weights:
 * activations quantised per row (compute/quant.c), the integer product on
 * VNNI (own GEMV for decoding rows, oneDNN's u8·s8 brgemm for the rest),
 * then one epilogue pass y = residual + alpha·act(s_m·scale_n·(acc − z_m·Σq_n) + b).
 * Rows are processed in chunks that fit the op's workspace. Without VNNI the
 * weights are widened to f32 per tile for OpenBLAS (u8·s8 products on
 * pre-VNNI AVX-512/AVX2 saturate in 16 bits, so they are never used). */
#include "compute/cpu/cpu_int8.h"

#include <cblas.h>
#include <omp.h>
#include <string.h>

#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_math.h"
#include "compute/cpu/cpu_state.h"
#include "compute/quant.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

void ct_int8_gemm_ref(int32_t *acc, const uint8_t *u, const int8_t *q, int M, int N, int K) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t s = 0;
            for (int k = 0; k < K; k++) s += (int32_t)u[(size_t)m * K + k] * (int32_t)q[(size_t)n * K + k];
            acc[(size_t)m * N + n] = s;
        }
}

#if defined(__x86_64__)
/* One weight row against R activation rows: 64 bytes per vpdpbusd, the
 * tail with byte masks. R is a literal at every call, so the accumulators
 * stay in registers. */
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) static inline void
row_vnni512(int32_t *acc, const uint8_t *u, const int8_t *wr, int R, int N, int K) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    int k = 0;
    for (; k + 64 <= K; k += 64) {
        const __m512i wv = _mm512_loadu_si512((const void *)(wr + k));
        a0 = _mm512_dpbusd_epi32(a0, _mm512_loadu_si512((const void *)(u + k)), wv);
        if (R > 1) a1 = _mm512_dpbusd_epi32(a1, _mm512_loadu_si512((const void *)(u + K + k)), wv);
        if (R > 2) a2 = _mm512_dpbusd_epi32(a2, _mm512_loadu_si512((const void *)(u + 2 * (size_t)K + k)), wv);
        if (R > 3) a3 = _mm512_dpbusd_epi32(a3, _mm512_loadu_si512((const void *)(u + 3 * (size_t)K + k)), wv);
    }
    if (k < K) {
        const __mmask64 mk = (__mmask64)(~0ull >> (64 - (K - k)));
        const __m512i wv = _mm512_maskz_loadu_epi8(mk, wr + k);
        a0 = _mm512_dpbusd_epi32(a0, _mm512_maskz_loadu_epi8(mk, u + k), wv);
        if (R > 1) a1 = _mm512_dpbusd_epi32(a1, _mm512_maskz_loadu_epi8(mk, u + K + k), wv);
        if (R > 2) a2 = _mm512_dpbusd_epi32(a2, _mm512_maskz_loadu_epi8(mk, u + 2 * (size_t)K + k), wv);
        if (R > 3) a3 = _mm512_dpbusd_epi32(a3, _mm512_maskz_loadu_epi8(mk, u + 3 * (size_t)K + k), wv);
    }
    acc[0] = _mm512_reduce_add_epi32(a0);
    if (R > 1) acc[N] = _mm512_reduce_add_epi32(a1);
    if (R > 2) acc[2 * (size_t)N] = _mm512_reduce_add_epi32(a2);
    if (R > 3) acc[3 * (size_t)N] = _mm512_reduce_add_epi32(a3);
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void gemv_range(int32_t *acc, const uint8_t *u,
                                                                             const int8_t *q, int M, int N, int K,
                                                                             int n0, int n1) {
    for (int n = n0; n < n1; n++) {
        const int8_t *wr = q + (size_t)n * K;
        switch (M) {
        case 1: row_vnni512(acc + n, u, wr, 1, N, K); break;
        case 2: row_vnni512(acc + n, u, wr, 2, N, K); break;
        case 3: row_vnni512(acc + n, u, wr, 3, N, K); break;
        default: row_vnni512(acc + n, u, wr, 4, N, K); break;
        }
    }
}

void ct_int8_gemv_vnni512(int32_t *acc, const uint8_t *u, const int8_t *q, int M, int N, int K) {
    for (int m0 = 0; m0 < M; m0 += CT_Q8_GEMV_ROWS) {
        const int R = M - m0 < CT_Q8_GEMV_ROWS ? M - m0 : CT_Q8_GEMV_ROWS;
        /* each weight row is read once for all R rows; threads split N in
         * contiguous ranges (the weights stream from memory in order) */
#pragma omp parallel if ((size_t)N * K > 2 * CT_PAR_MIN)
        {
            const int nt = omp_get_num_threads(), t = omp_get_thread_num();
            const int n0 = (int)((long long)N * t / nt), n1 = (int)((long long)N * (t + 1) / nt);
            gemv_range(acc + (size_t)m0 * N, u + (size_t)m0 * K, q, R, N, K, n0, n1);
        }
    }
}
#else
void ct_int8_gemv_vnni512(int32_t *acc, const uint8_t *u, const int8_t *q, int M, int N, int K) {
    ct_int8_gemm_ref(acc, u, q, M, N, K);
}
#endif

/* One row: y = alpha·act(s·scale·(acc − z·rowsum) + b) + residual; acc may
 * be y itself (each element is read before it is written). Whether b and
 * the residual exist is a literal at each call (hb, hr): tested inside the
 * loop, `b ? b[n] : 0` becomes a masked load, and with b NULL each masked
 * load of the unmapped page takes a microcode assist (on Sapphire Rapids
 * ~90 % of this epilogue's samples; docs/PERFORMANCE.md "The int8 op's
 * epilogue"). The literal 0.0f keeps the bits of the branchy form. */
static inline __attribute__((always_inline)) void epi(float *yr, const int32_t *ar, float sm, int32_t zm,
                                                      const float *scale, const int32_t *rowsum, const float *b,
                                                      const float *rr, float alpha, const int act, int N,
                                                      const int hb, const int hr) {
#pragma omp simd
    for (int n = 0; n < N; n++) {
        float v = sm * scale[n] * (float)(ar[n] - zm * rowsum[n]) + (hb ? b[n] : 0.0f);
        if (act == CT_ACT_SILU) v = ct_fast_silu(v);
        else if (act == CT_ACT_RELU) v = v > 0.0f ? v : 0.0f;
        yr[n] = alpha * v + (hr ? rr[n] : 0.0f);
    }
}

#define EPI_ACT(A)                                                                    \
    do {                                                                              \
        if (b && rr) epi(yr, ar, sm, zm, scale, rowsum, b, rr, alpha, A, N, 1, 1);    \
        else if (b) epi(yr, ar, sm, zm, scale, rowsum, b, rr, alpha, A, N, 1, 0);     \
        else if (rr) epi(yr, ar, sm, zm, scale, rowsum, b, rr, alpha, A, N, 0, 1);    \
        else epi(yr, ar, sm, zm, scale, rowsum, b, rr, alpha, A, N, 0, 0);            \
    } while (0)

/* Cloned for AVX-512 and AVX2 (picked at load by the CPU): the same
 * operations at a wider vector, so every clone gives the same bits. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
epilogue_row(float *yr, const int32_t *ar, float sm, int32_t zm, const float *scale, const int32_t *rowsum,
             const float *b, const float *rr, float alpha, int act, int N) {
    if (act == CT_ACT_SILU) EPI_ACT(CT_ACT_SILU);
    else if (act == CT_ACT_RELU) EPI_ACT(CT_ACT_RELU);
    else EPI_ACT(CT_ACT_NONE);
}
#undef EPI_ACT

static void dequant_epilogue(float *y, const int32_t *acc, const float *s, const int32_t *z, const float *scale,
                             const int32_t *rowsum, const float *b, const float *residual, float alpha, ct_act act,
                             int M, int N) {
#pragma omp parallel for schedule(static) if ((size_t)M * N > CT_PAR_MIN)
    for (int m = 0; m < M; m++)
        epilogue_row(y + (size_t)m * N, acc + (size_t)m * N, s[m], z[m], scale, rowsum, b,
                     residual ? residual + (size_t)m * N : NULL, alpha, (int)act, N);
}

enum { WBLOCK = 64 }; /* weight rows widened per tile in the fallback */

/* Without VNNI: today's widened path for int8 weights (float activations,
 * weights dequantised per tile or row, OpenBLAS, then the float epilogue). */
static ct_status widened_q8(float *y, const float *x, const ct_tensor *w, const float *b, const float *residual,
                            float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    const int accumulate = residual && act == CT_ACT_NONE;
    if (accumulate && residual != y) memcpy(y, residual, sizeof(float) * (size_t)M * N);
    const float ga = accumulate ? alpha : 1.0f, beta = accumulate ? 1.0f : 0.0f;
    const int nth = omp_get_max_threads();
    size_t mark = ct_arena_mark(ws);
    const int rows_per = M <= CT_Q8_GEMV_ROWS ? 1 : WBLOCK;
    float *tiles = ct_arena_alloc(ws, sizeof(float) * (size_t)nth * rows_per * K);
    if (!tiles) return ct_fail(CT_ERR_OOM, "matmul: int8 weight tiles");
    if (M <= CT_Q8_GEMV_ROWS) {
#pragma omp parallel for schedule(static) num_threads(nth) if ((size_t)N * K > 2 * CT_PAR_MIN)
        for (int n = 0; n < N; n++) {
            float *wr = tiles + (size_t)omp_get_thread_num() * K;
            ct_q8_dequantize_row(wr, w, n);
            for (int m = 0; m < M; m++) {
                const float *xm = x + (size_t)m * K;
                float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
                for (int k = 0; k < K; k++) acc += xm[k] * wr[k];
                float *o = y + (size_t)m * N + n;
                *o = beta != 0.0f ? *o + ga * acc : ga * acc;
            }
        }
    } else {
        const int nblocks = (N + WBLOCK - 1) / WBLOCK;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth) if ((size_t)M * N * K > 4 * CT_PAR_MIN)
        for (int blk = 0; blk < nblocks; blk++) {
            float *tile = tiles + (size_t)omp_get_thread_num() * WBLOCK * K;
            const int n0 = blk * WBLOCK, nb = N - n0 < WBLOCK ? N - n0 : WBLOCK;
            for (int i = 0; i < nb; i++) ct_q8_dequantize_row(tile + (size_t)i * K, w, n0 + i);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, nb, K, ga, x, K, tile, K, beta, y + n0, N);
        }
    }
    ct_arena_rewind(ws, mark);
    ct_fast_product_epilogue(y, b, residual, alpha, (int)act, M, N, accumulate);
    return CT_OK;
}

int ct_cpu_q8_native(const ct_backend *be, int M) {
    const ct_cpu_state *st = ct_cpu_state_of(be);
    if (!st) return 0;
    return M <= CT_Q8_GEMV_ROWS ? st->vnni512 || st->dnnl_u8s8 : st->dnnl_u8s8;
}

/* The rows' u8 activations, in parallel when there is enough work. */
static void quantize_rows(uint8_t *u, float *s, int32_t *z, const float *x, int M, int K) {
#pragma omp parallel for schedule(static) if ((size_t)M * K > CT_PAR_MIN && M > 1)
    for (int m = 0; m < M; m++) ct_q8_quantize_act(u + (size_t)m * K, s + m, z + m, x + (size_t)m * K, 1, K);
}

ct_status ct_cpu_matmul_q8(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                           const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    // y (M,N), x (M,K), w (N,K) Q8, b (N), residual (M,N)
    const ct_cpu_state *st = ct_cpu_state_of(be);
    const int gemv = st && st->vnni512; /* own kernel for decoding rows */
    if (!ct_cpu_q8_native(be, M)) return widened_q8(y, x, w, b, residual, alpha, act, M, N, K, ws);
    /* y can hold the int32 products unless it also holds the residual */
    const int acc_in_y = residual != y;
    const size_t per_row = (size_t)K + 2 * sizeof(float) + (acc_in_y ? 0 : sizeof(int32_t) * (size_t)N);
    const size_t used = ct_arena_mark(ws), slack = 4 * CT_ARENA_ALIGN;
    const size_t avail = ws->cap > used + slack ? ws->cap - used - slack : 0;
    int R = avail / per_row >= (size_t)M ? M : (int)(avail / per_row);
    if (R < 1) return ct_fail(CT_ERR_OOM, "matmul: workspace too small for one int8 row (%zu bytes)", per_row);
    if (R < M && R > 16) R &= ~15; /* whole brgemm row blocks per chunk */
    uint8_t *u = ct_arena_alloc(ws, (size_t)R * K);
    float *s = ct_arena_alloc(ws, sizeof(float) * (size_t)R);
    int32_t *z = ct_arena_alloc(ws, sizeof(int32_t) * (size_t)R);
    int32_t *tmp = acc_in_y ? NULL : ct_arena_alloc(ws, sizeof(int32_t) * (size_t)R * N);
    if (!u || !s || !z || (!acc_in_y && !tmp)) {
        ct_arena_rewind(ws, used);
        return ct_fail(CT_ERR_OOM, "matmul: int8 workspace");
    }
    const int8_t *q = ct_q8_values(w);
    const ct_dnnl_weight wd = ct_cpu_dnnl_weight(w, q);
    ct_status rc = CT_OK;
    for (int m0 = 0; m0 < M && rc == CT_OK; m0 += R) {
        const int rows = M - m0 < R ? M - m0 : R;
        quantize_rows(u, s, z, x + (size_t)m0 * K, rows, K);
        int32_t *acc = acc_in_y ? (int32_t *)(void *)(y + (size_t)m0 * N) : tmp;
        if (rows <= CT_Q8_GEMV_ROWS && gemv) ct_int8_gemv_vnni512(acc, u, q, rows, N, K);
        else rc = ct_dnnl_matmul_w(st->dnnl, CT_DNNL_U8S8, acc, u, &wd, rows, N, K, NULL);
        if (rc == CT_OK)
            dequant_epilogue(y + (size_t)m0 * N, acc, s, z, ct_q8_scales(w), ct_q8_rowsums(w), b,
                             residual ? residual + (size_t)m0 * N : NULL, alpha, act, rows, N);
    }
    ct_arena_rewind(ws, used);
    return rc == CT_OK ? CT_OK : ct_fail_wrap(rc, "matmul %dx%dx%d int8", M, N, K);
}
