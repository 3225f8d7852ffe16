/* cuda_ops_gemm.cu — the backend's matrix ops on cuBLASLt (ct_cuda_gemm,
 * ct_cuda_bgemm in cuda_runtime.cu): matmul with the bias, ReLU and
 * residual in the GEMM's epilogue (SiLU, which cuBLASLt lacks, as one pass
 * after it), and the pointwise conv as a GEMM per batch row. References:
 * ct_ref_matmul, ct_ref_conv_pointwise.
 */
#include "compute/cuda/cuda_be.h"

static int is16(ct_dtype t) { return t == CT_DTYPE_BF16 || t == CT_DTYPE_F16; }

/* cuBLASLt adds the bias in D's type; the reference adds alpha·b (the
 * interface scales the bias with the product), so it is converted and
 * scaled into scratch. Small: N elements. */
void ct_cuda_biases_clear(ct_backend *be) {
    ct_cuda_be *cb = ct_cbe(be);
    for (struct ct_cuda_bias *e = cb->biases, *nx; e; e = nx) {
        nx = e->next;
        ct_cuda_dfree(cb->c, e->dev);
        free(e);
    }
    cb->biases = NULL;
}

/* The kept conversion of b (cuda_be.h), made on first use outside a graph
 * capture (an allocation cannot be recorded); NULL where there is none. */
static const void *bias_kept(ct_backend *be, ct_dtype dt, const float *b, float alpha, int N) {
    ct_cuda_be *cb = ct_cbe(be);
    for (struct ct_cuda_bias *e = cb->biases; e; e = e->next)
        if (e->src == b && e->alpha == alpha && e->dtype == (int)dt && e->n == N) return e->dev;
    if (cb->capturing) return NULL;
    struct ct_cuda_bias *e = (struct ct_cuda_bias *)calloc(1, sizeof *e);
    if (!e) return NULL;
    if (ct_cuda_malloc(cb->c, &e->dev, ct_dtype_size(dt) * (size_t)N) != CT_OK) {
        ct_error_clear();
        free(e);
        return NULL;
    }
    if (ct_cuda_scale_convert(be, dt, e->dev, b, alpha, (size_t)N) != CT_OK) {
        ct_error_clear();
        ct_cuda_dfree(cb->c, e->dev);
        free(e);
        return NULL;
    }
    e->src = b, e->alpha = alpha, e->dtype = (int)dt, e->n = N;
    e->next = cb->biases;
    cb->biases = e;
    return e->dev;
}

static ct_status bias_for(ct_backend *be, ct_dtype dt, const float *b, float alpha, int N, ct_arena *ws,
                          const void **out) {
    *out = NULL;
    if (!b) return CT_OK;
    if (dt == CT_DTYPE_F32 && alpha == 1.f) {
        *out = b;
        return CT_OK;
    }
    if ((*out = bias_kept(be, dt, b, alpha, N))) return CT_OK;
    void *d = ws ? ct_arena_alloc(ws, ct_dtype_size(dt) * (size_t)N) : NULL;
    if (!d) return ct_fail(CT_ERR_OOM, "cuda matmul: workspace for the bias");
    CT_TRY(ct_cuda_scale_convert(be, dt, d, b, alpha, (size_t)N));
    *out = d;
    return CT_OK;
}

