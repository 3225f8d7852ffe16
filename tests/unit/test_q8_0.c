/* test_q8_0.c — Q8_0 (ggml block int8) weights: the block layout and its
 * round trip, the activation quantiser's definition, the AVX2 block-dot
 * kernel against the reference product (exact where every sum is an
 * integer, including the extremes that would saturate a naive u8·s8
 * maddubs; within the stated fp32 summation bound elsewhere), its
 * independence from threads and tile shape, and the backend op (every
 * epilogue, residual aliasing y, a small workspace, pointwise conv)
 * against cpu-ref and against float math. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "asr/decoder.h"
#include "compute/backend.h"
#include "compute/cpu/cpu_features.h"
#include "compute/cpu/cpu_isa.h"
#include "compute/cpu/cpu_q80.h"
#include "compute/cpu/cpu_state.h"
#include "compute/quant.h"
#include "compute/ref/ops_ref.h"
#include "testutil.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float *rnd(size_t n) { return ct_test_rnd(&rng_state, n); } /* uniform in [-1, 1) */
static uint32_t rnd_u32(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

#define CHECK_CLOSE(a, b, n, tol)                                                                   \
    do {                                                                                            \
        double e_ = ct_rel_l2((a), (b), (n));                                                       \
        if (!(e_ <= (tol))) fail_msg("%s vs %s: relative L2 %.3g > %.3g", #a, #b, e_, (double)(tol)); \
    } while (0)

typedef ct_test_backends fixture; /* testutil.h: cpu-ref, cpu and an arena */

static ct_tensor q80(fixture *f, const float *w, int64_t n, int64_t k) {
    ct_tensor t;
    int64_t bad = 0;
    CT_ASSERT_OK(ct_tensor_quantize_q80(f->fast, w, CT_DTYPE_F32, n, k, &bad, &t));
    assert_int_equal(bad, -1);
    return t;
}

static float blk_d(const unsigned char *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return ct_f16_to_f32(h);
}

/* ggml's block layout: 34 bytes per 32 weights, f16 d = amax/127 first;
 * every weight back within half a step plus the f16 rounding of d. */
static void test_weight_layout(void **state) {
    fixture *f = *state;
    const int N = 7, K = 96;
    float *w = rnd((size_t)N * K);
    for (int k = 0; k < 32; k++) w[3 * K + 32 + k] = 0.0f; /* a zero block */
    w[5 * K + 7] = -3.0f;                                   /* a block with one large weight */
    ct_tensor t = q80(f, w, N, K);
    assert_int_equal(t.dtype, CT_DTYPE_Q8_0);
    assert_int_equal(t.nbytes, (size_t)N * 3 * 34);
    assert_int_equal(ct_dtype_nbytes(CT_DTYPE_Q8_0, (size_t)N * K), t.nbytes);
    float back[96];
    for (int n = 0; n < N; n++) {
        const unsigned char *row = ct_q80_row(&t, n, K);
        ct_q80_dequantize_row(back, row, K);
        for (int b = 0; b < 3; b++) {
            float amax = 0.0f;
            for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(w[(size_t)n * K + b * 32 + i]));
            const float d = blk_d(row + b * 34);
            assert_true(fabsf(d - amax / 127.0f) <= amax / 127.0f * 0x1p-11f);
            for (int i = 0; i < 32; i++) {
                const float e = fabsf(back[b * 32 + i] - w[(size_t)n * K + b * 32 + i]);
                if (!(e <= 0.5f * amax / 127.0f * (1.0f + 0x1p-10f) + 127.0f * fabsf(d - amax / 127.0f) + 1e-7f))
                    fail_msg("row %d block %d element %d: error %g (amax %g)", n, b, i, e, amax);
                assert_true(back[b * 32 + i] == ct_ref_weight_at(&t, (size_t)n * K + b * 32 + i));
            }
        }
    }
    assert_true(blk_d(ct_q80_row(&t, 3, K) + 34) == 0.0f);
    assert_int_equal(((const int8_t *)ct_q80_row(&t, 5, K))[2 + 7], -127);
    ct_tensor_release(&t);
    /* rows not a multiple of 32 long are refused; a NaN is found */
    ct_tensor bad;
    CT_ASSERT_STATUS(ct_tensor_quantize_q80(f->fast, w, CT_DTYPE_F32, 3, 48, NULL, &bad), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("multiple of 32");
    w[2 * K + 40] = NAN;
    int64_t at = 0;
    CT_ASSERT_OK(ct_tensor_quantize_q80(f->fast, w, CT_DTYPE_F32, N, K, &at, &bad));
    assert_int_equal(at, 2 * K + 40);
    assert_null(bad.data);
    free(w);
}

/* The activation definition: dx = amax/127 in fp32, round half to even,
 * a zero block all zeros, a NaN/infinity block dx = NaN. */
static void test_activation_definition(void **state) {
    (void)state;
    float x[96];
    int8_t q[96];
    float d[3];
    for (int i = 0; i < 32; i++) x[i] = (float)(i - 16) * 0.25f; /* amax 4: dx 4/127 */
    x[5] = 4.0f * 63.5f / 127.0f;                                  /* exactly 63.5 steps: 64 (even) */
    for (int i = 32; i < 64; i++) x[i] = 0.0f;
    for (int i = 64; i < 96; i++) x[i] = 1.0f;
    ct_q80_quantize_act(q, d, x, 1, 64);
    assert_true(d[0] == 4.0f / 127.0f);
    assert_int_equal(q[0], -127);
    for (int i = 0; i < 32; i++) {
        const float v = x[i] * (127.0f / 4.0f);
        const float r = (v + 12582912.0f) - 12582912.0f;
        assert_int_equal(q[i], (int)r);
    }
    assert_int_equal(q[5], 64);
    assert_true(d[1] == 0.0f);
    for (int i = 32; i < 64; i++) assert_int_equal(q[i], 0);
    x[70] = INFINITY;
    ct_q80_quantize_act(q, d, x, 1, 96);
    assert_true(isnan(d[2]));
    assert_true(d[0] == 4.0f / 127.0f);
}

/* Exact in integers: every scale 1, so every sum is an integer below 2²⁴
 * and any order of fp32 summation gives it exactly. The weights are drawn
 * over the whole int8 range (−128 included, which a GGUF file may hold)
 * with blocks at the extremes: 128·127·2 = 32512 per maddubs pair is the
 * largest, and a u8·s8 product taken the other way round (activation
 * magnitude × signed weight) would saturate at 127·128·2 only with −128, so
 * both signs of both extremes are here. */
static void test_exact_integers(void **state) {
    (void)state;
    const int shapes[][3] = {{1, 1, 32}, {1, 5, 96}, {2, 3, 160}, {3, 7, 992}, {4, 9, 224}, {5, 4, 64},
                             {9, 11, 288}, {67, 13, 32}};
    const ct_cpu_isa best = ct_cpu_isa_best();
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], nb = K / 32;
        unsigned char *w = malloc((size_t)N * nb * 34);
        int8_t *qx = malloc((size_t)M * K);
        float *dx = malloc(sizeof(float) * (size_t)M * nb);
        float *y = malloc(sizeof(float) * (size_t)M * N), *yr = malloc(sizeof(float) * (size_t)M * N);
        for (int n = 0; n < N; n++)
            for (int b = 0; b < nb; b++) {
                unsigned char *blk = w + ((size_t)n * nb + b) * 34;
                const uint16_t one = 0x3c00;
                memcpy(blk, &one, 2);
                for (int i = 0; i < 32; i++) {
                    int v = (int)(rnd_u32() % 256) - 128;
                    if ((n + b) % 4 == 1) v = -128;
                    if ((n + b) % 4 == 2) v = 127;
                    ((int8_t *)(blk + 2))[i] = (int8_t)v;
                }
            }
        for (int m = 0; m < M; m++)
            for (int k = 0; k < K; k++) {
                int v = (int)(rnd_u32() % 255) - 127;
                if ((m + k / 32) % 3 == 1) v = (m % 2) ? 127 : -127;
                qx[(size_t)m * K + k] = (int8_t)v;
            }
        for (int i = 0; i < M * nb; i++) dx[i] = 1.0f;
        ct_q80_gemm_ref(yr, qx, dx, w, M, N, K);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                int64_t s = 0;
                for (int b = 0; b < nb; b++)
                    for (int i = 0; i < 32; i++)
                        s += (int64_t)((const int8_t *)(w + ((size_t)n * nb + b) * 34 + 2))[i] *
                             qx[(size_t)m * K + b * 32 + i];
                if (yr[(size_t)m * N + n] != (float)s) fail_msg("reference %d,%d: %g != %lld", m, n, yr[m * N + n], (long long)s);
            }
        for (int isa = 0; isa <= (int)best; isa++)
            for (int th = 1; th <= 2; th++) {
                memset(y, 0xff, sizeof(float) * (size_t)M * N);
                ct_q80_gemm((ct_cpu_isa)isa, th, y, qx, dx, w, M, N, K);
                for (int i = 0; i < M * N; i++)
                    if (y[i] != yr[i])
                        fail_msg("%s, %d threads, %dx%dx%d: element %d: %g != %g", ct_cpu_isa_name((ct_cpu_isa)isa),
                                 th, M, N, K, i, y[i], yr[i]);
            }
        free(w), free(qx), free(dx), free(y), free(yr);
    }
}

