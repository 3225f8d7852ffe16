/* quant.c — making Q8 weights at load (per-row symmetric int8, with the NaN
 * check in the same pass over the source) and the per-row u8 activation
 * quantisation used by every int8 product. The products themselves live in
 * compute/ref (definition) and compute/cpu/cpu_int8.c (fast paths). */
#include "compute/quant.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "compute/backend.h"
#include "compute/cpu/cpu_features.h"
#include "compute/cpu/cpu_math.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

size_t ct_q8_bytes(int64_t N, int64_t K) {
    return ct_q8_pad((size_t)N * (size_t)K) + ct_q8_pad(sizeof(float) * (size_t)N) + sizeof(int32_t) * (size_t)N;
}

/* Up to this many source elements are widened to f32 at a time (on the
 * stack), so a row is read from memory once and then from L1. */
enum { CHUNK = 1024 };

/* round to nearest even for |v| < 2²²: adding and subtracting 1.5·2²³
 * leaves the rounded value (exact in IEEE single precision, default
 * rounding mode; -std=c17 keeps the compiler from folding it). Unlike
 * nearbyintf it vectorises without SSE4.1. */
static inline float round_even(float v) { return (v + 12582912.0f) - 12582912.0f; }

static void widen(float *dst, const unsigned char *src, ct_dtype t, int64_t n) {
    if (t == CT_DTYPE_F32) {
        memcpy(dst, src, sizeof(float) * (size_t)n);
    } else if (((uintptr_t)src & 1) == 0) { /* aligned halves (the usual case): a vector loop */
        ct_widen_half(dst, (const uint16_t *)(const void *)src, (size_t)n, t == CT_DTYPE_BF16);
    } else {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = t == CT_DTYPE_BF16 ? ct_bf16_to_f32(h) : ct_f16_to_f32(h);
        }
    }
}

int64_t ct_q8_quantize_row_ref(int8_t *q, float *scale, int32_t *rowsum, const void *src, ct_dtype src_dtype,
                               int64_t K) {
    const unsigned char *s = src;
    const size_t es = ct_dtype_size(src_dtype);
    float buf[CHUNK];
    float amax = 0.0f;
    int bad = 0;
    for (int64_t k0 = 0; k0 < K; k0 += CHUNK) { /* pass 1: max |w| and the finiteness check */
        const int64_t n = K - k0 < CHUNK ? K - k0 : CHUNK;
        widen(buf, s + (size_t)k0 * es, src_dtype, n);
#pragma omp simd reduction(max : amax) reduction(| : bad)
        for (int64_t i = 0; i < n; i++) {
            float a = fabsf(buf[i]);
            bad |= !(a <= FLT_MAX);
            amax = a > amax ? a : amax;
        }
    }
    if (bad) {
        for (int64_t k0 = 0; k0 < K; k0 += CHUNK) { /* rare: find the element for the message */
            const int64_t n = K - k0 < CHUNK ? K - k0 : CHUNK;
            widen(buf, s + (size_t)k0 * es, src_dtype, n);
            for (int64_t i = 0; i < n; i++)
                if (!(fabsf(buf[i]) <= FLT_MAX)) {
                    memset(q, 0, (size_t)K);
                    *scale = 0.0f, *rowsum = 0;
                    return k0 + i;
                }
        }
    }
    const float sc = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int64_t k0 = 0; k0 < K; k0 += CHUNK) { /* pass 2: round (the chunk is still in cache) */
        const int64_t n = K - k0 < CHUNK ? K - k0 : CHUNK;
        widen(buf, s + (size_t)k0 * es, src_dtype, n);
        int8_t *qc = q + k0;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < n; i++) {
            float v = round_even(buf[i] * inv); /* |v| ≤ 127 up to rounding of inv */
            v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
            qc[i] = (int8_t)v;
            sum += (int32_t)v;
        }
    }
    *scale = sc;
    *rowsum = sum;
    return -1;
}

