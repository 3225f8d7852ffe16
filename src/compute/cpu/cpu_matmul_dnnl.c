/* cpu_matmul_dnnl.c — dense layers with f32 or bf16 weights through
 * oneDNN (when the backend chose it: native bf16 on AVX512-BF16/AMX, or
 * forced for tests; f32 where it measured faster than OpenBLAS). bf16 runs
 * bf16 activations × bf16 weights → f32, so activations are rounded to bf16
 * per call. Rows go in chunks that fit the op's workspace; the epilogue
 * (bias, activation, residual) is one pass after each chunk. Decoding rows
 * (M ≤ 4) stay on cpu_matmul.c's GEMV. */
#include <string.h>

#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_math.h"
#include "compute/cpu/cpu_state.h"

int ct_cpu_dnnl_takes(const ct_backend *be, ct_dtype wdtype) {
    const ct_cpu_state *st = ct_cpu_state_of(be);
    if (!st || !st->dnnl) return 0;
    return (wdtype == CT_DTYPE_BF16 && st->dnnl_bf16) || (wdtype == CT_DTYPE_F32 && st->dnnl_f32);
}

/* x rows → bf16 (round to nearest even, as torch's .to(bfloat16)). */
static void to_bf16(uint16_t *dst, const float *x, size_t n) {
#pragma omp parallel for schedule(static) if (n > CT_PAR_MIN)
    for (size_t i = 0; i < n; i++) dst[i] = ct_f32_to_bf16(x[i]);
}

ct_status ct_cpu_matmul_dnnl(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                             const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    // y (M,N), x (M,K), w (N,K) f32 or bf16, b (N), residual (M,N)
    const ct_cpu_state *st = ct_cpu_state_of(be);
    const int bf16 = w->dtype == CT_DTYPE_BF16;
    const int raw_in_y = residual != y;
    const size_t per_row = (bf16 ? 2 * (size_t)K : 0) + (raw_in_y ? 0 : sizeof(float) * (size_t)N);
    const size_t used = ct_arena_mark(ws), slack = 4 * CT_ARENA_ALIGN;
    const size_t avail = ws->cap > used + slack ? ws->cap - used - slack : 0;
    int R = per_row == 0 || avail / per_row >= (size_t)M ? M : (int)(avail / per_row);
    if (R < 1) return ct_fail(CT_ERR_OOM, "matmul: workspace too small for one row (%zu bytes)", per_row);
    if (R < M && R > 16) R &= ~15;
    uint16_t *xb = bf16 ? ct_arena_alloc(ws, 2 * (size_t)R * K) : NULL;
    float *tmp = raw_in_y ? NULL : ct_arena_alloc(ws, sizeof(float) * (size_t)R * N);
    if ((bf16 && !xb) || (!raw_in_y && !tmp)) {
        ct_arena_rewind(ws, used);
        return ct_fail(CT_ERR_OOM, "matmul: oneDNN workspace");
    }
    ct_status rc = CT_OK;
    for (int m0 = 0; m0 < M && rc == CT_OK; m0 += R) {
        const int rows = M - m0 < R ? M - m0 : R;
        const float *xr = x + (size_t)m0 * K;
        float *yr = y + (size_t)m0 * N, *raw = raw_in_y ? yr : tmp;
        if (bf16) to_bf16(xb, xr, (size_t)rows * K);
        rc = ct_dnnl_matmul(st->dnnl, bf16 ? CT_DNNL_BF16 : CT_DNNL_F32, raw, bf16 ? (const void *)xb : xr, w->data,
                            rows, N, K);
        if (rc != CT_OK) break;
        const float *res = residual ? residual + (size_t)m0 * N : NULL;
#pragma omp parallel for schedule(static) if ((size_t)rows * N > CT_PAR_MIN)
        for (int m = 0; m < rows; m++) {
            float *o = raw + (size_t)m * N;
            if (raw_in_y) {
                ct_fast_bias_act(o, b, res ? res + (size_t)m * N : NULL, alpha, (int)act, N);
            } else { /* residual is y: act is NONE */
                float *d = yr + (size_t)m * N;
                ct_fast_bias_act(o, b, NULL, alpha, (int)act, N);
                for (int n = 0; n < N; n++) d[n] += o[n];
            }
        }
    }
    ct_arena_rewind(ws, used);
    return rc == CT_OK ? CT_OK : ct_fail_wrap(rc, "matmul %dx%dx%d %s", M, N, K, bf16 ? "bf16" : "f32");
}
