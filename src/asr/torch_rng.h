/* torch_rng.h — torch's CPU random generator, reproduced bit for bit.
 *
 * The reference frontend dithers each clip with `torch.randn(N)` drawn from a
 * CPU generator seeded with N. This module rebuilds that stream: the mt19937
 * engine of `manual_seed`, the 24-bit uniform floats, and the two ways torch
 * turns them into normals for a float32 tensor:
 *
 *  - N < 16: scalar Box-Muller in double (two 53-bit uniforms per pair, the
 *    sine half cached for the next element), each value rounded to float;
 *  - N >= 16: Box-Muller over blocks of 16 (u1 from element j, u2 from element
 *    j+8), the last partial block recomputed from 16 fresh uniforms over the
 *    final 16 elements. How the block is evaluated depends on the CPU
 *    capability torch dispatches to: AVX2 and AVX512 CPUs run the Cephes-style
 *    log/sincos of avx_mathfun.h with the exact FMA contractions torch 2.11's
 *    build has; "DEFAULT" CPUs call the C library's logf/cosf/sinf.
 *
 * Verified against torch 2.11.0 (tests/fixtures/mel/randn.json).
 */
#ifndef CT_ASR_TORCH_RNG_H
#define CT_ASR_TORCH_RNG_H

#include <stddef.h>
#include <stdint.h>

/* The mt19937 engine as torch's CPUGeneratorImpl holds it. */
typedef struct ct_mt19937 {
    uint32_t state[624];
    int next; /* index of the next word to temper; 624 = regenerate first */
} ct_mt19937;

/* torch.Generator.manual_seed(seed): only the low 32 bits seed mt19937. */
void ct_mt19937_seed(ct_mt19937 *mt, uint64_t seed);
uint32_t ct_mt19937_next(ct_mt19937 *mt);

/* Which of torch's float32 normal kernels to reproduce for N >= 16. */
typedef enum ct_randn_kind {
    CT_RANDN_TORCH_AVX2 = 0,   /* torch on an AVX2/AVX-512 CPU (the usual case) */
    CT_RANDN_TORCH_DEFAULT = 1 /* torch with ATEN_CPU_CAPABILITY=default */
} ct_randn_kind;

/* out[0..n) = torch.manual_seed(seed); torch.randn(n) (float32, CPU).
 * Uses AVX2+FMA when the CPU has them; the result is identical either way. */
void ct_torch_randn(uint64_t seed, size_t n, ct_randn_kind kind, float *out);

/* The same with only portable C (the reference the test compares against). */
void ct_torch_randn_scalar(uint64_t seed, size_t n, ct_randn_kind kind, float *out);

#endif
