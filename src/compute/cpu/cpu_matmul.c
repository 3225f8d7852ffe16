/* cpu_matmul.c — dense layers on OpenBLAS sgemm with the epilogue
 * y = residual + alpha·act(x·wᵀ + b). Up to CT_GEMV_MAX_M rows (decoding) go
 * to the GEMV kernels (cpu_gemv.c); otherwise f32 weights go straight to one
 * threaded sgemm, and bf16/f16 weights are widened to f32 one block of output
 * features at a time (per thread, from the workspace) so resident memory
 * stays halved. */
#include <cblas.h>
#include <omp.h>
#include <string.h>

#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_gemv.h"
#include "compute/cpu/cpu_int8.h"
#include "compute/cpu/cpu_math.h"
#include "compute/cpu/cpu_q80.h"
#include "compute/quant.h"
#include "compute/ref/ops_ref.h"

#define CT_WBLOCK 64   /* output features widened per tile (64 × K floats) */

/* One tile of CT_WBLOCK output features with half-precision weights: widen
 * the tile's weight rows into `tile` (CT_WBLOCK × K floats) and multiply.
 * y (M,N), x (M,K), w (N,K). */
static void widened_tile_gemm(float *y, const float *x, const ct_tensor *w, float *tile, int blk, float alpha,
                              float beta, int M, int N, int K) {
    int n0 = blk * CT_WBLOCK, nb = N - n0 < CT_WBLOCK ? N - n0 : CT_WBLOCK;
    const uint16_t *src = (const uint16_t *)w->data + (size_t)n0 * K;
    ct_widen_half(tile, src, (size_t)nb * K, w->dtype == CT_DTYPE_BF16);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, nb, K, alpha, x, K, tile, K, beta, y + n0, N);
}

/* y = alpha·act(y + b) + residual (or y += alpha·b when the GEMM already
 * accumulated into the residual). */
static void epilogue(float *y, const float *b, const float *residual, float alpha, ct_act act, int M, int N,
                     int accumulated) {
#pragma omp parallel for schedule(static) if ((size_t)M * N > CT_PAR_MIN)
    for (int m = 0; m < M; m++) {
        float *yr = y + (size_t)m * N;
        if (accumulated) {
            if (b)
                for (int n = 0; n < N; n++) yr[n] += alpha * b[n];
            continue;
        }
        ct_fast_bias_act(yr, b, residual ? residual + (size_t)m * N : NULL, alpha, (int)act, N);
    }
}

