/* ref_matmul.c — reference dense layer y = residual + alpha·act(x·wᵀ + b) and
 * the pointwise conv, as plain loops over float32 (weights of any float dtype
 * are widened element by element). Accumulates in float like the fast path.
 * Q8 (int8) weights: the definition of the int8 product (compute/quant.h):
 * activations quantised per row to u8, exact integer dot products, then the
 * row and column scales. Q8_0 (ggml block) weights: activations quantised
 * per block of 32, exact block dots, fp32 sums (compute/quant.h). */
#include <math.h>
#include <string.h>

#include "compute/quant.h"
#include "compute/ref/ops_ref.h"

float ct_ref_weight_at(const ct_tensor *w, size_t i) {
    switch (w->dtype) {
    case CT_DTYPE_F32: return ((const float *)w->data)[i];
    case CT_DTYPE_BF16: return ct_bf16_to_f32(((const uint16_t *)w->data)[i]);
    case CT_DTYPE_F16: return ct_f16_to_f32(((const uint16_t *)w->data)[i]);
    case CT_DTYPE_Q8: {
        const size_t K = (size_t)(ct_tensor_numel(w) / ct_q8_rows(w));
        return ct_q8_scales(w)[i / K] * (float)ct_q8_values(w)[i];
    }
    case CT_DTYPE_Q8_0: { /* element i of block i/32: d · q */
        const unsigned char *blk = (const unsigned char *)w->data + i / CT_Q8_0_BLOCK * CT_Q8_0_BLOCK_BYTES;
        uint16_t h;
        memcpy(&h, blk, 2);
        return ct_f16_to_f32(h) * (float)((const int8_t *)(blk + 2))[i % CT_Q8_0_BLOCK];
    }
    default: return NAN;
    }
}

static ct_status check_weight(const ct_tensor *w, int64_t n_out, int64_t n_in, const char *op) {
    if (w->dtype != CT_DTYPE_F32 && w->dtype != CT_DTYPE_BF16 && w->dtype != CT_DTYPE_F16 && w->dtype != CT_DTYPE_Q8 &&
        w->dtype != CT_DTYPE_Q8_0)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: weight dtype %s", op, ct_dtype_name(w->dtype));
    if (ct_tensor_numel(w) != n_out * n_in)
        return ct_fail(CT_ERR_INVALID_ARG, "%s: weight has %lld elements, want %lld x %lld", op,
                       (long long)ct_tensor_numel(w), (long long)n_out, (long long)n_in);
    return CT_OK;
}

/* The int8 product, row by row: one row's u8 activations from ws. */
static ct_status matmul_q8(float *y, const float *x, const ct_tensor *w, const float *b, const float *residual,
                           float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    size_t mark = ct_arena_mark(ws);
    uint8_t *u = ct_arena_alloc(ws, (size_t)K);
    if (!u) return ct_fail(CT_ERR_OOM, "matmul: int8 activation row (%d bytes)", K);
    const int8_t *q = ct_q8_values(w);
    const float *ws_n = ct_q8_scales(w);
    const int32_t *sum = ct_q8_rowsums(w);
    for (int m = 0; m < M; m++) {
        float sm;
        int32_t zm;
        ct_q8_quantize_act(u, &sm, &zm, x + (size_t)m * K, 1, K);
        for (int n = 0; n < N; n++) {
            int32_t acc = 0;
            for (int k = 0; k < K; k++) acc += (int32_t)u[k] * (int32_t)q[(size_t)n * K + k];
            float v = sm * ws_n[n] * (float)(acc - zm * sum[n]);
            if (b) v += b[n];
            float r = alpha * ct_ref_act(v, act);
            if (residual) r += residual[(size_t)m * N + n];
            y[(size_t)m * N + n] = r;
        }
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

/* The Q8_0 product (compute/quant.h): each row's activations quantised per
 * block of 32, then ct_q80_gemm_ref, then the epilogue. */
static ct_status matmul_q80(float *y, const float *x, const ct_tensor *w, const float *b, const float *residual,
                            float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    if (K % CT_Q8_0_BLOCK)
        return ct_fail(CT_ERR_INVALID_ARG, "matmul: Q8_0 weight rows of %d elements (not a multiple of 32)", K);
    size_t mark = ct_arena_mark(ws);
    int8_t *qx = ct_arena_alloc(ws, (size_t)K);
    float *dx = ct_arena_alloc(ws, sizeof(float) * (size_t)(K / CT_Q8_0_BLOCK));
    float *acc = ct_arena_alloc(ws, sizeof(float) * (size_t)N);
    if (!qx || !dx || !acc) {
        ct_arena_rewind(ws, mark);
        return ct_fail(CT_ERR_OOM, "matmul: Q8_0 activation row");
    }
    for (int m = 0; m < M; m++) {
        ct_q80_quantize_act(qx, dx, x + (size_t)m * K, 1, K);
        ct_q80_gemm_ref(acc, qx, dx, w->data, 1, N, K);
        for (int n = 0; n < N; n++) {
            float v = acc[n];
            if (b) v += b[n];
            float r = alpha * ct_ref_act(v, act);
            if (residual) r += residual[(size_t)m * N + n];
            y[(size_t)m * N + n] = r;
        }
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

ct_status ct_ref_matmul(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                        const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    // y (M,N), x (M,K), w (N,K), b (N), residual (M,N)
    CT_TRY(check_weight(w, N, K, "matmul"));
    if (residual == y && act != CT_ACT_NONE)
        return ct_fail(CT_ERR_INVALID_ARG, "matmul: residual aliases y with an activation");
    if (w->dtype == CT_DTYPE_Q8) return matmul_q8(y, x, w, b, residual, alpha, act, M, N, K, ws);
    if (w->dtype == CT_DTYPE_Q8_0) return matmul_q80(y, x, w, b, residual, alpha, act, M, N, K, ws);
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++) acc += x[(size_t)m * K + k] * ct_ref_weight_at(w, (size_t)n * K + k);
            if (b) acc += b[n];
            float r = alpha * ct_ref_act(acc, act);
            if (residual) r += residual[(size_t)m * N + n];
            y[(size_t)m * N + n] = r;
        }
    }
    return CT_OK;
}

ct_status ct_ref_conv_pointwise(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                                int B, int Ci, int Co, int P, ct_act act, ct_arena *ws) {
    // y (B,Co,P), x (B,Ci,P), w (Co,Ci), b (Co)
    CT_TRY(check_weight(w, Co, Ci, "conv_pointwise"));
    for (int bb = 0; bb < B; bb++)
        for (int o = 0; o < Co; o++)
            for (int p = 0; p < P; p++) {
                float acc = 0.0f;
                for (int i = 0; i < Ci; i++)
                    acc += ct_ref_weight_at(w, (size_t)o * Ci + i) * x[((size_t)bb * Ci + i) * P + p];
                if (b) acc += b[o];
                y[((size_t)bb * Co + o) * P + p] = ct_ref_act(acc, act);
            }
    return CT_OK;
}
