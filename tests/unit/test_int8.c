/* test_int8.c — the int8 path and the CPU matmul dispatch: quantisation
 * round trips with their error bounds, the VNNI GEMV against the integer
 * reference (exact), the fast int8 matmul against the reference definition
 * (cpu-ref) and against float math (stated bound), row chunking under a
 * small workspace, the forced-down dispatch (isa_limit) and oneDNN's bf16
 * product forced on (emulated on CPUs without AVX512-BF16). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compute/backend.h"
#include "compute/cpu/cpu_features.h"
#include "compute/cpu/cpu_int8.h"
#include "compute/cpu/cpu_state.h"
#include "compute/quant.h"
#include "compute/ref/ops_ref.h"
#include "testutil.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static float *rnd(size_t n) { return ct_test_rnd(&rng_state, n); } /* uniform in [-1, 1) */

#define CHECK_CLOSE(a, b, n, tol)                                                                   \
    do {                                                                                            \
        double e_ = ct_rel_l2((a), (b), (n));                                                       \
        if (!(e_ <= (tol))) fail_msg("%s vs %s: relative L2 %.3g > %.3g", #a, #b, e_, (double)(tol)); \
    } while (0)

typedef struct fixture {
    ct_backend *ref, *fast, *base, *bf16on;
    ct_arena ws;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    ct_backend_options base = ct_backend_default_options(), on = ct_backend_default_options();
    base.isa_limit = CT_ISA_BASELINE;
    on.dnnl_bf16 = 1;
    if (ct_backend_create("cpu-ref", NULL, &f->ref) || ct_backend_create("cpu", NULL, &f->fast) ||
        ct_backend_create("cpu", &base, &f->base) || ct_backend_create("cpu", &on, &f->bf16on))
        return -1;
    if (ct_backend_arena_create(f->fast, 64u << 20, &f->ws)) return -1;
    *state = f;
    return 0;
}
static int teardown(void **state) {
    fixture *f = *state;
    ct_backend_arena_free(f->fast, &f->ws);
    ct_backend_free(f->ref);
    ct_backend_free(f->fast);
    ct_backend_free(f->base);
    ct_backend_free(f->bf16on);
    free(f);
    return 0;
}

static ct_tensor q8(fixture *f, const float *w, int64_t n, int64_t k) {
    ct_tensor t;
    int64_t bad = 0;
    CT_ASSERT_OK(ct_tensor_quantize_q8(f->fast, w, CT_DTYPE_F32, n, k, &bad, &t));
    assert_int_equal(bad, -1);
    return t;
}

/* Every weight comes back within half a step of its row's scale; the row
 * sums are the sums of the stored values; a zero row stays zero. */
static void test_weight_round_trip(void **state) {
    fixture *f = *state;
    const int N = 37, K = 1100; /* K over one 1024-element chunk */
    float *w = rnd((size_t)N * K);
    for (int k = 0; k < K; k++) w[5 * K + k] = 0.0f;
    for (int k = 0; k < K; k++) w[7 * K + k] *= 1e-3f; /* a small row keeps its own scale */
    ct_tensor t = q8(f, w, N, K);
    assert_int_equal(t.dtype, CT_DTYPE_Q8);
    assert_true(t.nbytes >= ct_q8_bytes(N, K));
    float *back = malloc(sizeof(float) * K);
    for (int n = 0; n < N; n++) {
        ct_q8_dequantize_row(back, &t, n);
        float amax = 0.0f;
        int32_t sum = 0;
        for (int k = 0; k < K; k++) amax = fmaxf(amax, fabsf(w[(size_t)n * K + k]));
        for (int k = 0; k < K; k++) sum += ct_q8_values(&t)[(size_t)n * K + k];
        assert_float_equal(ct_q8_scales(&t)[n], amax / 127.0f, amax * 1e-6f);
        assert_int_equal(ct_q8_rowsums(&t)[n], sum);
        for (int k = 0; k < K; k++) {
            float err = fabsf(back[k] - w[(size_t)n * K + k]);
            if (err > 0.5f * amax / 127.0f * 1.0001f + 1e-30f)
                fail_msg("row %d col %d: %g vs %g (step %g)", n, k, back[k], w[(size_t)n * K + k], amax / 127.0f);
        }
    }
    for (int k = 0; k < K; k++) assert_int_equal(ct_q8_values(&t)[5 * K + k], 0);
    /* the same through the reference's element accessor */
    assert_float_equal(ct_ref_weight_at(&t, 3 * (size_t)K + 9), ct_q8_scales(&t)[3] * ct_q8_values(&t)[3 * K + 9], 0);
    ct_tensor_release(&t);
    free(back), free(w);
}

/* The AVX-512 row quantiser gives the reference's bits: f32 and bf16
 * sources, odd lengths (masked tails), an unaligned source. */
static void test_weight_row_kernels(void **state) {
    (void)state;
    const int Ks[] = {1, 15, 16, 17, 1000, 1280, 5121};
    for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
        const int K = Ks[ki];
        float *w = rnd((size_t)K + 1);
        unsigned char *raw = malloc(4 * (size_t)K + 8);
        for (int dt = 0; dt < 2; dt++)
            for (int off = 0; off < 2; off++) {
                unsigned char *src = raw + (dt == 0 ? 4 * off : off); /* bf16 at an odd address */
                if (dt == 0) memcpy(src, w, 4 * (size_t)K);
                else
                    for (int k = 0; k < K; k++) {
                        uint16_t h = ct_f32_to_bf16(w[k] * 3.0f);
                        memcpy(src + 2 * k, &h, 2);
                    }
                const ct_dtype t = dt == 0 ? CT_DTYPE_F32 : CT_DTYPE_BF16;
                int8_t *q1 = malloc((size_t)K), *q2 = malloc((size_t)K);
                float s1, s2;
                int32_t r1, r2;
                assert_int_equal(ct_q8_quantize_row_ref(q1, &s1, &r1, src, t, K), -1);
                assert_int_equal(ct_q8_quantize_row(q2, &s2, &r2, src, t, K), -1);
                assert_memory_equal(q1, q2, (size_t)K);
                assert_memory_equal(&s1, &s2, sizeof s1);
                assert_int_equal(r1, r2);
                free(q1), free(q2);
            }
        free(raw), free(w);
    }
}

