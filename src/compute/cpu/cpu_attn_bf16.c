/* cpu_attn_bf16.c — the aligner's attention (attn_full, prod BF16) with
 * AVX512-BF16 dot products (vdpbf16ps: pairs of bf16 products summed into
 * float32 lanes), for CPUs that have them.
 *
 * Why a kernel of its own: the two products per (row, head, query block)
 * are small (64 queries × 1 699 keys × 64), and oneDNN's calls are
 * serialised per backend and threaded inside, so each one is a fork/join of
 * the OpenMP team: thousands per forward pass, which under a loaded machine
 * cost more than the products (a partner thread descheduled stalls every
 * join). Here one parallel region runs whole blocks per thread, as the
 * float32 path does with single-threaded sgemm.
 *
 * Layouts (per row b and head h, keys and queries padded to a multiple of
 * 64 with zeros): q as bf16 rows (Tp, Dh); k as 16-key tiles of Dh/2 pairs,
 * kp[((j/16)·Dh/2 + d/2)·32 + (j%16)·2 + d%2] = k[j][d]; v as key pairs,
 * vp[((j/2)·Dh/16 + d/16)·32 + (d%16)·2 + j%2] = v[j][d]. Scores are
 * float32, softmax (with the 1/√Dh scale) is the float32 one of
 * cpu_wav2vec2.c, the probabilities are rounded to bf16 (zero past T) for
 * p·v. The reference (ref_wav2vec2.c) rounds the same values. */
#include "compute/cpu/cpu_attn_bf16.h"

#include "core/dtype.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define ROWS 64 /* query rows per task: scores 64 × Tp floats stay in L2 */
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

/* s (4 rows × Tp) = q (4 rows, Dh bf16) · kpᵀ, 4 tiles of 16 keys at a time. */
BF16_TARGET static void scores4(float *s, const uint16_t *q, const uint16_t *kp, int Tp, int Dh) {
    const int D2 = Dh / 2;
    const uint32_t *q32 = (const uint32_t *)(const void *)q; /* (d, d+1) pairs */
    for (int jb = 0; jb < Tp / 16; jb += 4) {
        __m512 acc[4][4];
        #pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            #pragma GCC unroll 4
            for (int c = 0; c < 4; c++) acc[r][c] = _mm512_setzero_ps();
        for (int d2 = 0; d2 < D2; d2++) {
            __m512i kv[4];
            #pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                kv[c] = _mm512_loadu_si512((const void *)(kp + ((size_t)(jb + c) * D2 + d2) * 32));
            #pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                const __m512i qv = _mm512_set1_epi32((int)q32[(size_t)r * D2 + d2]);
                #pragma GCC unroll 4
                for (int c = 0; c < 4; c++) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], (__m512bh)qv, (__m512bh)kv[c]);
            }
        }
        #pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            #pragma GCC unroll 4
            for (int c = 0; c < 4; c++) _mm512_storeu_ps(s + (size_t)r * Tp + (size_t)(jb + c) * 16, acc[r][c]);
    }
}

/* o (4 rows × Dh, row stride ld) = p (4 rows × Tp bf16) · v, 4 lanes-of-16 of d at a time. */
BF16_TARGET static void pv4(float *o, size_t ld, const uint16_t *p, const uint16_t *vp, int Tp, int Dh) {
    const int DB = Dh / 16;
    const uint32_t *p32 = (const uint32_t *)(const void *)p; /* (j, j+1) pairs */
    const int T2 = Tp / 2;
    for (int db = 0; db < DB; db += 4) {
        const int nc = DB - db < 4 ? DB - db : 4;
        __m512 acc[4][4];
        #pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            #pragma GCC unroll 4
            for (int c = 0; c < 4; c++) acc[r][c] = _mm512_setzero_ps();
        for (int j2 = 0; j2 < T2; j2++) {
            __m512i vv[4];
            #pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                vv[c] = c < nc ? _mm512_loadu_si512((const void *)(vp + ((size_t)j2 * DB + db + c) * 32))
                               : _mm512_setzero_si512();
            #pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                const __m512i pv = _mm512_set1_epi32((int)p32[(size_t)r * T2 + j2]);
                #pragma GCC unroll 4
                for (int c = 0; c < 4; c++) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], (__m512bh)pv, (__m512bh)vv[c]);
            }
        }
        #pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            #pragma GCC unroll 4
            for (int c = 0; c < nc; c++) _mm512_storeu_ps(o + (size_t)r * ld + (size_t)(db + c) * 16, acc[r][c]);
    }
}

/* d[0..n) = bf16(x[0..n)), round to nearest even (vcvtneps2bf16; the
 * probabilities are finite; a denormal becomes zero, 1e-38 below a
 * probability that matters). */
BF16_TARGET static void to_bf16(uint16_t *d, const float *x, int n) {
    int j = 0;
    for (; j + 16 <= n; j += 16)
        _mm256_storeu_si256((__m256i *)(void *)(d + j), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + j)));
    for (; j < n; j++) d[j] = ct_f32_to_bf16(x[j]);
}

int ct_attn_bf16_supported(int Dh) {
    return Dh > 0 && Dh % 16 == 0 && Dh <= CT_ATTN_BF16_MAX_DH && __builtin_cpu_supports("avx512bf16");
}

