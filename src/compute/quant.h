/* quant.h — int8 quantisation for the CPU's int8 path (--dtype int8).
 *
 * Weights (CT_DTYPE_Q8 tensors, made at load): symmetric per output row,
 *   scale[n] = max_k |w[n][k]| / 127, q[n][k] = round(w[n][k] / scale[n]) ∈ [−127, 127],
 * with the row sums Σ_k q[n][k] kept for the activation zero point. One
 * allocation: the N·K int8 values (padded to 64 bytes), then N f32 scales
 * (padded), then N int32 row sums.
 *
 * Activations (per call, per row m): asymmetric u8 with a zero point,
 *   s[m] = (max(x,0) − min(x,0)) / 255, z[m] = round(−min(x,0)/s[m]),
 *   u[m][k] = clamp(round(x[m][k]/s[m]) + z[m], 0, 255),
 * so that x ≈ s·(u − z). The product, exact in int32:
 *   y[m][n] = s[m]·scale[n]·(Σ_k u[m][k]·q[n][k] − z[m]·rowsum[n]).
 * u8 × s8 is what VNNI's vpdpbusd multiplies natively. A row holding a NaN
 * or infinity gets s[m] = NaN, so its outputs are NaN as in float math.
 */
#ifndef CT_COMPUTE_QUANT_H
#define CT_COMPUTE_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "compute/tensor.h"

/* Bytes of a Q8 (N,K) weight and the offsets of its parts. */
size_t ct_q8_bytes(int64_t N, int64_t K);
static inline size_t ct_q8_pad(size_t n) { return (n + 63) / 64 * 64; }
static inline int64_t ct_q8_rows(const ct_tensor *w) { return w->ndim > 0 ? w->shape[0] : 1; }
static inline const int8_t *ct_q8_values(const ct_tensor *w) { return (const int8_t *)w->data; }
static inline const float *ct_q8_scales(const ct_tensor *w) {
    return (const float *)((const unsigned char *)w->data + ct_q8_pad((size_t)ct_tensor_numel(w)));
}
static inline const int32_t *ct_q8_rowsums(const ct_tensor *w) {
    return (const int32_t *)((const unsigned char *)ct_q8_scales(w) + ct_q8_pad(sizeof(float) * (size_t)ct_q8_rows(w)));
}

/* Quantise one weight row of K elements (f32/bf16/f16, may be unaligned).
 * Returns the index of the first NaN/infinity in it, or -1 (then q is
 * all zero). */
int64_t ct_q8_quantize_row(int8_t *q, float *scale, int32_t *rowsum, const void *src, ct_dtype src_dtype, int64_t K);
/* The plain-loop definition (ct_q8_quantize_row takes AVX-512 where the
 * CPU has it; tests compare the two bit for bit). */
int64_t ct_q8_quantize_row_ref(int8_t *q, float *scale, int32_t *rowsum, const void *src, ct_dtype src_dtype,
                               int64_t K);

/* A host-backend Q8 tensor (N,K) from src (N·K elements), rows in parallel,
 * the NaN/infinity scan in the same pass: *bad_at = first bad element or -1
 * (the tensor is released then). Each source page is read once. */
ct_status ct_tensor_quantize_q8(struct ct_backend *be, const void *src, ct_dtype src_dtype, int64_t N, int64_t K,
                                int64_t *bad_at, ct_tensor *out);

/* Per-row u8 activations: u (M,K), s (M), z (M) from x (M,K). Plain loops
 * the compiler vectorises; shared by the reference and the fast path (it is
 * the definition of the activation rounding). */
void ct_q8_quantize_act(uint8_t *u, float *s, int32_t *z, const float *x, int M, int K);

/* f32 (K) = scale·q of one Q8 row (for the widened fallback and tests). */
void ct_q8_dequantize_row(float *dst, const ct_tensor *w, int64_t n);