static void test_weight_non_finite(void **state) {
    fixture *f = *state;
    const int N = 300, K = 300; /* parallel rows */
    float *w = rnd((size_t)N * K);
    w[200 * K + 17] = NAN;
    w[250 * K + 3] = INFINITY;
    ct_tensor t;
    int64_t bad = 0;
    CT_ASSERT_OK(ct_tensor_quantize_q8(f->fast, w, CT_DTYPE_F32, N, K, &bad, &t));
    assert_int_equal(bad, 200 * K + 17);
    assert_null(t.data);
    /* bf16 source */
    uint16_t *h = malloc(2 * (size_t)N * K);
    for (size_t i = 0; i < (size_t)N * K; i++) h[i] = ct_f32_to_bf16(isnan(w[i]) ? 0.5f : w[i]);
    CT_ASSERT_OK(ct_tensor_quantize_q8(f->fast, h, CT_DTYPE_BF16, N, K, &bad, &t));
    assert_int_equal(bad, 250 * K + 3);
    free(h), free(w);
}

/* x ≈ s·(u − z) within half a step; 0 is exact; a NaN row has a NaN scale. */
static void test_activation_round_trip(void **state) {
    (void)state;
    const int M = 5, K = 777;
    float *x = rnd((size_t)M * K);
    for (int k = 0; k < K; k++) x[1 * K + k] = 0.25f * fabsf(x[1 * K + k]) + 0.1f; /* all positive: z = 0 */
    for (int k = 0; k < K; k++) x[2 * K + k] = 0.0f;
    x[3 * K + 4] = 0.0f;
    x[4 * K + 100] = NAN;
    uint8_t *u = malloc((size_t)M * K);
    float s[5];
    int32_t z[5];
    ct_q8_quantize_act(u, s, z, x, M, K);
    for (int m = 0; m < 4; m++) {
        for (int k = 0; k < K; k++) {
            float v = s[m] * (float)((int32_t)u[(size_t)m * K + k] - z[m]);
            if (fabsf(v - x[(size_t)m * K + k]) > 0.5f * s[m] * 1.001f)
                fail_msg("row %d col %d: %g vs %g (step %g)", m, k, v, x[(size_t)m * K + k], s[m]);
        }
    }
    assert_int_equal(z[1], 0);
    assert_int_equal(u[3 * K + 4], z[3]);
    for (int k = 0; k < K; k++) assert_int_equal(u[2 * K + k], 0);
    assert_true(isnan(s[4]));
    free(u), free(x);
}

/* The AVX512-VNNI GEMV is exact against the integer reference, byte tails
 * included. */