ct_status ct_cpu_matmul(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                        const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    // y (M,N), x (M,K), w (N,K), b (N), residual (M,N)
    if (ct_tensor_numel(w) != (int64_t)N * K)
        return ct_fail(CT_ERR_INVALID_ARG, "matmul: weight has %lld elements, want %d x %d",
                       (long long)ct_tensor_numel(w), N, K);
    if (residual == y && act != CT_ACT_NONE)
        return ct_fail(CT_ERR_INVALID_ARG, "matmul: residual aliases y with an activation");
    if (M == 0 || N == 0) return CT_OK;
    /* int8 weights, and oneDNN where the backend chose it (cpu_int8.c,
     * cpu_matmul_dnnl.c); everything else stays on OpenBLAS below */
    if (w->dtype == CT_DTYPE_Q8) return ct_cpu_matmul_q8(be, y, x, w, b, residual, alpha, act, M, N, K, ws);
    if (w->dtype == CT_DTYPE_Q8_0) return ct_cpu_matmul_q80(be, y, x, w, b, residual, alpha, act, M, N, K, ws);
    if (M > CT_GEMV_MAX_M && ct_cpu_dnnl_takes(be, w->dtype)) {
        ct_status rc = ct_cpu_matmul_dnnl(be, y, x, w, b, residual, alpha, act, M, N, K, ws);
        /* out of workspace (a widened block or a row's bf16 copy did not
         * fit): the paths below need none or only one tile per thread */
        if (rc != CT_ERR_OOM) return rc;
    }
    /* Decoding: a few rows, memory-bound; the GEMV kernels read each weight
     * once for all rows and apply the whole epilogue as they store. */
    if (M <= CT_GEMV_MAX_M && (w->dtype == CT_DTYPE_F32 || w->dtype == CT_DTYPE_BF16 || w->dtype == CT_DTYPE_F16))
        return ct_gemv(ct_cpu_isa_best(), omp_get_max_threads(), y, x, w, b, residual, alpha, act, M, N, K);
    /* With a residual and no activation, accumulate into y (beta = 1). */
    int accumulate = residual && act == CT_ACT_NONE;
    if (accumulate && residual != y) memcpy(y, residual, sizeof(float) * (size_t)M * N);
    float gemm_alpha = accumulate ? alpha : 1.0f;
    float beta = accumulate ? 1.0f : 0.0f;
    if (w->dtype == CT_DTYPE_F32) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, gemm_alpha, x, K, w->data, K, beta, y, N);
    } else if (w->dtype == CT_DTYPE_BF16 || w->dtype == CT_DTYPE_F16) {
        int nth = omp_get_max_threads();
        size_t mark = ct_arena_mark(ws);
        float *tiles = ct_arena_alloc(ws, sizeof(float) * (size_t)nth * CT_WBLOCK * K);
        if (!tiles) return CT_ERR_OOM;
        int nblocks = (N + CT_WBLOCK - 1) / CT_WBLOCK;
        if ((size_t)M * N * K > 4 * CT_PAR_MIN) {
            /* Tiles across threads; inside an active region OpenBLAS runs
             * each sgemm on the calling thread. */
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
            for (int blk = 0; blk < nblocks; blk++)
                widened_tile_gemm(y, x, w, tiles + (size_t)omp_get_thread_num() * CT_WBLOCK * K, blk, gemm_alpha,
                                  beta, M, N, K);
        } else {
            /* Small products stay outside any OpenMP region: BLAS called from
             * an inactive region starts a nested team, and libgomp creates a
             * fresh thread for it on every call (see docs/PERFORMANCE.md,
             * "Two-thread decoding fixed"). */
            for (int blk = 0; blk < nblocks; blk++)
                widened_tile_gemm(y, x, w, tiles, blk, gemm_alpha, beta, M, N, K);
        }
        ct_arena_rewind(ws, mark);
    } else {
        return ct_fail(CT_ERR_UNSUPPORTED, "matmul: weight dtype %s", ct_dtype_name(w->dtype));
    }
    epilogue(y, b, residual, alpha, act, M, N, accumulate);
    return CT_OK;
}

ct_status ct_cpu_conv_pointwise(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                                int B, int Ci, int Co, int P, ct_act act, ct_arena *ws) {
    // y (B,Co,P), x (B,Ci,P), w (Co,Ci), b (Co)
    if (ct_tensor_numel(w) != (int64_t)Co * Ci)
        return ct_fail(CT_ERR_INVALID_ARG, "conv_pointwise: weight has %lld elements, want %d x %d",
                       (long long)ct_tensor_numel(w), Co, Ci);
    size_t mark = ct_arena_mark(ws);
    const float *W = w->data;
    if (w->dtype != CT_DTYPE_F32) {
        float *wf = ct_arena_alloc(ws, sizeof(float) * (size_t)Co * Ci);
        if (!wf) return CT_ERR_OOM;
        if (w->dtype == CT_DTYPE_Q8)
            for (int o = 0; o < Co; o++) ct_q8_dequantize_row(wf + (size_t)o * Ci, w, o);
        else if (w->dtype == CT_DTYPE_Q8_0)
            for (int o = 0; o < Co; o++) ct_q80_dequantize_row(wf + (size_t)o * Ci, ct_q80_row(w, o, Ci), Ci);
        else
            CT_TRY(ct_convert_to_f32(wf, w->data, w->dtype, (size_t)Co * Ci));
        W = wf;
    }
    for (int bb = 0; bb < B; bb++) {
        float *yb = y + (size_t)bb * Co * P;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Co, P, Ci, 1.0f, W, Ci, x + (size_t)bb * Ci * P, P,
                    0.0f, yb, P);
#pragma omp parallel for schedule(static) if ((size_t)Co * P > CT_PAR_MIN)
        for (int o = 0; o < Co; o++) {
            float bo = b ? b[o] : 0.0f;
            float *r = yb + (size_t)o * P;
            for (int p = 0; p < P; p++) r[p] += bo;
            ct_fast_bias_act(r, NULL, NULL, 1.0f, (int)act, P);
        }
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}
