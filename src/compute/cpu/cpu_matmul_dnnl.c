/* cpu_matmul_dnnl.c — dense layers with f32 or bf16 weights through
 * oneDNN (when the backend chose it: native bf16 on AVX512-BF16/AMX, or
 * forced for tests; f32 where it measured faster than OpenBLAS, and bf16/f16
 * weights widened to f32 for that kernel where there is no native one). bf16 runs
 * bf16 activations × bf16 weights → f32, so activations are rounded to bf16
 * per call. Rows go in chunks that fit the op's workspace; the epilogue
 * (bias, activation, residual) is fused into oneDNN's stores for the native
 * products, and one pass per block for the widened ones. Decoding rows
 * (M ≤ 4) stay on cpu_matmul.c's GEMV. Native products go through
 * ct_dnnl_matmul_w, which may run them on a packed copy of the weight. */
#include <string.h>

#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_math.h"
#include "compute/cpu/cpu_state.h"

int ct_cpu_dnnl_takes(const ct_backend *be, ct_dtype wdtype) {
    const ct_cpu_state *st = ct_cpu_state_of(be);
    if (!st || !st->dnnl) return 0;
    if (wdtype == CT_DTYPE_BF16 && st->dnnl_bf16) return 1;
    /* 16-bit weights without native products: widened to f32 in blocks of
     * rows, then oneDNN's f32 kernel (widened_dnnl below) */
    return st->dnnl_f32 && (wdtype == CT_DTYPE_F32 || wdtype == CT_DTYPE_BF16 || wdtype == CT_DTYPE_F16);
}

/* bf16/f16 weights where the CPU has no native 16-bit product: widen a block
 * of NB weight rows to f32 in the workspace (in parallel; each weight byte is
 * read once per call), multiply with oneDNN f32 into an (M, NB) buffer, and
 * let the epilogue write the block's columns of y. oneDNN's f32 brgemm ran
 * 1.4–1.5× OpenBLAS sgemm on the encoder's shapes here (PERFORMANCE.md), and
 * widening a whole matrix costs far less than the product it feeds once M is
 * more than a few rows. */
static ct_status widened_dnnl(const ct_cpu_state *st, float *y, const float *x, const ct_tensor *w, const float *b,
                              const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    const int bf16 = w->dtype == CT_DTYPE_BF16;
    const size_t used = ct_arena_mark(ws), slack = 4 * CT_ARENA_ALIGN;
    const size_t avail = ws->cap > used + slack ? ws->cap - used - slack : 0;
    const size_t per_col = sizeof(float) * ((size_t)K + (size_t)M); /* a widened row + its output column */
    int NB = avail / per_col >= (size_t)N ? N : (int)(avail / per_col);
    if (NB < N && NB > 64) NB &= ~63;
    if (NB < 16 && NB < N) return CT_ERR_OOM; /* caller falls back to the tiled OpenBLAS path */
    float *wf = ct_arena_alloc(ws, sizeof(float) * (size_t)NB * K);
    float *out = ct_arena_alloc(ws, sizeof(float) * (size_t)M * NB);
    if (!wf || !out) {
        ct_arena_rewind(ws, used);
        return CT_ERR_OOM;
    }
    ct_status rc = CT_OK;
    for (int n0 = 0; n0 < N && rc == CT_OK; n0 += NB) {
        const int nb = N - n0 < NB ? N - n0 : NB;
        const uint16_t *src = (const uint16_t *)w->data + (size_t)n0 * K;
#pragma omp parallel for schedule(static) if ((size_t)nb * K > CT_PAR_MIN)
        for (int r = 0; r < nb; r++) ct_widen_half(wf + (size_t)r * K, src + (size_t)r * K, (size_t)K, bf16);
        rc = ct_dnnl_matmul(st->dnnl, CT_DNNL_F32, out, x, wf, M, nb, K);
        if (rc != CT_OK) break;
#pragma omp parallel for schedule(static) if ((size_t)M * nb > CT_PAR_MIN)
        for (int m = 0; m < M; m++) { /* residual may be y: read before the store, per element */
            float *o = out + (size_t)m * nb;
            ct_fast_bias_act(o, b ? b + n0 : NULL, residual ? residual + (size_t)m * N + n0 : NULL, alpha, (int)act,
                             nb);
            memcpy(y + (size_t)m * N + n0, o, sizeof(float) * (size_t)nb);
        }
    }
    ct_arena_rewind(ws, used);
    return rc;
}