ct_status ct_attn_bf16(float *out, const float *q, const float *k, const float *v, int B, int T, int H, int Dh,
                       ct_attn_softmax_fn softmax) {
    const int D = H * Dh, Tp = (T + ROWS - 1) / ROWS * ROWS, DB = Dh / 16, D2 = Dh / 2;
    const size_t per_head = (size_t)Tp * Dh;
    /* packed q, k, v of every head of one row; per thread: scores + probabilities */
    uint16_t *pk = malloc(sizeof(uint16_t) * 3 * per_head * H);
    const int nthr = omp_get_max_threads();
    float *scratch = malloc((sizeof(float) + sizeof(uint16_t)) * (size_t)nthr * ROWS * Tp);
    if (!pk || !scratch) {
        free(pk);
        free(scratch);
        return ct_fail(CT_ERR_OOM, "attn_full: bf16 blocks of %d heads x %d keys", H, T);
    }
    const int nblk = Tp / ROWS;
    for (int b = 0; b < B; b++) {
        const float *qb = q + (size_t)b * T * D, *kb = k + (size_t)b * T * D, *vb = v + (size_t)b * T * D;
#pragma omp parallel for schedule(static) num_threads(nthr)
        for (int hj = 0; hj < H * (Tp / 2); hj++) { /* two key/query rows per item: v's pairs */
            const int h = hj / (Tp / 2), j0 = 2 * (hj % (Tp / 2));
            uint16_t *qh = pk + (size_t)h * 3 * per_head, *kh = qh + per_head, *vh = kh + per_head;
            for (int j = j0; j < j0 + 2; j++) {
                const int in = j < T;
                const float *qr = qb + (size_t)j * D + (size_t)h * Dh, *kr = kb + (size_t)j * D + (size_t)h * Dh;
                const float *vr = vb + (size_t)j * D + (size_t)h * Dh;
                for (int d = 0; d < Dh; d++) {
                    qh[(size_t)j * Dh + d] = in ? ct_f32_to_bf16(qr[d]) : 0;
                    kh[((size_t)(j / 16) * D2 + d / 2) * 32 + (size_t)(j % 16) * 2 + d % 2] =
                        in ? ct_f32_to_bf16(kr[d]) : 0;
                    vh[((size_t)(j / 2) * DB + d / 16) * 32 + (size_t)(d % 16) * 2 + j % 2] =
                        in ? ct_f32_to_bf16(vr[d]) : 0;
                }
            }
        }
        const float scale = 1.0f / sqrtf((float)Dh);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthr)
        for (int task = 0; task < H * nblk; task++) {
            const int h = task / nblk, i0 = (task % nblk) * ROWS, n = T - i0 < ROWS ? T - i0 : ROWS;
            const uint16_t *qh = pk + (size_t)h * 3 * per_head, *kh = qh + per_head, *vh = kh + per_head;
            float *s = scratch + (size_t)omp_get_thread_num() * ROWS * Tp;
            uint16_t *p = (uint16_t *)(void *)(scratch + (size_t)nthr * ROWS * Tp) +
                          (size_t)omp_get_thread_num() * ROWS * Tp;
            for (int r = 0; r < ROWS; r += 4)
                scores4(s + (size_t)r * Tp, qh + (size_t)(i0 + r) * Dh, kh, Tp, Dh);
            for (int r = 0; r < ROWS; r++) {
                float *sr = s + (size_t)r * Tp;
                uint16_t *pr = p + (size_t)r * Tp;
                softmax(sr, T, scale);
                to_bf16(pr, sr, T);
                memset(pr + T, 0, sizeof(uint16_t) * (size_t)(Tp - T));
            }
            /* the block's real rows into out (the padded query rows are never stored) */
            float *ob = out + (size_t)b * T * D + (size_t)i0 * D + (size_t)h * Dh;
            for (int r = 0; r < ROWS; r += 4) {
                if (r + 4 <= n) {
                    pv4(ob + (size_t)r * D, (size_t)D, p + (size_t)r * Tp, vh, Tp, Dh);
                } else if (r < n) { /* the last real rows of T: through a 4-row buffer */
                    float tmp[4 * CT_ATTN_BF16_MAX_DH];
                    pv4(tmp, (size_t)Dh, p + (size_t)r * Tp, vh, Tp, Dh);
                    for (int rr = r; rr < n; rr++)
                        memcpy(ob + (size_t)rr * D, tmp + (size_t)(rr - r) * Dh, sizeof(float) * (size_t)Dh);
                }
            }
        }
    }
    free(pk);
    free(scratch);
    return CT_OK;
}

#else /* no AVX512-BF16 code in this build */

int ct_attn_bf16_supported(int Dh) {
    (void)Dh;
    return 0;
}

ct_status ct_attn_bf16(float *out, const float *q, const float *k, const float *v, int B, int T, int H, int Dh,
                       ct_attn_softmax_fn softmax) {
    (void)out, (void)q, (void)k, (void)v, (void)B, (void)T, (void)H, (void)Dh, (void)softmax;
    return ct_fail(CT_ERR_UNSUPPORTED, "attn_full: no AVX512-BF16 kernel in this build");
}
#endif
