/* test_gemv.c — the decoding GEMV kernels (compute/cpu/cpu_gemv.h) at every
 * instruction-set level this CPU runs, against the plain-loop reference
 * ct_ref_matmul: f32/bf16/f16 weights, M = 1..4, K not a multiple of the
 * vector width (16 or 8) and N not a multiple of the row block (4 or 2) or
 * of the threads' chunk (16), every epilogue, residual aliasing y, one and
 * several threads; plus the read-bandwidth probe and argument errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/backend.h"
#include "compute/cpu/cpu_gemv.h"
#include "compute/cpu/cpu_membw.h"
#include "compute/ref/ops_ref.h"
#include "testutil.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float *rnd(size_t n) { return ct_test_rnd(&rng_state, n); } /* uniform in [-1, 1) */

static ct_backend *ref_backend(void) {
    static ct_backend *be;
    if (!be) assert_int_equal(ct_backend_create("cpu-ref", NULL, &be), CT_OK);
    return be;
}

static ct_tensor weight(ct_dtype dt, const float *w, int64_t n, int64_t k) {
    ct_tensor t;
    int64_t shape[2] = {n, k};
    CT_ASSERT_OK(ct_tensor_upload(ref_backend(), dt, w, CT_DTYPE_F32, 2, shape, &t));
    return t;
}

/* The weight as the kernels see it (after rounding to its dtype). */
static float weight_at(const ct_tensor *t, size_t i) {
    if (t->dtype == CT_DTYPE_F32) return ((const float *)t->data)[i];
    uint16_t h = ((const uint16_t *)t->data)[i];
    return t->dtype == CT_DTYPE_BF16 ? ct_bf16_to_f32(h) : ct_f16_to_f32(h);
}

/* Every output within 1e-5 of its own scale |alpha|·(Σ|x·w| + |b|) + |r|:
 * float32 summation in another order stays far inside that (≈ √K·6e-8 of
 * it), while one lost or doubled term of K ≥ 7 is ≳ 1e-2 of it. */
static void expect_close(const float *got, const float *want, const float *x, const ct_tensor *w, const float *b,
                         const float *r, float alpha, int M, int N, int K, const char *what) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += fabs((double)x[(size_t)m * K + k] * weight_at(w, (size_t)n * K + k));
            s = fabs(alpha) * (s + (b ? fabs(b[n]) : 0)) + (r ? fabs(r[(size_t)m * N + n]) : 0);
            double g = got[(size_t)m * N + n], e = want[(size_t)m * N + n];
            if (!(fabs(g - e) <= 1e-5 * s + 1e-30))
                fail_msg("%s: y[%d][%d] = %.9g, reference %.9g (scale %.3g)", what, m, n, g, e, s);
        }
}

/* (N, K); K = 64, 1024, 4096 take AVX-512's split bf16 kernel (K a multiple
 * of 32, M·K within its stack buffer: 4096 at M = 4 is its limit), 4128 at
 * M = 4 is just over it */
static const int sizes[][2] = {{1, 1},     {5, 7},     {3, 15},   {17, 33},  {6, 100},  {33, 129},
                               {301, 515}, {1027, 129}, {37, 64}, {70, 1024}, {9, 4096}, {5, 4128}};
static const ct_dtype dts[] = {CT_DTYPE_F32, CT_DTYPE_BF16, CT_DTYPE_F16};