/* General scales: the reference and each kernel within the fp32 summation
 * bound (quant.h) of the exact sum of the rounded terms, computed here in
 * double; the kernels give the same bits on 1 and 2 threads, and a row's
 * outputs do not depend on how many rows or columns are multiplied with
 * it (one accumulator per output, a fixed order). */
static void test_kernel_vs_reference(void **state) {
    fixture *f = *state;
    const int shapes[][3] = {{1, 1, 32}, {1, 67, 1280}, {2, 5, 64}, {3, 17, 96}, {4, 33, 1312},
                             {5, 65, 160}, {7, 3, 5120}, {33, 129, 256}, {70, 66, 1280}};
    const ct_cpu_isa best = ct_cpu_isa_best();
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], nb = K / 32;
        float *x = rnd((size_t)M * K), *wf = rnd((size_t)N * K);
        for (int k = 0; k < K; k++) x[k] *= (float)(1 + k % 97); /* uneven block scales */
        ct_tensor wt = q80(f, wf, N, K);
        int8_t *qx = malloc((size_t)M * K);
        float *dx = malloc(sizeof(float) * (size_t)M * nb);
        ct_q80_quantize_act(qx, dx, x, M, K);
        float *yr = malloc(sizeof(float) * (size_t)M * N), *y = malloc(sizeof(float) * (size_t)M * N);
        float *y2 = malloc(sizeof(float) * (size_t)M * N), *y1 = malloc(sizeof(float) * (size_t)N);
        ct_q80_gemm_ref(yr, qx, dx, wt.data, M, N, K);
        for (int isa = 0; isa <= (int)best; isa++) {
            ct_q80_gemm((ct_cpu_isa)isa, 1, y, qx, dx, wt.data, M, N, K);
            ct_q80_gemm((ct_cpu_isa)isa, 2, y2, qx, dx, wt.data, M, N, K);
            assert_memory_equal(y, y2, sizeof(float) * (size_t)M * N);
            for (int m = 0; m < M; m++) {
                ct_q80_gemm((ct_cpu_isa)isa, 2, y1, qx + (size_t)m * K, dx + (size_t)m * nb, wt.data, 1, N, K);
                assert_memory_equal(y1, y + (size_t)m * N, sizeof(float) * (size_t)N);
                for (int n = 0; n < N; n++) {
                    const unsigned char *row = ct_q80_row(&wt, n, K);
                    double exact = 0.0, mag = 0.0;
                    for (int b = 0; b < nb; b++) {
                        const int8_t *qw = (const int8_t *)(row + b * 34 + 2);
                        const float s = blk_d(row + b * 34) * dx[(size_t)m * nb + b];
                        int64_t dot = 0, adot = 0;
                        for (int i = 0; i < 32; i++) {
                            const int p = qw[i] * qx[(size_t)m * K + b * 32 + i];
                            dot += p, adot += p < 0 ? -p : p;
                        }
                        exact += (double)s * (double)dot;
                        mag += fabs((double)s) * (double)adot;
                    }
                    const double bound = (nb + 3) * 0x1p-24 * mag + 1e-30;
                    const double er = fabs(yr[(size_t)m * N + n] - exact), ek = fabs(y[(size_t)m * N + n] - exact);
                    if (!(er <= bound) || !(ek <= bound))
                        fail_msg("%s %dx%dx%d at %d,%d: ref err %g, kernel err %g, bound %g",
                                 ct_cpu_isa_name((ct_cpu_isa)isa), M, N, K, m, n, er, ek, bound);
                }
            }
        }
        ct_tensor_release(&wt);
        free(x), free(wf), free(qx), free(dx), free(yr), free(y), free(y2), free(y1);
    }
}

