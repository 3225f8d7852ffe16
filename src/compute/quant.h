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

#endif