static void test_levels_against_reference(void **state) {
    int checked = 0;
    for (int isa = 0; isa <= (int)ct_cpu_isa_best(); isa++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
            for (int di = 0; di < 3; di++)
                for (int M = 1; M <= CT_GEMV_MAX_M; M++) {
                    int N = sizes[si][0], K = sizes[si][1];
                    float *x = rnd((size_t)M * K), *wf = rnd((size_t)N * K), *b = rnd(N), *r = rnd((size_t)M * N);
                    float *want = malloc(sizeof(float) * M * N), *got = malloc(sizeof(float) * M * N);
                    ct_tensor w = weight(dts[di], wf, N, K);
                    /* modes: plain; bias; bias+ReLU; bias+SiLU, alpha, residual; alpha + residual */
                    for (int mode = 0; mode < 5; mode++) {
                        const float *bb = mode == 0 || mode == 4 ? NULL : b;
                        const float *rr = mode >= 3 ? r : NULL;
                        ct_act act = mode == 2 ? CT_ACT_RELU : mode == 3 ? CT_ACT_SILU : CT_ACT_NONE;
                        float alpha = mode >= 3 ? 0.5f : 1.0f;
                        char what[128];
                        snprintf(what, sizeof what, "%s %s M=%d N=%d K=%d mode %d", ct_cpu_isa_name((ct_cpu_isa)isa),
                                 ct_dtype_name(dts[di]), M, N, K, mode);
                        CT_ASSERT_OK(ct_ref_matmul(ref_backend(), want, x, &w, bb, rr, alpha, act, M, N, K, NULL));
                        for (int th = 1; th <= 3; th += 2) {
                            for (size_t i = 0; i < (size_t)M * N; i++) got[i] = NAN; /* every output is written */
                            CT_ASSERT_OK(ct_gemv((ct_cpu_isa)isa, th, got, x, &w, bb, rr, alpha, act, M, N, K));
                            expect_close(got, want, x, &w, bb, rr, alpha, M, N, K, what);
                        }
                        if (mode == 4) { /* residual is y */
                            memcpy(got, r, sizeof(float) * M * N);
                            CT_ASSERT_OK(ct_gemv((ct_cpu_isa)isa, 3, got, x, &w, NULL, got, alpha, act, M, N, K));
                            expect_close(got, want, x, &w, NULL, r, alpha, M, N, K, what);
                        }
                        checked++;
                    }
                    ct_tensor_release(&w);
                    free(x), free(wf), free(b), free(r), free(want), free(got);
                }
    if (getenv("CT_TEST_VERBOSE"))
        print_message("gemv: levels up to %s, %d cases\n", ct_cpu_isa_name(ct_cpu_isa_best()), checked);
}

/* Threads split output features only, so the result is bit-identical for
 * any thread count. */
static void test_threads_bit_identical(void **state) {
    const int M = 3, N = 1000, K = 517;
    float *x = rnd((size_t)M * K), *wf = rnd((size_t)N * K), *b = rnd(N);
    float *y1 = malloc(sizeof(float) * M * N), *y2 = malloc(sizeof(float) * M * N);
    for (int di = 0; di < 3; di++) {
        ct_tensor w = weight(dts[di], wf, N, K);
        for (int isa = 0; isa <= (int)ct_cpu_isa_best(); isa++) {
            CT_ASSERT_OK(ct_gemv((ct_cpu_isa)isa, 1, y1, x, &w, b, NULL, 1.0f, CT_ACT_NONE, M, N, K));
            for (int th = 2; th <= 5; th++) {
                CT_ASSERT_OK(ct_gemv((ct_cpu_isa)isa, th, y2, x, &w, b, NULL, 1.0f, CT_ACT_NONE, M, N, K));
                assert_memory_equal(y1, y2, sizeof(float) * M * N);
            }
        }
        ct_tensor_release(&w);
    }
    free(x), free(wf), free(b), free(y1), free(y2);
}

/* The backend's matmul takes the GEMV path for M ≤ 4 and agrees with the
 * reference backend there and just above it (M = 5, the sgemm path). */
static void test_backend_matmul_uses_it(void **state) {
    /* bf16 products through oneDNN's native kernel off: M = 5 then takes the
     * widened path, exact like the GEMV (native bf16 rounds the activations;
     * test_int8 checks it) */
    ct_backend_options bo = ct_backend_default_options();
    bo.dnnl_bf16 = -1;
    ct_backend *fast;
    CT_ASSERT_OK(ct_backend_create("cpu", &bo, &fast));
    ct_arena ws;
    CT_ASSERT_OK(ct_backend_arena_create(fast, 16u << 20, &ws));
    const int N = 77, K = 301;
    for (int M = 1; M <= 5; M++) {
        float *x = rnd((size_t)M * K), *wf = rnd((size_t)N * K), *b = rnd(N), *r = rnd((size_t)M * N);
        float *y1 = malloc(sizeof(float) * M * N), *y2 = malloc(sizeof(float) * M * N);
        ct_tensor w = weight(CT_DTYPE_BF16, wf, N, K);
        CT_ASSERT_OK(ct_ref_matmul(ref_backend(), y1, x, &w, b, r, 1.0f, CT_ACT_NONE, M, N, K, NULL));
        CT_ASSERT_OK(fast->ops->matmul(fast, y2, x, &w, b, r, 1.0f, CT_ACT_NONE, M, N, K, &ws));
        expect_close(y2, y1, x, &w, b, r, 1.0f, M, N, K, "backend matmul");
        ct_tensor_release(&w);
        free(x), free(wf), free(b), free(r), free(y1), free(y2);
    }
    ct_backend_arena_free(fast, &ws);
    ct_backend_free(fast);
}

static void test_bad_arguments(void **state) {
    float x[8] = {0}, y[8];
    float wf[8] = {0};
    ct_tensor w = weight(CT_DTYPE_F32, wf, 2, 4);
    CT_ASSERT_STATUS(ct_gemv(CT_CPU_ISA_PLAIN, 1, y, x, &w, NULL, NULL, 1.0f, CT_ACT_NONE, 0, 2, 4), CT_ERR_INVALID_ARG);
    CT_ASSERT_STATUS(ct_gemv(CT_CPU_ISA_PLAIN, 1, y, x, &w, NULL, NULL, 1.0f, CT_ACT_NONE, 5, 2, 4), CT_ERR_INVALID_ARG);
    CT_ASSERT_STATUS(ct_gemv(CT_CPU_ISA_PLAIN, 1, y, x, &w, NULL, NULL, 1.0f, CT_ACT_NONE, 1, 2, 3), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("want 2 x 3");
    CT_ASSERT_STATUS(ct_gemv(CT_CPU_ISA_COUNT, 1, y, x, &w, NULL, NULL, 1.0f, CT_ACT_NONE, 1, 2, 4), CT_ERR_UNSUPPORTED);
    if (ct_cpu_isa_best() < CT_CPU_ISA_AVX512) { /* a level above the CPU's is refused, not run */
        CT_ASSERT_STATUS(ct_gemv(CT_CPU_ISA_AVX512, 1, y, x, &w, NULL, NULL, 1.0f, CT_ACT_NONE, 1, 2, 4),
                         CT_ERR_UNSUPPORTED);
        CT_ASSERT_ERROR_HAS("cannot run avx512");
    }
    ct_tensor_release(&w);
    ct_tensor wi = {.dtype = CT_DTYPE_I8, .ndim = 2, .shape = {2, 4}, .data = x, .nbytes = 8};
    CT_ASSERT_STATUS(ct_gemv(CT_CPU_ISA_PLAIN, 1, y, x, &wi, NULL, NULL, 1.0f, CT_ACT_NONE, 1, 2, 4),
                     CT_ERR_UNSUPPORTED);
}

static void test_isa_names_and_bandwidth(void **state) {
    for (int isa = 0; isa < CT_CPU_ISA_COUNT; isa++) {
        ct_cpu_isa back;
        assert_int_equal(ct_cpu_isa_parse(ct_cpu_isa_name((ct_cpu_isa)isa), &back), 0);
        assert_int_equal((int)back, isa);
    }
    ct_cpu_isa none;
    assert_int_equal(ct_cpu_isa_parse("sse9", &none), -1);
    /* every level streams a buffer at a finite, positive rate; too small a
     * buffer is refused */
    for (int isa = 0; isa <= (int)ct_cpu_isa_best(); isa++) {
        double per_cpu = -1.0, g = ct_cpu_read_bandwidth(4u << 20, 2, 1, (ct_cpu_isa)isa, &per_cpu);
        assert_true(g > 0.0 && g < 1e5);
        assert_true(per_cpu > 0.0 && per_cpu < 1e5);
    }
    assert_true(ct_cpu_read_bandwidth(100, 2, 1, CT_CPU_ISA_PLAIN, NULL) < 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels_against_reference),
        cmocka_unit_test(test_threads_bit_identical),
        cmocka_unit_test(test_backend_matmul_uses_it),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_isa_names_and_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