/* The op for every epilogue mode and residual aliasing y: up to
 * CT_Q80_INT_ROWS rows the Q8_0 product, against cpu-ref (only the fp32
 * summation order and the fast SiLU separate them); more rows the float
 * product of the dequantised weights, against float math on them; with an
 * 8 KiB workspace (no room for the f32 tiles) the Q8_0 product in row
 * chunks at any M, against cpu-ref. A NaN in an activation row makes that
 * row's outputs NaN only. */
static void test_matmul_vs_reference(void **state) {
    fixture *f = *state;
    const int sizes[][3] = {{1, 1, 32}, {1, 200, 128}, {3, 5, 96}, {4, 96, 256}, {5, 33, 64}, {64, 130, 96},
                            {200, 70, 320}};
    ct_arena small;
    CT_ASSERT_OK(ct_backend_arena_create(f->fast, 8192, &small));
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int mode = 0; mode < 4; mode++) {
            const int M = sizes[si][0], N = sizes[si][1], K = sizes[si][2];
            float *x = rnd((size_t)M * K), *w = rnd((size_t)N * K), *b = rnd(N), *r = rnd((size_t)M * N);
            float *y1 = rnd((size_t)M * N), *y2 = rnd((size_t)M * N), *yw = rnd((size_t)M * N);
            ct_tensor wt = q80(f, w, N, K), wf;
            float *wd = malloc(sizeof(float) * (size_t)N * K);
            for (int n = 0; n < N; n++) ct_q80_dequantize_row(wd + (size_t)n * K, ct_q80_row(&wt, n, K), K);
            CT_ASSERT_OK(ct_tensor_upload(f->fast, CT_DTYPE_F32, wd, CT_DTYPE_F32, 2, (const int64_t[]){N, K}, &wf));
            const ct_act act = mode == 1 ? CT_ACT_RELU : mode == 2 ? CT_ACT_SILU : CT_ACT_NONE;
            const float *res = mode >= 2 ? r : NULL;
            const float alpha = mode == 3 ? 0.5f : 1.0f;
            const float *bb = mode == 0 ? NULL : b;
            CT_ASSERT_OK(ct_ref_matmul(f->ref, y1, x, &wt, bb, res, alpha, act, M, N, K, &f->ws));
            CT_ASSERT_OK(ct_ref_matmul(f->ref, yw, x, &wf, bb, res, alpha, act, M, N, K, &f->ws));
            const float *want = M <= CT_Q80_INT_ROWS ? y1 : yw;
            CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, bb, res, alpha, act, M, N, K, &f->ws));
            CHECK_CLOSE(y2, want, (size_t)M * N, 1e-5);
            CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, bb, res, alpha, act, M, N, K, &small));
            CHECK_CLOSE(y2, y1, (size_t)M * N, 1e-5);
            if (mode == 3) {
                memcpy(y2, r, sizeof(float) * M * N);
                CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, b, y2, alpha, act, M, N, K, &f->ws));
                CHECK_CLOSE(y2, want, (size_t)M * N, 1e-5);
                memcpy(y2, r, sizeof(float) * M * N);
                CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, b, y2, alpha, act, M, N, K, &small));
                CHECK_CLOSE(y2, y1, (size_t)M * N, 1e-5);
            }
            if (M >= 3 && mode == 0) {
                CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y1, x, &wt, NULL, NULL, 1.0f, act, M, N, K, &f->ws));
                x[(size_t)1 * K + K / 2] = NAN;
                CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, NULL, NULL, 1.0f, act, M, N, K, &f->ws));
                for (int n = 0; n < N; n++) {
                    assert_true(isnan(y2[(size_t)N + n]));
                    assert_true(y2[n] == y1[n] && y2[2 * (size_t)N + n] == y1[2 * (size_t)N + n]);
                }
            }
            ct_tensor_release(&wt);
            ct_tensor_release(&wf);
            free(x), free(w), free(b), free(r), free(y1), free(y2), free(yw), free(wd);
        }
    /* rows not a multiple of 32 long: refused by both */
    ct_tensor odd = {.dtype = CT_DTYPE_Q8_0, .ndim = 2, .shape = {2, 40}};
    float xo[80] = {0}, yo[4];
    odd.data = xo;
    CT_ASSERT_STATUS(f->fast->ops->matmul(f->fast, yo, xo, &odd, NULL, NULL, 1.0f, CT_ACT_NONE, 2, 2, 40, &f->ws),
                     CT_ERR_INVALID_ARG);
    CT_ASSERT_STATUS(ct_ref_matmul(f->ref, yo, xo, &odd, NULL, NULL, 1.0f, CT_ACT_NONE, 2, 2, 40, &f->ws),
                     CT_ERR_INVALID_ARG);
    ct_backend_arena_free(f->fast, &small);
    assert_int_equal(f->ws.used, 0);
}

