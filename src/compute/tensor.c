/* tensor.c — allocation, upload with dtype conversion (parallel, with the
 * NaN/Inf scan in the same pass), views of host data in place, release. */
#include "compute/tensor.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compute/backend.h"
#include "compute/cpu/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

int64_t ct_tensor_numel(const ct_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static ct_status describe(ct_dtype dtype, int ndim, const int64_t *shape, ct_tensor *out) {
    memset(out, 0, sizeof *out);
    if (ndim < 0 || ndim > CT_TENSOR_MAX_DIMS) return ct_fail(CT_ERR_INVALID_ARG, "tensor: %d dimensions", ndim);
    if (ct_dtype_size(dtype) == 0) return ct_fail(CT_ERR_INVALID_ARG, "tensor: bad dtype %d", (int)dtype);
    out->dtype = dtype;
    out->ndim = ndim;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && n > SIZE_MAX / 16 / (size_t)shape[i]))
            return ct_fail(CT_ERR_INVALID_ARG, "tensor: bad dimension %lld", (long long)shape[i]);
        out->shape[i] = shape[i];
        n *= (size_t)shape[i];
    }
    out->nbytes = n * ct_dtype_size(dtype);
    return CT_OK;
}

ct_status ct_tensor_alloc(ct_backend *be, ct_dtype dtype, int ndim, const int64_t *shape, ct_tensor *out) {
    CT_TRY(describe(dtype, ndim, shape, out));
    if (out->nbytes == 0) return CT_OK;
    CT_TRY(be->ops->alloc(be, out->nbytes, &out->data));
    out->owner = be;
    return CT_OK;
}

#if defined(__x86_64__)
/* bf16 → f32 is the upper half of the f32: 16 elements per step, unaligned
 * loads (the checkpoint's offsets are only 2-aligned). The scalar loop's
 * per-element memcpy does not vectorise, and it was the largest user-time
 * cost of an fp32 load from a bf16 checkpoint (8 GB written;
 * docs/PERFORMANCE.md, "Start-up on Sapphire Rapids"). Exact, as the
 * scalar loop. */
__attribute__((target("avx512f"))) static size_t bf16_to_f32_avx512(float *dst, const unsigned char *h, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(h + 2 * i));
        _mm512_storeu_si512((void *)(dst + i), _mm512_slli_epi32(_mm512_cvtepu16_epi32(x), 16));
    }
    return i;
}
__attribute__((target("avx2"))) static size_t bf16_to_f32_avx2(float *dst, const unsigned char *h, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(h + 2 * i));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(x), 16));
    }
    return i;
}
#endif

ct_status ct_convert_to_f32(float *dst, const void *src, ct_dtype src_dtype, size_t n) {
    /* src may be unaligned (mmapped safetensors): load halves with memcpy */
    const unsigned char *h = src;
    uint16_t v;
    switch (src_dtype) {
    case CT_DTYPE_F32: memcpy(dst, src, n * 4); return CT_OK;
    case CT_DTYPE_BF16: {
        size_t i = 0;
#if defined(__x86_64__)
        const ct_cpu_features *cf = ct_cpu_features_get();
        if (cf->avx512) i = bf16_to_f32_avx512(dst, h, n);
        else if (cf->avx2) i = bf16_to_f32_avx2(dst, h, n);
#endif
        for (; i < n; i++) {
            memcpy(&v, h + 2 * i, 2);
            dst[i] = ct_bf16_to_f32(v);
        }
        return CT_OK;
    }
    case CT_DTYPE_F16:
        for (size_t i = 0; i < n; i++) {
            memcpy(&v, h + 2 * i, 2);
            dst[i] = ct_f16_to_f32(v);
        }
        return CT_OK;
    default: return ct_fail(CT_ERR_UNSUPPORTED, "convert: dtype %s is not a float type", ct_dtype_name(src_dtype));
    }
}

/* dst (n, dtype) from src (n, float dtype); src and dst do not overlap. */
static ct_status convert(void *dst, ct_dtype dtype, const void *src, ct_dtype src_dtype, size_t n) {
    if (dtype == src_dtype) {
        memcpy(dst, src, n * ct_dtype_size(dtype));
        return CT_OK;
    }
    if (dtype == CT_DTYPE_F32) return ct_convert_to_f32(dst, src, src_dtype, n);
    if (dtype != CT_DTYPE_BF16 && dtype != CT_DTYPE_F16)
        return ct_fail(CT_ERR_UNSUPPORTED, "convert: to %s", ct_dtype_name(dtype));
    if (src_dtype != CT_DTYPE_F32 && src_dtype != CT_DTYPE_BF16 && src_dtype != CT_DTYPE_F16)
        return ct_fail(CT_ERR_UNSUPPORTED, "convert: dtype %s is not a float type", ct_dtype_name(src_dtype));
    uint16_t *o = dst;
    const unsigned char *h = src;
    const size_t es = ct_dtype_size(src_dtype);
    for (size_t i = 0; i < n; i++) {
        float f;
        (void)ct_convert_to_f32(&f, h + i * es, src_dtype, 1);
        o[i] = dtype == CT_DTYPE_BF16 ? ct_f32_to_bf16(f) : ct_f32_to_f16(f);
    }
    return CT_OK;
}

