/* cpu_int8.h — the CPU backend's int8 (Q8 weight) dense layer and its
 * integer kernels, each with a plain reference beside it (compared in
 * tests/unit/test_int8.c). */
#ifndef CT_COMPUTE_CPU_INT8_H
#define CT_COMPUTE_CPU_INT8_H

#include <stdint.h>

#include "compute/backend.h"

/* Rows up to this many (decoding) take the GEMV kernel: oneDNN would repack
 * the weight matrix for every call, costing more than the product. */
#define CT_Q8_GEMV_ROWS 4

/* y = residual + alpha·act(x·wᵀ + b) for a Q8 weight (compute/quant.h):
 * on VNNI, u8 activations × s8 weights → s32 (GEMV for ≤ CT_Q8_GEMV_ROWS
 * rows, oneDNN above), dequantised in the epilogue; without VNNI (or at
 * CT_ISA_BASELINE) the weights are widened to f32 per tile for sgemm. */
ct_status ct_cpu_matmul_q8(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                           const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws);

/* 1 when M rows of an int8 product take the integer path (u8 activations,
 * VNNI) on this backend, 0 when they take the widened fallback. */
int ct_cpu_q8_native(const ct_backend *be, int M);

/* acc (M,N) = u (M,K) · q (N,K)ᵀ in int32: the reference and the
 * AVX512-VNNI kernel (M ≤ CT_Q8_GEMV_ROWS; threads over N). */
void ct_int8_gemm_ref(int32_t *acc, const uint8_t *u, const int8_t *q, int M, int N, int K);
void ct_int8_gemv_vnni512(int32_t *acc, const uint8_t *u, const int8_t *q, int M, int N, int K);

#endif
