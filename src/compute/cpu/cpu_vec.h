/* cpu_vec.h — 16-lane float vectors (GCC/Clang vector extensions) and the
 * vector exp that the CPU fast paths share: the wav2vec2 ops' GELU and
 * softmax (cpu_wav2vec2.c), the encoder's rel-pos softmax (cpu_attention.c)
 * and the dense layers' SiLU epilogue (cpu_elementwise.c).
 *
 * Why: the scalar loops over ct_fast_expf / libm's erff do not vectorise in this
 * build (the inlined bit casts defeat the vectoriser under omp simd), and the
 * attention's T×T exponentials per head and the 280 M GELUs of a 34 s window
 * were a third of the forward pass. 16 lanes: on the generic x86-64 build the
 * compiler lowers them to four SSE2 operations each; the target_clones below
 * add AVX2 and AVX-512 versions picked at load time (glibc ifunc). No clone
 * contracts a·b + c into an FMA (ISO C mode: -ffp-contract=off), so they all
 * compute the same values. */
#ifndef CT_COMPUTE_CPU_VEC_H
#define CT_COMPUTE_CPU_VEC_H

#include <stddef.h>
#include <stdint.h>

#define CT_V 16
typedef float vf __attribute__((vector_size(CT_V * 4)));
typedef int32_t vi __attribute__((vector_size(CT_V * 4)));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define CT_VCLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CT_VCLONES
#endif
/* Macros and pointer arguments, not vectors by value: a 64-byte vector
 * passed by value is an ABI question GCC warns about (-Wpsabi) even when
 * every call is inlined. */
#define V_SELECT(m, a, b) ((vf)(((m) & (vi)(a)) | (~(m) & (vi)(b))))
#define V_SPLAT(x) ((vf){0} + (x))

/* ct_fast_expf (cpu_math.h) lane by lane, in place: Cephes' polynomial after
 * the 1.5·2²³ round-to-nearest range reduction, inputs clamped to
 * [−87.3, 88.37]; the same operations, so each lane equals ct_fast_expf. */
static inline void v_exp(vf *v) {
    const vf lo = V_SPLAT(-87.3f), hi = V_SPLAT(88.37f);
    vf x = *v;
    x = V_SELECT(x < lo, lo, x);
    x = V_SELECT(x > hi, hi, x);
    vf t = x * 1.44269504088896341f + 12582912.0f;
    vf n = t - 12582912.0f;
    vi ni = (vi)t - 0x4b400000;
    vf r = x - n * 0.693359375f + n * 2.12194440e-4f;
    vf r2 = r * r;
    vf p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r2 + r + 1.0f;
    *v = p * (vf)((ni + 127) << 23);
}

/* The end of a softmax row, in place: x[j] = exp((x[j] − mx)·scale) / Σ_k
 * over n keys, mx the row's maximum. 16 partial sums, then the lanes and
 * the tail in order: the encoder's rel-pos attention (scale 1: its scores
 * are scaled before the maximum) and the aligner's attention share it.
 * Inlined into each caller's target clone. */
static inline __attribute__((always_inline)) void v_exp_normalise(float *x, int n, float mx, float scale) {
    const int nv = n / CT_V * CT_V;
    vf v, acc = V_SPLAT(0.0f);
    for (int j = 0; j < nv; j += CT_V) {
        __builtin_memcpy(&v, x + j, sizeof v);
        v = (v - mx) * scale;
        v_exp(&v);
        __builtin_memcpy(x + j, &v, sizeof v);
        acc += v;
    }
    float sum = 0.0f;
    for (int l = 0; l < CT_V; l++) sum += acc[l];
    if (nv < n) {
        v = V_SPLAT(0.0f);
        __builtin_memcpy(&v, x + nv, (size_t)(n - nv) * sizeof *x);
        v = (v - mx) * scale;
        v_exp(&v);
        for (int j = nv; j < n; j++) sum += (x[j] = v[j - nv]);
    }
    const float inv = 1.0f / sum;
    for (int j = 0; j < nv; j += CT_V) {
        __builtin_memcpy(&v, x + j, sizeof v);
        v *= inv;
        __builtin_memcpy(x + j, &v, sizeof v);
    }
    for (int j = nv; j < n; j++) x[j] *= inv;
}


#endif