/* First NaN/Inf among n elements, or -1: on the bit patterns (exponent all
 * ones), so no float compare; src may be unaligned. Runs of 256 elements
 * are tested with no early return (so the compiler vectorises the test),
 * and only a run with a hit is searched element by element. */
static int64_t scan_non_finite_plain(const void *src, ct_dtype dtype, size_t n) {
    const unsigned char *p = src;
    enum { RUN = 256 };
    if (dtype == CT_DTYPE_F32) {
        for (size_t r = 0; r < n; r += RUN) {
            const size_t m = n - r < RUN ? n - r : RUN;
            uint32_t hit = 0;
            for (size_t i = 0; i < m; i++) {
                uint32_t u;
                memcpy(&u, p + 4 * (r + i), 4);
                hit |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
            }
            if (!hit) continue;
            for (size_t i = 0; i < m; i++) {
                uint32_t u;
                memcpy(&u, p + 4 * (r + i), 4);
                if ((u & 0x7f800000u) == 0x7f800000u) return (int64_t)(r + i);
            }
        }
    } else if (dtype == CT_DTYPE_BF16 || dtype == CT_DTYPE_F16) {
        const uint16_t mask = dtype == CT_DTYPE_BF16 ? 0x7f80u : 0x7c00u;
        for (size_t r = 0; r < n; r += RUN) {
            const size_t m = n - r < RUN ? n - r : RUN;
            uint16_t hit = 0;
            for (size_t i = 0; i < m; i++) {
                uint16_t u;
                memcpy(&u, p + 2 * (r + i), 2);
                hit |= (uint16_t)((u & mask) == mask);
            }
            if (!hit) continue;
            for (size_t i = 0; i < m; i++) {
                uint16_t u;
                memcpy(&u, p + 2 * (r + i), 2);
                if ((u & mask) == mask) return (int64_t)(r + i);
            }
        }
    }
    return -1;
}

#if defined(__x86_64__)
/* The same test 64 bytes at a time (the plain loop above does not
 * vectorise for 16-bit elements, and the load scans every borrowed weight:
 * 2.6–4 GB of bf16). Four vectors per step, their masks OR-ed; a step with
 * a hit, and the tail, go to the plain loop, which finds the element. */
__attribute__((target("avx512f,avx512bw"))) static int64_t scan_avx512(const void *src, ct_dtype dtype, size_t n) {
    const unsigned char *p = src;
    const int half = dtype != CT_DTYPE_F32;
    const size_t es = half ? 2 : 4, per = 256 / es; /* elements per step */
    const __m512i m16 = _mm512_set1_epi16((short)(dtype == CT_DTYPE_BF16 ? 0x7f80 : 0x7c00));
    const __m512i m32 = _mm512_set1_epi32(0x7f800000);
    size_t i = 0;
    for (; i + per <= n; i += per) {
        const unsigned char *q = p + i * es;
        uint64_t hit = 0;
        for (int v = 0; v < 4; v++) {
            __m512i x = _mm512_loadu_si512((const void *)(q + 64 * v));
            hit |= half ? _mm512_cmpeq_epi16_mask(_mm512_and_si512(x, m16), m16)
                        : _mm512_cmpeq_epi32_mask(_mm512_and_si512(x, m32), m32);
        }
        if (hit) break;
    }
    int64_t at = scan_non_finite_plain(p + i * es, dtype, n - i);
    return at < 0 ? -1 : at + (int64_t)i;
}
#endif

int64_t ct_scan_non_finite_ref(const void *src, ct_dtype dtype, size_t n) {
    return scan_non_finite_plain(src, dtype, n);
}

static int64_t scan_non_finite(const void *src, ct_dtype dtype, size_t n) {
#if defined(__x86_64__)
    if ((dtype == CT_DTYPE_F32 || dtype == CT_DTYPE_BF16 || dtype == CT_DTYPE_F16) && ct_cpu_features_get()->avx512)
        return scan_avx512(src, dtype, n);
#endif
    return scan_non_finite_plain(src, dtype, n);
}

/* Blocks of this many elements are converted and scanned by one thread:
 * 256 KiB of f32, so a block read for the conversion is still in cache for
 * the scan (one pass over the source), and the destination's pages are
 * first touched (cleared by the kernel) by the thread that fills them. */
enum { BLOCK = 1 << 16 };

/* dst = convert(src) (dst NULL: scan only) and *bad_at = first non-finite
 * element (bad_at NULL: no scan), in parallel over blocks. The result does
 * not depend on the thread count: conversion is per element, and the first
 * bad index is the minimum over blocks. */
