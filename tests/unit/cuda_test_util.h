/* cuda_test_util.h — shared by the CUDA kernel tests (test_cuda_ops.c,
 * test_cuda_attention.c): a deterministic generator, bf16-rounded fills,
 * device upload/download helpers, poisoned (NaN) outputs so an unwritten
 * element fails, relative-L2 comparison, and the common main (skip without
 * CUDA or a device). Include once per test program, after testutil.h.
 */
#ifndef CT_CUDA_TEST_UTIL_H
#define CT_CUDA_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "testutil.h"

#ifdef CT_HAVE_CUDA
#include "compute/cuda/ct_cuda.h"

static ct_cuda *g_cuda;
static unsigned g_seed = 12345;

static inline float frand(void) { /* uniform in [-1, 1) */
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)((g_seed >> 8) / 8388608.0 - 1.0);
}
static inline float bfr(float x) { return ct_bf16_to_f32(ct_f32_to_bf16(x)); }
static inline void fill(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = bfr(frand() * scale);
}

/* device helpers: upload float as bf16 or f32, download bf16 or f32 */
/* bytes host → a new device buffer (4 bytes of slack past the end). */
static inline void *dev_copy(const void *x, size_t bytes) {
    void *d;
    CT_ASSERT_OK(ct_cuda_malloc(g_cuda, &d, bytes + 4));
    CT_ASSERT_OK(ct_cuda_h2d(g_cuda, d, x, bytes));
    CT_ASSERT_OK(ct_cuda_sync(g_cuda));
    return d;
}
static inline void *dev_bf16(const float *x, size_t n) {
    uint16_t *h = malloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++) h[i] = ct_f32_to_bf16(x[i]);
    void *d = dev_copy(h, n * 2);
    free(h);
    return d;
}
static inline void *dev_f32(const float *x, size_t n) { return dev_copy(x, n * 4); }
static inline void *dev_i32(const int *x, size_t n) { return dev_copy(x, n * 4); }
static inline void *dev_poison(size_t bytes) { /* 0xff bytes: NaN in bf16 and f32 */
    void *d;
    CT_ASSERT_OK(ct_cuda_malloc(g_cuda, &d, bytes + 4));
    CT_ASSERT_OK(ct_cuda_memset(g_cuda, d, 0xff, bytes));
    return d;
}
static inline float *get_bf16(const void *d, size_t n) {
    uint16_t *h = malloc(n * 2 + 2);
    float *f = malloc(n * 4 + 4);
    CT_ASSERT_OK(ct_cuda_sync(g_cuda));
    CT_ASSERT_OK(ct_cuda_d2h(g_cuda, h, d, n * 2));
    for (size_t i = 0; i < n; i++) f[i] = ct_bf16_to_f32(h[i]);
    free(h);
    return f;
}
static inline float *get_f32(const void *d, size_t n) {
    float *f = malloc(n * 4 + 4);
    CT_ASSERT_OK(ct_cuda_sync(g_cuda));
    CT_ASSERT_OK(ct_cuda_d2h(g_cuda, f, d, n * 4));
    return f;
}
/* relative L2 with NaN (unwritten output) failing */
static inline void expect_close(const char *what, const float *got, const float *ref, size_t n, double tol) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(got[i])) fail_msg("%s: element %zu is %f (unwritten?)", what, i, got[i]);
    double e = ct_rel_l2(got, ref, n);
    printf("  %-28s n=%-8zu rel L2 %.3g (tol %.0e)\n", what, n, e, tol);
    if (!(e <= tol)) fail_msg("%s: rel L2 %.3g > %.0e", what, e, tol);
}

/* Run the group on the first device, or skip visibly without one. */
static inline int cuda_test_main(const char *name, const struct CMUnitTest *tests, size_t n) {
    const char *why = "";
    if (!ct_cuda_available(&why)) {
        printf("SKIP %s: %s — CUDA kernels compiled but not run\n", name, why);
        return 0;
    }
    if (ct_cuda_create(&g_cuda) != CT_OK) {
        printf("FAIL: ct_cuda_create: %s\n", ct_last_error());
        return 1;
    }
    char dev[128];
    size_t total = 0, freeb = 0;
    if (ct_cuda_info(g_cuda, dev, sizeof dev, &total, &freeb) == CT_OK)
        printf("device: %s, %.1f GiB\n", dev, total / 1073741824.0);
    int r = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
    ct_cuda_free(g_cuda);
    return r;
}
#endif
#endif