#if defined(__x86_64__)
/* AVX-512 rows of f32 or bf16 (any alignment): two passes over the source
 * (max |w| with the finiteness test, then round), the row in L1 for the
 * second. The same operations as the reference in the same order (mul,
 * add and subtract the rounding constant, clamp, exact conversion), so the
 * same bits; a NaN/infinity leaves the row to the reference for the index. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512 load16(const unsigned char *p, int bf16,
                                                                        __mmask16 m) {
    if (!bf16) return _mm512_maskz_loadu_ps(m, p);
    __m256i h = _mm256_maskz_loadu_epi16(m, p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) static int64_t
row_avx512(int8_t *q, float *scale, int32_t *rowsum, const void *src, ct_dtype src_dtype, int64_t K) {
    const unsigned char *s = src;
    const int bf16 = src_dtype == CT_DTYPE_BF16;
    const size_t es = bf16 ? 2 : 4;
    __m512 vmax = _mm512_setzero_ps();
    const __m512 lim = _mm512_set1_ps(FLT_MAX);
    __mmask16 bad = 0;
    for (int64_t k = 0; k < K; k += 16) {
        const __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1);
        __m512 a = _mm512_abs_ps(load16(s + (size_t)k * es, bf16, m));
        bad |= _mm512_mask_cmp_ps_mask(m, a, lim, _CMP_NLE_UQ); /* > FLT_MAX or NaN */
        vmax = _mm512_max_ps(vmax, a);
    }
    if (bad) return ct_q8_quantize_row_ref(q, scale, rowsum, src, src_dtype, K);
    const float amax = _mm512_reduce_max_ps(vmax);
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    const __m512 vinv = _mm512_set1_ps(inv), magic = _mm512_set1_ps(12582912.0f);
    const __m512 hi = _mm512_set1_ps(127.0f), lo = _mm512_set1_ps(-127.0f);
    __m512i vsum = _mm512_setzero_si512();
    for (int64_t k = 0; k < K; k += 16) {
        const __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1);
        __m512 v = _mm512_mul_ps(load16(s + (size_t)k * es, bf16, m), vinv);
        v = _mm512_sub_ps(_mm512_add_ps(v, magic), magic);
        v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
        __m512i iv = _mm512_maskz_cvtps_epi32(m, v);
        vsum = _mm512_add_epi32(vsum, iv);
        _mm_mask_storeu_epi8(q + k, m, _mm512_cvtepi32_epi8(iv));
    }
    *scale = amax / 127.0f;
    *rowsum = _mm512_reduce_add_epi32(vsum);
    return -1;
}
#endif

int64_t ct_q8_quantize_row(int8_t *q, float *scale, int32_t *rowsum, const void *src, ct_dtype src_dtype, int64_t K) {
#if defined(__x86_64__)
    if ((src_dtype == CT_DTYPE_BF16 || src_dtype == CT_DTYPE_F32) && ct_cpu_features_get()->avx512)
        return row_avx512(q, scale, rowsum, src, src_dtype, K);
#endif
    return ct_q8_quantize_row_ref(q, scale, rowsum, src, src_dtype, K);
}

/* Both quantisers' row loop: row(ctx, n) quantises row n and returns the
 * index of its first non-finite value within the row, or −1. Rows are
 * independent, so the result does not depend on the thread count; each
 * thread first touches the destination pages it fills. Returns the first
 * non-finite element (n·K + index) over the tensor, or −1. */
typedef int64_t (*quant_row_fn)(void *ctx, int64_t n);
static int64_t quantize_rows(int64_t N, int64_t K, quant_row_fn row, void *ctx) {
    int64_t first = -1;
#pragma omp parallel for schedule(dynamic, 16) if (N * K > (1 << 16))
    for (int64_t n = 0; n < N; n++) {
        int64_t at = row(ctx, n);
        if (at >= 0) {
            at += n * K;
#pragma omp critical(ct_quant_scan)
            if (first < 0 || at < first) first = at;
        }
    }
    return first;
}