/* x rows → bf16 (round to nearest even, as torch's .to(bfloat16)). */
static void to_bf16(uint16_t *dst, const float *x, size_t n) {
    const size_t chunk = 4096; /* a multiple of the 16 lanes */
#pragma omp parallel for schedule(static) if (n > CT_PAR_MIN)
    for (size_t i = 0; i < n; i += chunk) ct_fast_f32_to_bf16(dst + i, x + i, n - i < chunk ? n - i : chunk);
}

ct_status ct_cpu_matmul_dnnl(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                             const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    // y (M,N), x (M,K), w (N,K) f32 or bf16, b (N), residual (M,N)
    const ct_cpu_state *st = ct_cpu_state_of(be);
    if (w->dtype == CT_DTYPE_F16 || (w->dtype == CT_DTYPE_BF16 && !st->dnnl_bf16)) {
        ct_status rc = widened_dnnl(st, y, x, w, b, residual, alpha, act, M, N, K, ws);
        return rc == CT_OK || rc == CT_ERR_OOM ? rc : ct_fail_wrap(rc, "matmul %dx%dx%d widened", M, N, K);
    }
    const int bf16 = w->dtype == CT_DTYPE_BF16;
    /* bf16 activations need a rounded copy of a block of rows; f32 none */
    const size_t per_row = bf16 ? 2 * (size_t)K : 0;
    const size_t used = ct_arena_mark(ws), slack = 4 * CT_ARENA_ALIGN;
    const size_t avail = ws->cap > used + slack ? ws->cap - used - slack : 0;
    int R = per_row == 0 || avail / per_row >= (size_t)M ? M : (int)(avail / per_row);
    if (R < 1) return ct_fail(CT_ERR_OOM, "matmul: workspace too small for one row (%zu bytes)", per_row);
    if (R < M && R > 16) R &= ~15;
    uint16_t *xb = bf16 ? ct_arena_alloc(ws, 2 * (size_t)R * K) : NULL;
    if (bf16 && !xb) {
        ct_arena_rewind(ws, used);
        return ct_fail(CT_ERR_OOM, "matmul: oneDNN workspace");
    }
    /* The epilogue runs inside oneDNN as each tile is stored (bias, then
     * alpha·act as one eltwise, then the residual as a sum post-op over
     * what y holds), so y is written once; a residual that is not y is
     * copied into y first. */
    const ct_dnnl_epilogue ep = {.bias = b, .act = (int)act, .alpha = alpha, .accumulate = residual != NULL};
    if (residual && residual != y) memcpy(y, residual, sizeof(float) * (size_t)M * N);
    const ct_dnnl_weight wd = ct_cpu_dnnl_weight(w, w->data);
    ct_status rc = CT_OK;
    for (int m0 = 0; m0 < M && rc == CT_OK; m0 += R) {
        const int rows = M - m0 < R ? M - m0 : R;
        const float *xr = x + (size_t)m0 * K;
        if (bf16) to_bf16(xb, xr, (size_t)rows * K);
        rc = ct_dnnl_matmul_w(st->dnnl, bf16 ? CT_DNNL_BF16 : CT_DNNL_F32, y + (size_t)m0 * N,
                              bf16 ? (const void *)xb : xr, &wd, rows, N, K, &ep);
    }
    ct_arena_rewind(ws, used);
    return rc == CT_OK ? CT_OK : ct_fail_wrap(rc, "matmul %dx%dx%d %s", M, N, K, bf16 ? "bf16" : "f32");
}
