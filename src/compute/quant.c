/* quant.c — making Q8 weights at load (per-row symmetric int8, with the NaN
 * check in the same pass over the source) and the per-row u8 activation
 * quantisation used by every int8 product. The products themselves live in
 * compute/ref (definition) and compute/cpu/cpu_int8.c (fast paths). */
#include "compute/quant.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "compute/backend.h"

size_t ct_q8_bytes(int64_t N, int64_t K) {
    return ct_q8_pad((size_t)N * (size_t)K) + ct_q8_pad(sizeof(float) * (size_t)N) + sizeof(int32_t) * (size_t)N;
}

/* Up to this many source elements are widened to f32 at a time (on the
 * stack), so a row is read from memory once and then from L1. */
enum { CHUNK = 1024 };

static void widen(float *dst, const unsigned char *src, ct_dtype t, int64_t n) {
    if (t == CT_DTYPE_F32) {
        memcpy(dst, src, sizeof(float) * (size_t)n);
    } else if (t == CT_DTYPE_BF16) {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = ct_bf16_to_f32(h);
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = ct_f16_to_f32(h);
        }
    }
}

int64_t ct_q8_quantize_row(int8_t *q, float *scale, int32_t *rowsum, const void *src, ct_dtype src_dtype, int64_t K) {
    const unsigned char *s = src;
    const size_t es = ct_dtype_size(src_dtype);
    float buf[CHUNK];
    float amax = 0.0f;
    int bad = 0;
    for (int64_t k0 = 0; k0 < K; k0 += CHUNK) { /* pass 1: max |w| and the finiteness check */
        const int64_t n = K - k0 < CHUNK ? K - k0 : CHUNK;
        widen(buf, s + (size_t)k0 * es, src_dtype, n);
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
        for (int64_t i = 0; i < n; i++) {
            float v = nearbyintf(buf[i] * inv); /* |v| ≤ 127 up to rounding of inv */
            v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
            q[k0 + i] = (int8_t)v;
            sum += (int32_t)v;
        }
    }
    *scale = sc;
    *rowsum = sum;
    return -1;
}

ct_status ct_tensor_quantize_q8(ct_backend *be, const void *src, ct_dtype src_dtype, int64_t N, int64_t K,
                                int64_t *bad_at, ct_tensor *out) {
    memset(out, 0, sizeof *out);
    if (bad_at) *bad_at = -1;
    if (be->ops->stream(be) != NULL)
        return ct_fail(CT_ERR_UNSUPPORTED, "int8 weights: backend %s computes on the host only", be->ops->name);
    if (src_dtype != CT_DTYPE_F32 && src_dtype != CT_DTYPE_BF16 && src_dtype != CT_DTYPE_F16)
        return ct_fail(CT_ERR_FORMAT, "int8 weights: source dtype %s is not a float type", ct_dtype_name(src_dtype));
    if (N <= 0 || K <= 0 || K > INT32_MAX / 2 / 255 / 127) /* Σ u·q − z·rowsum fits int32 */
        return ct_fail(CT_ERR_INVALID_ARG, "int8 weights: shape %lld x %lld", (long long)N, (long long)K);
    out->dtype = CT_DTYPE_Q8;
    out->ndim = 2;
    out->shape[0] = N, out->shape[1] = K;
    out->nbytes = ct_q8_bytes(N, K);
    CT_TRY(be->ops->alloc(be, out->nbytes, &out->data));
    out->owner = be;
    int8_t *q = out->data;
    float *sc = (float *)ct_q8_scales(out);
    int32_t *rs = (int32_t *)ct_q8_rowsums(out);
    const unsigned char *s = src;
    const size_t es = ct_dtype_size(src_dtype);
    int64_t first = -1;
    /* Rows are independent, so the result does not depend on the thread
     * count; each thread first touches the destination pages it fills. */
#pragma omp parallel for schedule(dynamic, 16) if (N * K > (1 << 16))
    for (int64_t n = 0; n < N; n++) {
        int64_t at = ct_q8_quantize_row(q + n * K, sc + n, rs + n, s + (size_t)(n * K) * es, src_dtype, K);
        if (at >= 0) {
            at += n * K;
#pragma omp critical(ct_quant_scan)
            if (first < 0 || at < first) first = at;
        }
    }
    if (bad_at) *bad_at = first;
    if (first >= 0) ct_tensor_release(out);
    return CT_OK;
}

void ct_q8_quantize_act(uint8_t *u, float *s, int32_t *z, const float *x, int M, int K) {
    for (int m = 0; m < M; m++) {
        const float *xr = x + (size_t)m * K;
        uint8_t *ur = u + (size_t)m * K;
        float mn = 0.0f, mx = 0.0f;
        int bad = 0;
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
        float zf = nearbyintf(-mn * inv);
        zf = zf > 255.0f ? 255.0f : zf;
        for (int k = 0; k < K; k++) {
            float v = xr[k] * inv + zf;
            v = v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v;
            ur[k] = (uint8_t)(v + 0.5f); /* v ≥ 0: truncation after +0.5 rounds half up */
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