/* The checks both quantisers make before allocating: host backend, float source. */
static ct_status quant_source_ok(const ct_backend *be, ct_dtype src_dtype, const char *what) {
    if (be->ops->stream((ct_backend *)be) != NULL)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s weights: backend %s computes on the host only", what, be->ops->name);
    if (src_dtype != CT_DTYPE_F32 && src_dtype != CT_DTYPE_BF16 && src_dtype != CT_DTYPE_F16)
        return ct_fail(CT_ERR_FORMAT, "%s weights: source dtype %s is not a float type", what, ct_dtype_name(src_dtype));
    return CT_OK;
}

typedef struct {
    int8_t *q;
    float *sc;
    int32_t *rs;
    const unsigned char *s;
    size_t es;
    ct_dtype dt;
    int64_t K;
} q8_rows;

static int64_t q8_row(void *ctx, int64_t n) {
    const q8_rows *c = ctx;
    return ct_q8_quantize_row(c->q + n * c->K, c->sc + n, c->rs + n, c->s + (size_t)(n * c->K) * c->es, c->dt, c->K);
}

ct_status ct_tensor_quantize_q8(ct_backend *be, const void *src, ct_dtype src_dtype, int64_t N, int64_t K,
                                int64_t *bad_at, ct_tensor *out) {
    memset(out, 0, sizeof *out);
    if (bad_at) *bad_at = -1;
    CT_TRY(quant_source_ok(be, src_dtype, "int8"));
    if (N <= 0 || K <= 0 || K > INT32_MAX / 2 / 255 / 127) /* Σ u·q − z·rowsum fits int32 */
        return ct_fail(CT_ERR_INVALID_ARG, "int8 weights: shape %lld x %lld", (long long)N, (long long)K);
    out->dtype = CT_DTYPE_Q8;
    out->ndim = 2;
    out->shape[0] = N, out->shape[1] = K;
    out->nbytes = ct_q8_bytes(N, K);
    CT_TRY(be->ops->alloc(be, out->nbytes, &out->data));
    out->owner = be;
    q8_rows c = {out->data, (float *)ct_q8_scales(out), (int32_t *)ct_q8_rowsums(out), src, ct_dtype_size(src_dtype),
                 src_dtype, K};
    const int64_t first = quantize_rows(N, K, q8_row, &c);
    if (bad_at) *bad_at = first;
    if (first >= 0) ct_tensor_release(out);
    return CT_OK;
}

