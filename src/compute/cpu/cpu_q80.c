/* cpu_q80.c — dense layers with Q8_0 weights (ggml's blocks of 32 int8 and
 * one f16 scale, used in place from a GGUF file or made at load): for the
 * decoding rows (≤ CT_Q80_INT_ROWS) the activations quantised per block
 * (compute/quant.c), the AVX2 block-dot kernel in register tiles, then the
 * float epilogue (without AVX2 the reference loops: the same result up to
 * the fp32 summation order); for more rows the weights widened to f32 per
 * tile for OpenBLAS, as the per-row int8 path does without VNNI. */
#include "compute/cpu/cpu_q80.h"

#include <cblas.h>
#include <omp.h>
#include <string.h>

#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_math.h"
#include "compute/quant.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))

/* Σ of the 8 int32 products of one block, as 8 partial sums: the weight's
 * magnitude (unsigned; −128 gives 128, still right) times the activation
 * with the weight's sign applied (activations are within ±127, so negating
 * never overflows); maddubs adds pairs, ≤ 2·128·127 = 32512 < 2¹⁵, so it
 * never saturates, and madd widens the pairs to int32 exactly. */
AVX2 static inline __m256i block_dot(__m256i aw, __m256i w, __m256i x) {
    const __m256i p16 = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

AVX2 static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* RM activation rows × RN weight rows over all K: one 8-lane fp32
 * accumulator per output, acc += (d_w·d_x) · float(partial dots) per block
 * (the partials are < 2¹⁷, exact in float). RM and RN are literals at every
 * call, so the accumulators stay in registers. */
AVX2 __attribute__((always_inline)) static inline void tile(float *acc, int ldc, const int8_t *qx, const float *dx,
                                                            const unsigned char *w, size_t rb, int K, int RM,
                                                            int RN) {
    __m256 a[4][4];
    for (int i = 0; i < RM; i++)
        for (int j = 0; j < RN; j++) a[i][j] = _mm256_setzero_ps();
    const int nb = K / CT_Q8_0_BLOCK;
    for (int b = 0; b < nb; b++) {
        __m256i wv[4], aw[4];
        float dw[4];
        for (int j = 0; j < RN; j++) {
            const unsigned char *blk = w + (size_t)j * rb + (size_t)b * CT_Q8_0_BLOCK_BYTES;
            uint16_t h;
            memcpy(&h, blk, 2);
            dw[j] = _cvtsh_ss(h);
            wv[j] = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
            aw[j] = _mm256_sign_epi8(wv[j], wv[j]);
        }
        for (int i = 0; i < RM; i++) {
            const __m256i xv = _mm256_loadu_si256((const __m256i *)(const void *)(qx + (size_t)i * K + (size_t)b * 32));
            const float d = dx[(size_t)i * nb + b];
            for (int j = 0; j < RN; j++) {
                const __m256 p = _mm256_cvtepi32_ps(block_dot(aw[j], wv[j], xv));
                a[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(dw[j] * d), p, a[i][j]);
            }
        }
    }
    for (int i = 0; i < RM; i++)
        for (int j = 0; j < RN; j++) acc[(size_t)i * ldc + j] = hsum8(a[i][j]);
}

#define TILE(rm, rn)                                                                                                \
    case (rm) * 8 + (rn): tile(acc, ldc, qx, dx, w, rb, K, rm, rn); break
AVX2 static void tile_any(int rm, int rn, float *acc, int ldc, const int8_t *qx, const float *dx,
                          const unsigned char *w, size_t rb, int K) {
    switch (rm * 8 + rn) {
        TILE(1, 1); TILE(1, 2); TILE(1, 3); TILE(1, 4);
        TILE(2, 1); TILE(2, 2); TILE(3, 1); TILE(3, 2);
        TILE(4, 1); TILE(4, 2);
    default: break;
    }
}
#undef TILE

enum {
    NC = 64, /* weight rows per work item (~87 KB at K = 1280: L2) */
    MC = 64  /* activation rows per work item */
};

AVX2 static void gemm_avx2(int threads, float *acc, const int8_t *qx, const float *dx, const void *w, int M, int N,
                           int K) {
    const size_t rb = CT_Q80_ROW_BYTES(K);
    const int nb = K / CT_Q8_0_BLOCK;
    /* one row (decoding): 4 weight rows per tile for independent sums;
     * more rows: 4 × 2 tiles, each weight block loaded once for 4 rows */
    const int RM = 4, RN = M == 1 ? 4 : 2;
    const int nn = (N + NC - 1) / NC, nm = (M + MC - 1) / MC, items = nn * nm;
    const int par = threads > 1 && (size_t)M * N * K > 2 * CT_PAR_MIN;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (par)
    for (int it = 0; it < items; it++) {
        const int n0 = (it % nn) * NC, m0 = (it / nn) * MC;
        const int n1 = n0 + NC < N ? n0 + NC : N, m1 = m0 + MC < M ? m0 + MC : M;
        for (int m = m0; m < m1; m += RM) {
            const int rm = m1 - m < RM ? m1 - m : RM;
            for (int n = n0; n < n1; n += RN) {
                const int rn = n1 - n < RN ? n1 - n : RN;
                tile_any(rm, rn, acc + (size_t)m * N + n, N, qx + (size_t)m * K, dx + (size_t)m * nb,
                         (const unsigned char *)w + (size_t)n * rb, rb, K);
            }
        }
    }
}
#endif

void ct_q80_gemm(ct_cpu_isa isa, int threads, float *acc, const int8_t *qx, const float *dx, const void *w, int M,
                 int N, int K) {
#if defined(__x86_64__)
    if (isa >= CT_CPU_ISA_AVX2 && isa <= ct_cpu_isa_best()) {
        gemm_avx2(threads, acc, qx, dx, w, M, N, K);
        return;
    }
#endif
    (void)threads, (void)isa;
    ct_q80_gemm_ref(acc, qx, dx, w, M, N, K);
}

enum { WBLOCK = 64 }; /* weight rows widened per tile */

/* Rows > CT_Q80_INT_ROWS: the weights widened to f32 (exactly) one tile of
 * 64 rows at a time per thread, float activations, OpenBLAS, then the
 * float epilogue: on AVX2 without VNNI maddubs + madd reach no more than
 * sgemm's FMAs (both ~16 FLOP/cycle on Zen 1; measured equal within the
 * shared machine's noise), and float activations are more accurate
 * (docs/PERFORMANCE.md, "Q8_0"). */
static ct_status widened_q80(float *y, const float *x, const ct_tensor *w, const float *b, const float *residual,
                             float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    const int nth = omp_get_max_threads();
    size_t mark = ct_arena_mark(ws);
    float *tiles = ct_arena_alloc(ws, sizeof(float) * (size_t)nth * WBLOCK * K);
    if (!tiles) return CT_ERR_OOM; /* the caller takes the integer path, which chunks rows */
    const int accumulate = residual && act == CT_ACT_NONE;
    if (accumulate && residual != y) memcpy(y, residual, sizeof(float) * (size_t)M * N);
    const float ga = accumulate ? alpha : 1.0f, beta = accumulate ? 1.0f : 0.0f;
    const int nblocks = (N + WBLOCK - 1) / WBLOCK;
    /* inside an active region OpenBLAS runs each sgemm on the calling thread */
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth) if ((size_t)M * N * K > 4 * CT_PAR_MIN)
    for (int blk = 0; blk < nblocks; blk++) {
        float *tile = tiles + (size_t)omp_get_thread_num() * WBLOCK * K;
        const int n0 = blk * WBLOCK, nb = N - n0 < WBLOCK ? N - n0 : WBLOCK;
        for (int i = 0; i < nb; i++) ct_q80_dequantize_row(tile + (size_t)i * K, ct_q80_row(w, n0 + i, K), K);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, nb, K, ga, x, K, tile, K, beta, y + n0, N);
    }
    ct_arena_rewind(ws, mark);
    ct_fast_product_epilogue(y, b, residual, alpha, (int)act, M, N, accumulate);
    return CT_OK;
}