/* Against float math on the float weights: the weights round to half a
 * step of their block's max/127 (about 0.25 % of the rms for uniform
 * data), and on the integer path (M ≤ CT_Q80_INT_ROWS) the activations as
 * well, so 1e-2 relative L2 holds with a wide margin (printed: measured);
 * and the pointwise conv, which widens Q8_0 weights to f32, equals the
 * float math on the dequantised weights. */
static void test_vs_float(void **state) {
    fixture *f = *state;
    const int N = 257, K = 640;
    float *w = rnd((size_t)N * K);
    ct_tensor wt = q80(f, w, N, K), wf;
    CT_ASSERT_OK(ct_tensor_upload(f->fast, CT_DTYPE_F32, w, CT_DTYPE_F32, 2, (const int64_t[]){N, K}, &wf));
    const int Ms[2] = {CT_Q80_INT_ROWS, 150};
    for (int i = 0; i < 2; i++) {
        const int M = Ms[i];
        float *x = rnd((size_t)M * K), *y = malloc(sizeof(float) * M * N), *yf = malloc(sizeof(float) * M * N);
        CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y, x, &wt, NULL, NULL, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
        CT_ASSERT_OK(ct_ref_matmul(f->ref, yf, x, &wf, NULL, NULL, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
        const double e = ct_rel_l2(y, yf, (size_t)M * N);
        print_message("Q8_0 product vs float, %d rows: relative L2 %.3g\n", M, e);
        assert_true(e <= 1e-2);
        assert_true(e >= 1e-4); /* it is quantised */
        free(x), free(y), free(yf);
    }
    ct_tensor_release(&wf);
    /* pointwise conv (B, Ci=K, P) with the Q8_0 weight (Co=N, Ci=K) */
    const int B = 2, P = 9;
    float *xc = rnd((size_t)B * K * P), *c1 = malloc(sizeof(float) * B * N * P), *c2 = malloc(sizeof(float) * B * N * P);
    float *bias = rnd(N);
    CT_ASSERT_OK(f->fast->ops->conv_pointwise(f->fast, c1, xc, &wt, bias, B, K, N, P, CT_ACT_NONE, &f->ws));
    CT_ASSERT_OK(ct_ref_conv_pointwise(f->ref, c2, xc, &wt, bias, B, K, N, P, CT_ACT_NONE, &f->ws));
    CHECK_CLOSE(c1, c2, (size_t)B * N * P, 1e-5);
    ct_tensor_release(&wt);
    free(w), free(xc), free(c1), free(c2), free(bias);
}

/* --dtype int8's choice: per-row Q8 where the CPU has AVX512-VNNI, Q8_0
 * where it has no VNNI at all (AVX-VNNI alone depends on oneDNN's kernel);
 * the dispatch line names it. */
static void test_int8_choice(void **state) {
    (void)state;
    const ct_cpu_features *f = ct_cpu_features_get();
    const char *why = NULL;
    const ct_dtype dt = ct_cpu_int8_dtype(&why);
    assert_non_null(why);
    if (f->avx512_vnni) assert_int_equal(dt, CT_DTYPE_Q8);
    if (!f->avx512_vnni && !f->avx_vnni) {
        assert_int_equal(dt, CT_DTYPE_Q8_0);
        char line[400];
        ct_cpu_dispatch_plan(line, sizeof line);
        if (!strstr(line, "int8: Q8_0 blocks")) fail_msg("dispatch line: %s", line);
    }
}

/* The decoder's weight bytes (the bandwidth bound of bench_decoder and
 * bench_engine) count Q8_0 matrices as 34 bytes per 32 weights. */
static void test_decoder_weight_bytes(void **state) {
    (void)state;
    const int d = 64, ff = 128, V = 96;
    ct_dec_layer L;
    memset(&L, 0, sizeof L);
    ct_tensor *sq[] = {&L.sq_w, &L.sk_w, &L.sv_w, &L.so_w, &L.cq_w, &L.co_w};
    for (int i = 0; i < 6; i++) *sq[i] = (ct_tensor){.dtype = CT_DTYPE_Q8_0, .ndim = 2, .shape = {d, d}};
    L.fc1_w = (ct_tensor){.dtype = CT_DTYPE_Q8_0, .ndim = 2, .shape = {ff, d}};
    L.fc2_w = (ct_tensor){.dtype = CT_DTYPE_Q8_0, .ndim = 2, .shape = {d, ff}};
    ct_asr_weights w;
    memset(&w, 0, sizeof w);
    w.hp.dec_layers = 1;
    w.dec = &L;
    w.head_w = (ct_tensor){.dtype = CT_DTYPE_BF16, .ndim = 2, .shape = {V, d}};
    const size_t q80 = (size_t)(6 * d * d + 2 * ff * d) / 32 * 34;
    assert_int_equal(ct_decoder_weight_bytes(&w), q80 + (size_t)V * d * 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weight_layout),        cmocka_unit_test(test_activation_definition),
        cmocka_unit_test(test_exact_integers),       cmocka_unit_test(test_kernel_vs_reference),
        cmocka_unit_test(test_matmul_vs_reference),  cmocka_unit_test(test_vs_float),
        cmocka_unit_test(test_int8_choice),          cmocka_unit_test(test_decoder_weight_bytes),
    };
    return cmocka_run_group_tests(tests, ct_test_backends_setup, ct_test_backends_teardown);
}