/* Cloned for AVX-512 and AVX2 (chosen at load by the CPU): the same
 * operations (no FMA contraction under -std=c17, min/max exact in any
 * order) at a wider vector, so every clone gives the same bits. The
 * AVX-512 clone is x86-64-v4 (F + BW + VL...), not plain avx512f: GCC 12
 * narrows int32 lanes to bytes only with AVX512BW, and without it the
 * store loop stayed scalar. */
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void ct_q8_quantize_act(uint8_t *u, float *s,
                                                                                             int32_t *z,
                                                                                             const float *x, int M,
                                                                                             int K) {
    for (int m = 0; m < M; m++) {
        const float *xr = x + (size_t)m * K;
        uint8_t *ur = u + (size_t)m * K;
        float mn = 0.0f, mx = 0.0f;
        int bad = 0;
        /* omp simd: min, max and | are exact in any order, so the vector
         * loops give the scalar loops' bits */
#pragma omp simd reduction(min : mn) reduction(max : mx) reduction(| : bad)
        for (int k = 0; k < K; k++) {
            float v = xr[k];
            bad |= !(fabsf(v) <= FLT_MAX);
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        if (bad || mx - mn == 0.0f) { /* NaN/inf row: NaN out; all-zero row: exact zeros */
            memset(ur, 0, (size_t)K);
            s[m] = bad ? NAN : 1.0f;
            z[m] = 0;
            continue;
        }
        const float sc = (mx - mn) / 255.0f, inv = 255.0f / (mx - mn);
        float zf = round_even(-mn * inv); /* ≤ 255 */
        zf = zf > 255.0f ? 255.0f : zf;
#pragma omp simd
        for (int k = 0; k < K; k++) {
            float v = xr[k] * inv + zf;
            v = v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v;
            /* v ≥ 0: truncation after +0.5 rounds half up. Through int32: a
             * float → uint8 conversion stops GCC vectorising the loop (it ran
             * scalar, with branches, ~10 % of the int8 op on AMX), and for
             * v + 0.5 in [0.5, 255.5] both conversions give the same byte. */
            ur[k] = (uint8_t)(int32_t)(v + 0.5f);
        }
        s[m] = sc;
        z[m] = (int32_t)zf;
    }
}

void ct_q8_dequantize_row(float *dst, const ct_tensor *w, int64_t n) {
    const int64_t K = ct_tensor_numel(w) / ct_q8_rows(w);
    const int8_t *q = ct_q8_values(w) + n * K;
    const float sc = ct_q8_scales(w)[n];
    for (int64_t k = 0; k < K; k++) dst[k] = sc * (float)q[k];
}

/* ---- Q8_0 --------------------------------------------------------------- */

static inline void put_block(unsigned char *blk, float d, const int8_t *q) {
    const uint16_t h = ct_f32_to_f16(d);
    memcpy(blk, &h, 2);
    memcpy(blk + 2, q, CT_Q8_0_BLOCK);
}

int64_t ct_q80_quantize_row(void *dst, const void *src, ct_dtype src_dtype, int64_t K) {
    const unsigned char *s = src;
    unsigned char *o = dst;
    const size_t es = ct_dtype_size(src_dtype);
    float buf[CT_Q8_0_BLOCK];
    int8_t q[CT_Q8_0_BLOCK];
    for (int64_t k0 = 0; k0 < K; k0 += CT_Q8_0_BLOCK) {
        widen(buf, s + (size_t)k0 * es, src_dtype, CT_Q8_0_BLOCK);
        float amax = 0.0f;
        for (int i = 0; i < CT_Q8_0_BLOCK; i++) {
            const float a = fabsf(buf[i]);
            if (!(a <= FLT_MAX)) {
                memset(dst, 0, CT_Q80_ROW_BYTES(K));
                return k0 + i;
            }
            amax = a > amax ? a : amax;
        }
        /* ggml's quantize_row_q8_0_ref: the f32 scale rounds q, the f16
         * copy of it is stored */
        const float d = amax / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        if (!(id <= FLT_MAX)) id = 0.0f; /* a block below ~1e-36: stored as zeros */
        for (int i = 0; i < CT_Q8_0_BLOCK; i++) {
            float v = roundf(buf[i] * id);
            v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
            q[i] = (int8_t)v;
        }
        put_block(o + (size_t)(k0 / CT_Q8_0_BLOCK) * CT_Q8_0_BLOCK_BYTES, d, q);
    }
    return -1;
}

typedef struct {
    unsigned char *o;
    const unsigned char *s;
    size_t es, rb;
    ct_dtype dt;
    int64_t K;
} q80_rows;

static int64_t q80_row(void *ctx, int64_t n) {
    const q80_rows *c = ctx;
    return ct_q80_quantize_row(c->o + (size_t)n * c->rb, c->s + (size_t)(n * c->K) * c->es, c->dt, c->K);
}

ct_status ct_tensor_quantize_q80(ct_backend *be, const void *src, ct_dtype src_dtype, int64_t N, int64_t K,
                                 int64_t *bad_at, ct_tensor *out) {
    memset(out, 0, sizeof *out);
    if (bad_at) *bad_at = -1;
    CT_TRY(quant_source_ok(be, src_dtype, "Q8_0"));
    if (N <= 0 || K <= 0 || K % CT_Q8_0_BLOCK || K > INT32_MAX / 2)
        return ct_fail(CT_ERR_INVALID_ARG, "Q8_0 weights: shape %lld x %lld (rows must be a multiple of 32 long)",
                       (long long)N, (long long)K);
    out->dtype = CT_DTYPE_Q8_0;
    out->ndim = 2;
    out->shape[0] = N, out->shape[1] = K;
    out->nbytes = (size_t)N * CT_Q80_ROW_BYTES(K);
    CT_TRY(be->ops->alloc(be, out->nbytes, &out->data));
    out->owner = be;
    q80_rows c = {out->data, src, ct_dtype_size(src_dtype), CT_Q80_ROW_BYTES(K), src_dtype, K};
    const int64_t first = quantize_rows(N, K, q80_row, &c);
    if (bad_at) *bad_at = first;
    if (first >= 0) ct_tensor_release(out);
    return CT_OK;
}

/* Cloned for AVX-512 and AVX2 like ct_q8_quantize_act: the same operations
 * (max and | exact in any order, no contraction) at every width. */
__attribute__((target_clones("avx512f", "avx2", "default"))) void ct_q80_quantize_act(int8_t *qx, float *dx,
                                                                                       const float *x, int M, int K) {
    const int nb = K / CT_Q8_0_BLOCK;
    for (int m = 0; m < M; m++)
        for (int b = 0; b < nb; b++) {
            const float *xb = x + (size_t)m * K + (size_t)b * CT_Q8_0_BLOCK;
            int8_t *qb = qx + (size_t)m * K + (size_t)b * CT_Q8_0_BLOCK;
            float amax = 0.0f;
            int bad = 0;
#pragma omp simd reduction(max : amax) reduction(| : bad)
            for (int i = 0; i < CT_Q8_0_BLOCK; i++) {
                const float a = fabsf(xb[i]);
                bad |= !(a <= FLT_MAX);
                amax = a > amax ? a : amax;
            }
            /* NaN/inf: NaN out; all zero (or below 127/FLT_MAX, where 127/amax
             * overflows): exact zeros */
            if (bad || !(127.0f / amax <= FLT_MAX)) {
                memset(qb, 0, CT_Q8_0_BLOCK);
                dx[(size_t)m * nb + b] = bad ? NAN : 0.0f;
                continue;
            }
            const float inv = 127.0f / amax;
#pragma omp simd
            for (int i = 0; i < CT_Q8_0_BLOCK; i++) {
                float v = round_even(xb[i] * inv);
                v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
                qb[i] = (int8_t)v;
            }
            dx[(size_t)m * nb + b] = amax / 127.0f;
        }
}

static inline float block_scale(const unsigned char *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return ct_f16_to_f32(h);
}

void ct_q80_dequantize_row(float *dst, const void *row, int64_t K) {
    const unsigned char *r = row;
    for (int64_t b = 0; b < K / CT_Q8_0_BLOCK; b++) {
        const unsigned char *blk = r + (size_t)b * CT_Q8_0_BLOCK_BYTES;
        const float d = block_scale(blk);
        const int8_t *q = (const int8_t *)(blk + 2);
        for (int i = 0; i < CT_Q8_0_BLOCK; i++) dst[b * CT_Q8_0_BLOCK + i] = d * (float)q[i];
    }
}

int64_t ct_q80_first_non_finite(const void *src, size_t n) {
    const unsigned char *p = src;
    for (size_t b = 0; b < n / CT_Q8_0_BLOCK; b++) {
        uint16_t h;
        memcpy(&h, p + b * CT_Q8_0_BLOCK_BYTES, 2);
        if ((h & 0x7c00u) == 0x7c00u) return (int64_t)(b * CT_Q8_0_BLOCK);
    }
    return -1;
}

void ct_q80_gemm_ref(float *acc, const int8_t *qx, const float *dx, const void *w, int M, int N, int K) {
    const int nb = K / CT_Q8_0_BLOCK;
    const size_t rb = CT_Q80_ROW_BYTES(K);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const unsigned char *wr = (const unsigned char *)w + (size_t)n * rb;
            float sum = 0.0f;
            for (int b = 0; b < nb; b++) {
                const unsigned char *blk = wr + (size_t)b * CT_Q8_0_BLOCK_BYTES;
                const int8_t *qw = (const int8_t *)(blk + 2), *qa = qx + (size_t)m * K + (size_t)b * CT_Q8_0_BLOCK;
                int32_t dot = 0;
                for (int i = 0; i < CT_Q8_0_BLOCK; i++) dot += (int32_t)qw[i] * (int32_t)qa[i];
                const float s = block_scale(blk) * dx[(size_t)m * nb + b];
                sum += s * (float)dot;
            }
            acc[(size_t)m * N + n] = sum;
        }
}
