/* cpu_q80.h — the CPU backend's dense layer with Q8_0 (ggml block int8)
 * weights and its kernels: activations quantised per block of 32
 * (compute/quant.h has the definition), integer block dots, fp32 sums.
 * The reference product is ct_q80_gemm_ref (compute/quant.c);
 * tests/unit/test_q8_0.c compares every level against it. */
#ifndef CT_COMPUTE_CPU_Q80_H
#define CT_COMPUTE_CPU_Q80_H

#include <stdint.h>

#include "compute/backend.h"
#include "compute/cpu/cpu_isa.h"

/* acc (M,N) = the Q8_0 product of qx (M,K) int8 with dx (M,K/32) and the
 * weight w (N rows of K/32 blocks), with the kernels of level isa (which
 * must not exceed ct_cpu_isa_best()): CT_CPU_ISA_PLAIN is the reference
 * loops; AVX2 and AVX512 both take the AVX2 kernel (maddubs with the sign
 * trick, exact in 16 bits: |w| ≤ 128 unsigned times sign-applied
 * activations within ±127, pairs ≤ 32512). No AVX-512 or VNNI variant: it
 * could not be tested on the machines this was written on. On up to
 * `threads` OpenMP threads; the result does not depend on the thread count
 * or on M and N (each output is one accumulator with a fixed order). */
void ct_q80_gemm(ct_cpu_isa isa, int threads, float *acc, const int8_t *qx, const float *dx, const void *w, int M,
                 int N, int K);

/* Rows up to this many (decoding: the weights' bytes are what costs) take
 * the integer kernel; more rows (the encoder) widen the weights to f32 per
 * tile for sgemm, as fast as the AVX2 integer GEMM on Zen 1 and more
 * accurate (float activations; docs/PERFORMANCE.md, "Q8_0"). */
#define CT_Q80_INT_ROWS 4

/* y = residual + alpha·act(x·wᵀ + b) for a Q8_0 weight w (N,K), K % 32 == 0:
 * M ≤ CT_Q80_INT_ROWS the Q8_0 product (quant.h; activations quantised,
 * rows in chunks that fit the workspace), more rows the float product of
 * the dequantised weights (or the Q8_0 product when the workspace cannot
 * hold a 64-row f32 tile per thread). */
ct_status ct_cpu_matmul_q80(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                            const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws);

#endif