static void test_gemv_vnni_exact(void **state) {
    (void)state;
    if (!ct_cpu_features_get()->avx512_vnni) {
        print_message("no AVX512-VNNI on this CPU: the GEMV kernel is not run\n");
        skip();
    }
    const int Ks[] = {1, 63, 64, 65, 200, 1024, 1283};
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
        for (int M = 1; M <= 6; M++) {
            const int K = Ks[ki], N = 515;
            uint8_t *u = malloc((size_t)M * K);
            int8_t *q = malloc((size_t)N * K);
            for (size_t i = 0; i < (size_t)M * K; i++) u[i] = (uint8_t)(rng_state = rng_state * 6364136223846793005ull + 1, rng_state >> 56);
            for (size_t i = 0; i < (size_t)N * K; i++) {
                rng_state = rng_state * 6364136223846793005ull + 1;
                int v = (int)(rng_state >> 56) - 128;
                q[i] = (int8_t)(v < -127 ? -127 : v);
            }
            int32_t *a = malloc(sizeof(int32_t) * M * N), *b = malloc(sizeof(int32_t) * M * N);
            ct_int8_gemm_ref(a, u, q, M, N, K);
            ct_int8_gemv_vnni512(b, u, q, M, N, K);
            assert_memory_equal(a, b, sizeof(int32_t) * M * N);
            free(u), free(q), free(a), free(b);
        }
}

/* Fast int8 matmul (GEMV rows, oneDNN rows, chunks) against the reference
 * definition, every epilogue mode and the residual aliasing y. The integer
 * part is exact in both, so only float rounding of the epilogue and the
 * fast expf separate them. */
static void test_matmul_vs_reference(void **state) {
    fixture *f = *state;
    const int sizes[][3] = {{1, 1, 1}, {1, 200, 129}, {3, 5, 7}, {4, 96, 256}, {5, 33, 65}, {64, 130, 96},
                            {200, 70, 300}};
    ct_backend *bes[] = {f->fast, f->base};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int mode = 0; mode < 4; mode++) {
            const int M = sizes[si][0], N = sizes[si][1], K = sizes[si][2];
            float *x = rnd((size_t)M * K), *w = rnd((size_t)N * K), *b = rnd(N), *r = rnd((size_t)M * N);
            float *y1 = rnd((size_t)M * N), *y2 = rnd((size_t)M * N), *y3 = rnd((size_t)M * N);
            ct_tensor wt = q8(f, w, N, K);
            ct_act act = mode == 1 ? CT_ACT_RELU : mode == 2 ? CT_ACT_SILU : CT_ACT_NONE;
            const float *res = mode >= 2 ? r : NULL;
            const float alpha = mode == 3 ? 0.5f : 1.0f;
            /* the float product of the dequantised weights: what the widened
             * fallback computes (forced here with isa_limit, and taken by a
             * CPU without VNNI) */
            float *wd = malloc(sizeof(float) * (size_t)N * K), *yw = malloc(sizeof(float) * (size_t)M * N);
            for (int n = 0; n < N; n++) ct_q8_dequantize_row(wd + (size_t)n * K, &wt, n);
            ct_tensor wf;
            CT_ASSERT_OK(ct_tensor_upload(f->fast, CT_DTYPE_F32, wd, CT_DTYPE_F32, 2, (const int64_t[]){N, K}, &wf));
            CT_ASSERT_OK(ct_ref_matmul(f->ref, yw, x, &wf, mode == 0 ? NULL : b, res, alpha, act, M, N, K, &f->ws));
            /* the int8 definition where the fast backend takes the integer path */
            const int native = ct_cpu_q8_native(f->fast, M);
            if (native) CT_ASSERT_OK(ct_ref_matmul(f->ref, y1, x, &wt, mode == 0 ? NULL : b, res, alpha, act, M, N, K, &f->ws));
            else memcpy(y1, yw, sizeof(float) * (size_t)M * N);
            CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, mode == 0 ? NULL : b, res, alpha, act, M, N, K, &f->ws));
            CHECK_CLOSE(y2, y1, (size_t)M * N, 1e-5);
            if (mode == 3) {
                memcpy(y2, r, sizeof(float) * M * N);
                CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, b, y2, alpha, act, M, N, K, &f->ws));
                CHECK_CLOSE(y2, y1, (size_t)M * N, 1e-5);
            }
            assert_false(ct_cpu_q8_native(bes[1], M));
            CT_ASSERT_OK(bes[1]->ops->matmul(bes[1], y3, x, &wt, mode == 0 ? NULL : b, res, alpha, act, M, N, K, &f->ws));
            CHECK_CLOSE(y3, yw, (size_t)M * N, 1e-5);
            /* forced-on (int8 activations) and forced-off agree within the
             * activation rounding (K ≥ 64: the bound is statistical) */
            if (K >= 64) CHECK_CLOSE(y2, y3, (size_t)M * N, 1e-2);
            ct_tensor_release(&wf);
            ct_tensor_release(&wt);
            free(wd), free(yw), free(x), free(w), free(b), free(r), free(y1), free(y2), free(y3);
        }
    assert_int_equal(f->ws.used, 0);
}

