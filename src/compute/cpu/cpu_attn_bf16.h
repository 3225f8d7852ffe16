/* cpu_attn_bf16.h — attn_full with bf16 products on AVX512-BF16
 * (cpu_attn_bf16.c), called by cpu_wav2vec2.c for prod BF16. */
#ifndef CT_COMPUTE_CPU_ATTN_BF16_H
#define CT_COMPUTE_CPU_ATTN_BF16_H

#include "core/error.h"

#define CT_ATTN_BF16_MAX_DH 256

/* softmax of one row of n scores times scale, in place (cpu_wav2vec2.c's) */
typedef void (*ct_attn_softmax_fn)(float *x, int n, float scale);

/* 1 when this CPU runs the kernel for head size Dh (a multiple of 16, ≤ 256). */
int ct_attn_bf16_supported(int Dh);

/* out, q, k, v (B,T,H·Dh) float32; q, k, v and the probabilities rounded to
 * bf16 (nearest even), float32 scores, softmax and sums. Threads: the
 * calling thread's OpenMP team. */
ct_status ct_attn_bf16(float *out, const float *q, const float *k, const float *v, int B, int T, int H, int Dh,
                       ct_attn_softmax_fn softmax);

#endif