static ct_status convert_scan(void *dst, ct_dtype dtype, const void *src, ct_dtype src_dtype, size_t n,
                              int64_t *bad_at) {
    const size_t nb = (n + BLOCK - 1) / BLOCK, es = ct_dtype_size(src_dtype), ed = ct_dtype_size(dtype);
    int64_t first = -1;
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 4) if (nb > 1)
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * BLOCK, m = n - i0 < BLOCK ? n - i0 : BLOCK;
        const unsigned char *s = (const unsigned char *)src + i0 * es;
        if (dst && convert((unsigned char *)dst + i0 * ed, dtype, s, src_dtype, m) != CT_OK) {
#pragma omp atomic write
            failed = 1;
        }
        int64_t at = bad_at ? scan_non_finite(s, src_dtype, m) : -1;
        if (at >= 0) {
            at += (int64_t)i0;
#pragma omp critical(ct_tensor_scan)
            if (first < 0 || at < first) first = at;
        }
    }
    if (bad_at) *bad_at = first;
    /* convert() is deterministic in its dtypes: rerun one element on this
     * thread for the message (ct_fail's message is thread-local) */
    if (failed) return convert(dst, dtype, src, src_dtype, 1);
    return CT_OK;
}

int64_t ct_first_non_finite(const void *src, ct_dtype dtype, size_t n) {
    int64_t at = -1;
    (void)convert_scan(NULL, dtype, src, dtype, n, &at);
    return at;
}

int ct_tensor_borrow(ct_backend *be, ct_dtype dtype, const void *src, ct_dtype src_dtype, int ndim,
                     const int64_t *shape, ct_tensor *out) {
    size_t es = ct_dtype_size(dtype);
    /* host memory only (a device backend has a stream), same element type,
     * and element-aligned, as the kernels read it through typed pointers */
    if (dtype != src_dtype || be->ops->stream(be) != NULL || es == 0 || (uintptr_t)src % es != 0) return 0;
    ct_tensor t;
    if (describe(dtype, ndim, shape, &t) != CT_OK) return 0;
    t.data = t.nbytes ? (void *)src : NULL;
    *out = t; /* owner NULL: a view, ct_tensor_release only clears it */
    return 1;
}

static ct_status upload(ct_backend *be, ct_dtype dtype, const void *src, ct_dtype src_dtype, int ndim,
                        const int64_t *shape, int64_t *bad_at, int deferred, ct_tensor *out) {
    if (bad_at) *bad_at = -1;
    CT_TRY(ct_tensor_alloc(be, dtype, ndim, shape, out));
    if (out->nbytes == 0) return CT_OK;
    size_t n = out->nbytes / ct_dtype_size(dtype);
    ct_status st;
    if (be->ops->stream(be) == NULL) { /* host memory: convert in place */
        st = convert_scan(out->data, dtype, src, src_dtype, n, bad_at);
    } else if (dtype == src_dtype) {
        /* A checkpoint already in the device's type (bf16 weights on cuda):
         * scan it where it lies and upload from there (the backend stages
         * it through page-locked memory). A copy into fresh host memory
         * first faults in every page of that memory and writes the weights
         * once more (4 GB for the full model; docs/PERFORMANCE.md,
         * "Session 9", has the load times this is meant to bring down). */
        st = bad_at ? convert_scan(NULL, dtype, src, src_dtype, n, bad_at) : CT_OK;
        int async = deferred && be->ops->version >= 7 && be->ops->to_device_async;
        if (st == CT_OK) st = (async ? be->ops->to_device_async : be->ops->to_device)(be, out->data, src, out->nbytes);
    } else {
        void *tmp = malloc(out->nbytes);
        if (!tmp) {
            ct_tensor_release(out);
            return ct_fail(CT_ERR_OOM, "tensor: %zu bytes for conversion", out->nbytes);
        }
        st = convert_scan(tmp, dtype, src, src_dtype, n, bad_at);
        if (st == CT_OK) st = be->ops->to_device(be, out->data, tmp, out->nbytes);
        free(tmp);
    }
    if (st != CT_OK) ct_tensor_release(out);
    return st;
}

ct_status ct_tensor_upload_checked(ct_backend *be, ct_dtype dtype, const void *src, ct_dtype src_dtype, int ndim,
                                   const int64_t *shape, int64_t *bad_at, ct_tensor *out) {
    return upload(be, dtype, src, src_dtype, ndim, shape, bad_at, 0, out);
}

ct_status ct_tensor_upload_deferred(ct_backend *be, ct_dtype dtype, const void *src, ct_dtype src_dtype, int ndim,
                                    const int64_t *shape, int64_t *bad_at, ct_tensor *out) {
    return upload(be, dtype, src, src_dtype, ndim, shape, bad_at, 1, out);
}

ct_status ct_tensor_upload(ct_backend *be, ct_dtype dtype, const void *src, ct_dtype src_dtype, int ndim,
                           const int64_t *shape, ct_tensor *out) {
    return ct_tensor_upload_checked(be, dtype, src, src_dtype, ndim, shape, NULL, out);
}

void ct_tensor_release(ct_tensor *t) {
    if (!t) return;
    if (t->owner && t->data) t->owner->ops->free(t->owner, t->data);
    memset(t, 0, sizeof *t);
}