/* Against float math on float weights: weights and activations each add
 * a uniform rounding error of half a step (max/127 and range/255), about
 * 0.4 % of the rms for uniform data each, so 1e-2 relative L2 holds with a
 * wide margin for K in the hundreds. */
static void test_matmul_vs_float(void **state) {
    fixture *f = *state;
    const int M = 150, N = 257, K = 640;
    float *x = rnd((size_t)M * K), *w = rnd((size_t)N * K), *b = rnd(N);
    float *y1 = malloc(sizeof(float) * M * N), *y2 = malloc(sizeof(float) * M * N);
    ct_tensor wf, wt = q8(f, w, N, K);
    CT_ASSERT_OK(ct_tensor_upload(f->fast, CT_DTYPE_F32, w, CT_DTYPE_F32, 2, (const int64_t[]){N, K}, &wf));
    CT_ASSERT_OK(ct_ref_matmul(f->ref, y1, x, &wf, b, NULL, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
    CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, b, NULL, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
    double e = ct_rel_l2(y2, y1, (size_t)M * N);
    print_message("int8 vs f32 relative L2: %.3g\n", e);
    if (ct_cpu_q8_native(f->fast, M)) assert_true(e > 1e-4); /* quantised activations, not float ones */
    CHECK_CLOSE(y2, y1, (size_t)M * N, 1e-2);
    ct_tensor_release(&wf);
    ct_tensor_release(&wt);
    free(x), free(w), free(b), free(y1), free(y2);
}

/* A workspace with room for a few rows only: the product runs in chunks
 * (several oneDNN calls and a GEMV tail) and gives the same result; one too
 * small for a single row is an out-of-memory error, not a crash. */
static void test_chunked_rows(void **state) {
    fixture *f = *state;
    const int M = 75, N = 96, K = 512;
    float *x = rnd((size_t)M * K), *w = rnd((size_t)N * K), *r = rnd((size_t)M * N);
    float *y1 = malloc(sizeof(float) * M * N), *y2 = malloc(sizeof(float) * M * N);
    ct_tensor wt = q8(f, w, N, K);
    CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y1, x, &wt, NULL, r, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
    if (!ct_cpu_q8_native(f->fast, M)) { /* the widened fallback does not chunk rows */
        print_message("no integer int8 path for these rows here (no VNNI, or no oneDNN): row chunks not run\n");
        ct_tensor_release(&wt);
        free(x), free(w), free(r), free(y1), free(y2);
        return;
    }
    ct_arena small;
    CT_ASSERT_OK(ct_backend_arena_create(f->fast, 18 * (K + 8 + 4 * N) + 4096, &small));
    memcpy(y2, r, sizeof(float) * M * N); /* residual in y: int32 products need their own rows */
    CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, NULL, y2, 1.0f, CT_ACT_NONE, M, N, K, &small));
    assert_memory_equal(y1, y2, sizeof(float) * M * N);
    ct_backend_arena_free(f->fast, &small);
    CT_ASSERT_OK(ct_backend_arena_create(f->fast, 256, &small));
    assert_int_equal(f->fast->ops->matmul(f->fast, y2, x, &wt, NULL, y2, 1.0f, CT_ACT_NONE, M, N, K, &small),
                     CT_ERR_OOM);
    ct_backend_arena_free(f->fast, &small);
    ct_tensor_release(&wt);
    free(x), free(w), free(r), free(y1), free(y2);
}

/* bf16 weights: forced through oneDNN's bf16 product (bf16 activations)
 * it stays within bf16 activation rounding of the f32 reference; forced
 * down to the baseline it is today's widened path (float activations). */