ct_status ct_cpu_matmul_q80(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                            const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    // y (M,N), x (M,K), w (N,K) Q8_0, b (N), residual (M,N)
    (void)be;
    if (K % CT_Q8_0_BLOCK)
        return ct_fail(CT_ERR_INVALID_ARG, "matmul: Q8_0 weight rows of %d elements (not a multiple of 32)", K);
    if (M > CT_Q80_INT_ROWS) {
        ct_status rc = widened_q80(y, x, w, b, residual, alpha, act, M, N, K, ws);
        if (rc != CT_ERR_OOM) return rc; /* no room for the f32 tiles: the integer path below */
    }
    /* y holds the sums unless it also holds the residual */
    const int acc_in_y = residual != y;
    const size_t per_row = (size_t)K + sizeof(float) * (size_t)(K / CT_Q8_0_BLOCK) +
                           (acc_in_y ? 0 : sizeof(float) * (size_t)N);
    const size_t used = ct_arena_mark(ws), slack = 4 * CT_ARENA_ALIGN;
    const size_t avail = ws->cap > used + slack ? ws->cap - used - slack : 0;
    const int R = avail / per_row >= (size_t)M ? M : (int)(avail / per_row);
    if (R < 1) return ct_fail(CT_ERR_OOM, "matmul: workspace too small for one Q8_0 row (%zu bytes)", per_row);
    int8_t *qx = ct_arena_alloc(ws, (size_t)R * K);
    float *dx = ct_arena_alloc(ws, sizeof(float) * (size_t)R * (K / CT_Q8_0_BLOCK));
    float *tmp = acc_in_y ? NULL : ct_arena_alloc(ws, sizeof(float) * (size_t)R * N);
    if (!qx || !dx || (!acc_in_y && !tmp)) {
        ct_arena_rewind(ws, used);
        return ct_fail(CT_ERR_OOM, "matmul: Q8_0 workspace");
    }
    const int threads = omp_get_max_threads();
    const ct_cpu_isa isa = ct_cpu_isa_best();
    for (int m0 = 0; m0 < M; m0 += R) {
        const int rows = M - m0 < R ? M - m0 : R;
        const float *xc = x + (size_t)m0 * K;
        const int nbk = K / CT_Q8_0_BLOCK;
#pragma omp parallel for schedule(static) if ((size_t)rows * K > CT_PAR_MIN && rows > 1)
        for (int m = 0; m < rows; m++)
            ct_q80_quantize_act(qx + (size_t)m * K, dx + (size_t)m * nbk, xc + (size_t)m * K, 1, K);
        float *acc = acc_in_y ? y + (size_t)m0 * N : tmp;
        ct_q80_gemm(isa, threads, acc, qx, dx, w->data, rows, N, K);
#pragma omp parallel for schedule(static) if ((size_t)rows * N > CT_PAR_MIN)
        for (int m = 0; m < rows; m++) {
            float *ar = acc + (size_t)m * N, *yr = y + (size_t)(m0 + m) * N;
            const float *rr = residual ? residual + (size_t)(m0 + m) * N : NULL;
            ct_fast_bias_act(ar, b, rr, alpha, (int)act, N);
            if (ar != yr) memcpy(yr, ar, sizeof(float) * (size_t)N);
        }
    }
    ct_arena_rewind(ws, used);
    return CT_OK;
}