ct_status ct_cuda_op_matmul(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, ct_buf residual,
                            float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    ct_cuda_be *cb = ct_cbe(be);
    if (M <= 0 || N <= 0) return CT_OK;
    if (!is16(x.dtype) || w->dtype != x.dtype)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda matmul: x %s with weights %s (both must be the activation type)",
                       ct_dtype_name(x.dtype), ct_dtype_name(w->dtype));
    if (y.dtype != CT_DTYPE_F32 && y.dtype != x.dtype)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda matmul: output %s for input %s", ct_dtype_name(y.dtype),
                       ct_dtype_name(x.dtype));
    if (w->ndim != 2 || w->shape[0] != N || w->shape[1] != K)
        return ct_fail(CT_ERR_INVALID_ARG, "cuda matmul: weight shape for N=%d K=%d", N, K);
    int has_res = residual.data != NULL;
    if (has_res && (residual.dtype != y.dtype || act != CT_ACT_NONE))
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda matmul: a residual needs the output's type and no activation");
    size_t mark = ws ? ct_arena_mark(ws) : 0;
    if (has_res && residual.data != y.data)
        CT_CUDA_TRY(cudaMemcpyAsync(y.data, residual.data, ct_buf_bytes(y, (size_t)M * N), cudaMemcpyDeviceToDevice,
                                    cb->c->stream));
    /* SiLU runs after the GEMM, so its bias must too (no scaling: alpha 1
     * with an activation other than NONE is all the model uses) */
    int silu = act == CT_ACT_SILU;
    if (silu && alpha != 1.f) return ct_fail(CT_ERR_UNSUPPORTED, "cuda matmul: SiLU with alpha %g", alpha);
    /* ReLU in the epilogue sees alpha·(x·Wᵀ + b): equal to alpha·relu(...) only for alpha > 0 */
    if (act == CT_ACT_RELU && !(alpha > 0.f))
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda matmul: ReLU with alpha %g", alpha);
    if (K <= 0) return ct_fail(CT_ERR_INVALID_ARG, "cuda matmul: K = 0");
    ct_cuda_gemm_args g = {M, N, K, (const uint16_t *)x.data, K, (const uint16_t *)w->data, K, NULL, y.data, N,
                           y.dtype == CT_DTYPE_F32, alpha, has_res ? 1.f : 0.f,
                           act == CT_ACT_RELU ? CT_CUDA_ACT_RELU : CT_CUDA_ACT_NONE, x.dtype == CT_DTYPE_F16, 0};
    ct_status s = CT_OK;
    /* an fp32 bias straight into a 16-bit output's epilogue saves a conversion
     * launch per matmul (and rounds the bias once, with the sum); where
     * cuBLASLt has no such kernel for this shape, the bias is converted as
     * below. Per shape: the plan cache remembers a refused one, so asking
     * again costs a lookup, where one refused shape used to send every later
     * matmul (a decoder step's five) through the conversion */
    /* the bias kept in the output's type (made once per bias, outside a
     * graph capture): the old engine's epilogue. Against the float32 bias
     * first (below), same call on the H200: 0.088 / 0.089 s decoder at
     * batch 1, 0.149 / 0.148 s at 128 — no difference in speed, and one
     * conversion kernel fewer per product wherever cuBLASLt has no
     * float32-bias kernel for the shape */
    if (!silu && b && y.dtype != CT_DTYPE_F32) {
        const void *kept = bias_kept(be, y.dtype, b, alpha, N);
        if (kept) {
            g.bias = kept;
            return ct_cuda_gemm(cb->c, &g);
        }
    }
    if (!silu && b && alpha == 1.f && y.dtype != CT_DTYPE_F32) {
        g.bias = b;
        g.bias_f32 = 1;
        s = ct_cuda_gemm(cb->c, &g);
        if (s == CT_OK) return CT_OK;
        ct_error_clear();
        g.bias_f32 = 0;
    }
    const void *bias = NULL;
    if (!silu) CT_TRY(bias_for(be, y.dtype, b, alpha, N, ws, &bias));
    g.bias = bias;
    s = ct_cuda_gemm(cb->c, &g);
    if (s == CT_OK && silu) s = ct_cuda_bias_act(be, y, b, (size_t)M, N, 0, N, CT_ACT_SILU);
    if (ws) ct_arena_rewind(ws, mark);
    return s;
}

ct_status ct_cuda_op_conv_pointwise(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, int B,
                                    int Ci, int Co, int P, ct_act act, ct_arena *ws) {
    ct_cuda_be *cb = ct_cbe(be);
    if (B <= 0 || Co <= 0 || P <= 0) return CT_OK;
    if (!is16(x.dtype) || w->dtype != x.dtype || y.dtype != x.dtype)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda conv_pointwise: x %s, y %s, weights %s", ct_dtype_name(x.dtype),
                       ct_dtype_name(y.dtype), ct_dtype_name(w->dtype));
    /* y_b (Co,P) = W (Co,Ci) · x_b (Ci,P): W shared by every row (stride 0) */
    ct_cuda_bgemm_args g = {Co, P, Ci, B, (const uint16_t *)w->data, Ci, 0, (const uint16_t *)x.data, P,
                            (long long)Ci * P, 0, y.data, P, (long long)Co * P, 0, 1.f, x.dtype == CT_DTYPE_F16};
    CT_TRY(ct_cuda_bgemm(cb->c, &g));
    return ct_cuda_bias_act(be, y, b, (size_t)B * Co, P, 1, Co, act);
}