/* ---- Q8_0: ggml's per-block int8 (CT_DTYPE_Q8_0) --------------------------
 *
 * Weights (N,K), K % 32 == 0: row n is K/32 blocks of {f16 d; int8 q[32]}
 * (34 bytes, ggml's block_q8_0), so a GGUF Q8_0 tensor is used straight
 * from the mapped file. Made here (convert --dtype q8_0, --dtype int8 at
 * load) as ggml's quantize_row_q8_0_ref makes them: per block
 *   amax = max |w|, d = amax/127, id = d ≠ 0 ? 1/d : 0,
 *   q = roundf(w·id) (half away from zero), d stored as f16.
 *
 * Activations (per call): per row, per block of 32, an fp32 scale:
 *   amax = max |x|, dx = amax/127, qx = round_half_even(x · 127/amax)
 *   ∈ [−127, 127] (0 for an all-zero block), as ggml's AVX2 q8_0
 *   activation quantiser rounds but keeping the scale in fp32; a block
 *   holding a NaN or infinity gets dx = NaN (so the row's outputs are NaN,
 *   as in float math).
 *
 * The product (the definition, ct_q80_gemm_ref):
 *   y[m][n] = Σ_b t_b,  t_b = (f32(d[n][b]) · dx[m][b]) · (float)Σ_i q[n][b][i]·qx[m][b][i]
 * The block dot is exact in int32 (|dot| ≤ 32·128·127 < 2²⁴, so its float
 * is exact too); the scale product is one fp32 rounding and t_b another;
 * the t_b are summed in fp32 in ascending b by the reference, in another
 * order by the fast kernels (8 lanes), which tests bound by
 * (nb + 2)·2⁻²⁴·Σ|t_b| (nb = K/32 blocks). */
#define CT_Q80_ROW_BYTES(K) ((size_t)(K) / CT_Q8_0_BLOCK * CT_Q8_0_BLOCK_BYTES)

static inline const unsigned char *ct_q80_row(const ct_tensor *w, int64_t n, int64_t K) {
    return (const unsigned char *)w->data + (size_t)n * CT_Q80_ROW_BYTES(K);
}

/* One weight row of K elements (f32/bf16/f16, any alignment) into K/32
 * blocks at dst. Returns the index of the first NaN/infinity, or -1 (then
 * dst is all zero). */
int64_t ct_q80_quantize_row(void *dst, const void *src, ct_dtype src_dtype, int64_t K);

/* A host-backend Q8_0 tensor (N,K) from src (N·K elements), rows in
 * parallel, the NaN/infinity scan in the same pass (*bad_at as
 * ct_tensor_quantize_q8). Each source page is read once; each destination
 * page is first touched by the thread that fills it. */
ct_status ct_tensor_quantize_q80(struct ct_backend *be, const void *src, ct_dtype src_dtype, int64_t N, int64_t K,
                                 int64_t *bad_at, ct_tensor *out);

/* Activations (M,K) → qx (M,K) int8 and dx (M, K/32) fp32 (the definition
 * above; shared by the reference and the fast path). K % 32 == 0. */
void ct_q80_quantize_act(int8_t *qx, float *dx, const float *x, int M, int K);

/* f32 (K) = d·q of one Q8_0 row (K/32 blocks at row). Exact. */
void ct_q80_dequantize_row(float *dst, const void *row, int64_t K);

/* Index of the first non-finite block scale among n elements (n/32
 * blocks) of Q8_0 data, as an element index (the block's first), or -1. */
int64_t ct_q80_first_non_finite(const void *src, size_t n);

/* acc (M,N) = the product above of quantised activations and a Q8_0 weight
 * (w: N rows of K/32 blocks): plain loops, one thread. The definition the
 * fast kernels (compute/cpu/cpu_q80.c) are tested against. */
void ct_q80_gemm_ref(float *acc, const int8_t *qx, const float *dx, const void *w, int M, int N, int K);

#endif