static void test_bf16_dispatch(void **state) {
    fixture *f = *state;
    const int M = 40, N = 130, K = 300;
    float *x = rnd((size_t)M * K), *w = rnd((size_t)N * K), *b = rnd(N), *r = rnd((size_t)M * N);
    float *y1 = malloc(sizeof(float) * M * N), *y2 = malloc(sizeof(float) * M * N);
    ct_tensor wt;
    CT_ASSERT_OK(ct_tensor_upload(f->fast, CT_DTYPE_BF16, w, CT_DTYPE_F32, 2, (const int64_t[]){N, K}, &wt));
    CT_ASSERT_OK(ct_ref_matmul(f->ref, y1, x, &wt, b, r, 0.5f, CT_ACT_SILU, M, N, K, &f->ws));
    CT_ASSERT_OK(f->base->ops->matmul(f->base, y2, x, &wt, b, r, 0.5f, CT_ACT_SILU, M, N, K, &f->ws));
    CHECK_CLOSE(y2, y1, (size_t)M * N, 1e-5);
    const ct_cpu_state *on = ct_cpu_state_of(f->bf16on);
    if (!on->dnnl_bf16) {
        print_message("no oneDNN bf16 kernel here (build without oneDNN, or a CPU without AVX-512): not run\n");
    } else {
        CT_ASSERT_OK(f->bf16on->ops->matmul(f->bf16on, y2, x, &wt, b, r, 0.5f, CT_ACT_SILU, M, N, K, &f->ws));
        double e = ct_rel_l2(y2, y1, (size_t)M * N);
        assert_true(e > 0.0); /* activations were rounded: it did not take the widened path */
        CHECK_CLOSE(y2, y1, (size_t)M * N, 5e-3);
        memcpy(y2, r, sizeof(float) * M * N); /* residual in y */
        CT_ASSERT_OK(f->bf16on->ops->matmul(f->bf16on, y2, x, &wt, b, y2, 0.5f, CT_ACT_NONE, M, N, K, &f->ws));
        CT_ASSERT_OK(ct_ref_matmul(f->ref, y1, x, &wt, b, r, 0.5f, CT_ACT_NONE, M, N, K, &f->ws));
        CHECK_CLOSE(y2, y1, (size_t)M * N, 5e-3);
    }
    assert_false(ct_cpu_state_of(f->base)->dnnl_bf16);
    assert_int_equal(ct_cpu_state_of(f->base)->level, CT_ISA_BASELINE);
    assert_null(ct_cpu_state_of(f->base)->dnnl);
    ct_tensor_release(&wt);
    free(x), free(w), free(b), free(r), free(y1), free(y2);
}

/* The level follows the CPU's features, capped by isa_limit. */
static void test_dispatch_levels(void **state) {
    fixture *f = *state;
    const ct_cpu_features *cf = ct_cpu_features_get();
    int lvl = ct_cpu_isa_level(cf);
    assert_int_equal(ct_cpu_state_of(f->fast)->level, lvl);
    assert_int_equal(ct_cpu_state_of(f->fast)->vnni512, lvl >= CT_ISA_VNNI && cf->avx512_vnni);
    assert_int_equal(ct_cpu_state_of(f->fast)->dnnl_bf16, lvl >= CT_ISA_BF16 && ct_dnnl_built());
    char line[400];
    ct_cpu_dispatch_describe(f->fast, line, sizeof line);
    assert_non_null(strstr(line, ct_cpu_level_name(lvl)));
    /* the line names oneDNN's kernels; with AMX in cpuid and XCR0, oneDNN
     * 2.6 gets the tile state from Linux itself and takes its AMX kernels */
    const ct_cpu_state *st = ct_cpu_state_of(f->fast);
    if (st->dnnl_bf16) assert_non_null(strstr(line, "oneDNN kernels: bf16 "));
    if (st->dnnl_bf16 && cf->amx_bf16) assert_non_null(strstr(line, "amx_bf16"));
    if (st->dnnl_u8s8 && cf->amx_int8) assert_non_null(strstr(line, "amx_int8"));
    assert_true(f->fast->ops->supports_weight(f->fast, CT_DTYPE_Q8));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weight_round_trip),  cmocka_unit_test(test_weight_row_kernels),
        cmocka_unit_test(test_weight_non_finite),
        cmocka_unit_test(test_activation_round_trip), cmocka_unit_test(test_gemv_vnni_exact),
        cmocka_unit_test(test_matmul_vs_reference), cmocka_unit_test(test_matmul_vs_float),
        cmocka_unit_test(test_chunked_rows),       cmocka_unit_test(test_bf16_dispatch),
        cmocka_unit_test(test_dispatch_levels),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
