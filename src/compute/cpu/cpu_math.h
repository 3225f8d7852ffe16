/* cpu_math.h — a branch-free expf the compiler can vectorise (SSE2 is
 * enough), for SiLU, sigmoid and softmax on the fast CPU paths. Cephes'
 * polynomial on [−ln2/2, ln2/2] after a round-to-nearest range reduction done
 * with the 1.5·2²³ trick; relative error about 2 ulp, inputs clamped to the
 * float range (below −87.3 gives ~1e-38 instead of a denormal or 0; above
 * 88.37, exp(88.37)). Total: −inf gives ~1e-38, +inf exp(88.37), and NaN
 * gives NaN (it passes the clamp, so the exponent is built with unsigned
 * arithmetic: no shift of a negative value whatever the bits). The
 * reference ops keep libm's expf. */
#ifndef CT_COMPUTE_CPU_MATH_H
#define CT_COMPUTE_CPU_MATH_H

#include <stdint.h>
#include <string.h>

#include "core/dtype.h"

static inline float ct_fast_expf(float x) {
    x = x < -87.3f ? -87.3f : x > 88.37f ? 88.37f : x; /* keeps 2^n finite */
    float t = x * 1.44269504088896341f + 12582912.0f; /* round(x·log2 e) in the low mantissa bits */
    float n = t - 12582912.0f;
    uint32_t ti;
    memcpy(&ti, &t, 4);
    uint32_t ni = ti - 0x4b400000u; /* the integer n (two's complement; garbage for NaN, which p carries) */
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float r2 = r * r;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r2 + r + 1.0f;
    uint32_t bits = (ni + 127u) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    return p * scale;
}

/* dst[i] = float(src[i]) for bf16 (top half of a float) or f16, src 2-byte
 * aligned (backend weight buffers are); written so the compiler vectorises it. */
static inline void ct_widen_half(float *restrict dst, const uint16_t *restrict src, size_t n, int is_bf16) {
    if (is_bf16) {
        uint32_t *restrict d = (uint32_t *)(void *)dst;
#pragma omp simd
        for (size_t i = 0; i < n; i++) d[i] = (uint32_t)src[i] << 16;
    } else {
        for (size_t i = 0; i < n; i++) dst[i] = ct_f16_to_f32(src[i]);
    }
}

static inline float ct_fast_silu(float x) { return x / (1.0f + ct_fast_expf(-x)); }
static inline float ct_fast_sigmoid(float x) { return 1.0f / (1.0f + ct_fast_expf(-x)); }

/* y = alpha·act(y + b) (+ r) over n floats; b, r may be NULL; act 0 none,
 * 1 ReLU, 2 SiLU. Out of line in cpu_elementwise.c: the SiLU runs on 16-lane
 * vectors (cpu_vec.h) with AVX2/AVX-512 clones, each lane equal to
 * ct_fast_silu, because the scalar ct_fast_expf loop does not vectorise
 * and this epilogue follows every encoder FF product. */
void ct_fast_bias_act(float *restrict y, const float *restrict b, const float *restrict r, float alpha, int act,
                      int n);

/* dst[i] = ct_f32_to_bf16(x[i]) bit for bit (round to nearest even, NaN
 * quieted, denormals kept), on 16-lane integer vectors with AVX2/AVX-512
 * clones. Out of line in cpu_elementwise.c: the scalar loop with its NaN
 * branch did not vectorise and was 5.8 % of the bf16 encoder's samples
 * (the activations' conversion before every oneDNN bf16 product).
 * vcvtneps2bf16 is not used: it flushes denormals to zero. */
void ct_fast_f32_to_bf16(uint16_t *restrict dst, const float *restrict x, size_t n);

/* The epilogue of a product y (M, N) = alpha·(x·Wᵀ) computed without it:
 * accumulate (y held a residual that the product added to): y += alpha·b;
 * else each row through ct_fast_bias_act with its residual row (r (M, N) or
 * NULL). Rows over OpenMP threads. */
void ct_fast_product_epilogue(float *y, const float *b, const float *r, float alpha, int act, int M, int N,
                              int accumulate);

#endif
