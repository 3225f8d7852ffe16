/* cpu_gemv.h — matrix products with 1 to 4 activation rows (decoding), the
 * memory-bound case: every weight byte is read from memory once per call for
 * all the rows, widened from bf16/f16 in registers (no widened copy), with the
 * bias, activation, scale and residual applied as each output is stored.
 *
 * Same contract as the backend's matmul (compute/backend.h):
 *   y[m][n] = residual[m][n] + alpha · act(x[m] · w[n] + b[n]),
 * y (M,N), x (M,K), w (N,K) f32/bf16/f16, b (N) or NULL, residual (M,N) or
 * NULL and may equal y. Its reference is the plain loop ct_ref_matmul
 * (compute/ref); tests/unit/test_gemv.c compares every level against it.
 * Sums are float32 in an order that depends on the level (vector lanes), not
 * on the thread count: threads take contiguous chunks of output features,
 * each feature is one thread's dot product. */
#ifndef CT_COMPUTE_CPU_GEMV_H
#define CT_COMPUTE_CPU_GEMV_H

#include "compute/backend.h"
#include "compute/cpu/cpu_isa.h"

#define CT_GEMV_MAX_M 4 /* rows handled; more go to the blocked sgemm path */

/* The product above on `threads` OpenMP threads (≤ 1: the calling thread
 * only; small products stay on the calling thread whatever the count) with
 * the kernels of level `isa`, which must not exceed ct_cpu_isa_best().
 * Fails for M outside 1..CT_GEMV_MAX_M, a weight dtype other than
 * f32/bf16/f16 or an element count other than N·K. */
ct_status ct_gemv(ct_cpu_isa isa, int threads, float *y, const float *x, const ct_tensor *w, const float *b,
                  const float *residual, float alpha, ct_act act, int M, int N, int K);

#endif
