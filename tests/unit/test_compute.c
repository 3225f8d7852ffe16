/* test_compute.c — the compute layer: every fast CPU op against its float32
 * reference on random inputs (odd sizes included), the reference's rel-shift
 * against a literal pad/view/slice transcription of the reference code, and
 * bf16/f16 weight handling. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "compute/backend.h"
#include "compute/cpu/cpu_math.h"
#include "compute/cpu/cpu_state.h"
#include "compute/ref/ops_ref.h"
#include "testutil.h"

static uint64_t rng_state = 88172645463325252ull;
static float *rnd(size_t n) { return ct_test_rnd(&rng_state, n); } /* uniform in [-1, 1) */

typedef ct_test_backends fixture; /* testutil.h: cpu-ref, cpu and an arena */

static ct_tensor weight(fixture *f, ct_dtype dt, const float *w, int64_t n, int64_t k) {
    ct_tensor t;
    int64_t shape[2] = {n, k};
    ct_status s = ct_tensor_upload(f->fast, dt, w, CT_DTYPE_F32, 2, shape, &t);
    assert_int_equal(s, CT_OK);
    return t;
}

#define CHECK_CLOSE(a, b, n, tol)                                                                   \
    do {                                                                                            \
        double e_ = ct_rel_l2((a), (b), (n));                                                       \
        if (!(e_ <= (tol))) fail_msg("%s vs %s: relative L2 %.3g > %.3g", #a, #b, e_, (double)(tol)); \
    } while (0)

/* oneDNN's bf16 product with the epilogue fused (bias, ReLU/SiLU, alpha,
 * residual in y or apart), forced on (emulated where the CPU has no bf16):
 * against the reference run on the activations rounded to bf16, only the
 * summation order and SiLU's exp differ (bf16 × bf16 products are exact in
 * f32), so the bound is float32's, not bf16's. */
static void test_matmul_bf16_fused(void **state) {
    fixture *f = *state;
    ct_backend_options bo = ct_backend_default_options();
    bo.dnnl_bf16 = 1;
    ct_backend *on;
    CT_ASSERT_OK(ct_backend_create("cpu", &bo, &on));
    if (!ct_cpu_state_of(on)->dnnl_bf16) {
        print_message("no oneDNN bf16 kernel here (no oneDNN, or no AVX-512): not run\n");
        ct_backend_free(on);
        return;
    }
    const int M = 37, N = 70, K = 200;
    float *x = rnd((size_t)M * K), *w = rnd((size_t)N * K), *b = rnd(N), *r = rnd((size_t)M * N);
    float *xr = malloc(sizeof(float) * M * K), *y1 = malloc(sizeof(float) * M * N), *y2 = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++) xr[i] = ct_bf16_to_f32(ct_f32_to_bf16(x[i]));
    ct_tensor wt = weight(f, CT_DTYPE_BF16, w, N, K);
    for (int mode = 0; mode < 6; mode++) {
        const ct_act act = mode == 1 || mode == 4 ? CT_ACT_RELU : mode == 2 ? CT_ACT_SILU : CT_ACT_NONE;
        const float alpha = mode >= 3 ? 0.5f : 1.0f;
        const float *bias = mode == 0 ? NULL : b;
        const int res_in_y = mode == 3 || mode == 5;
        const float *res = mode <= 1 ? NULL : r;
        CT_ASSERT_OK(ct_ref_matmul(f->ref, y1, xr, &wt, bias, res, alpha, act, M, N, K, &f->ws));
        if (res_in_y) memcpy(y2, r, sizeof(float) * M * N);
        else
            for (int i = 0; i < M * N; i++) y2[i] = 1e30f; /* every output must be written */
        CT_ASSERT_OK(on->ops->matmul(on, y2, x, &wt, bias, res_in_y ? y2 : res, alpha, act, M, N, K, &f->ws));
        CHECK_CLOSE(y2, y1, (size_t)M * N, 2e-6);
    }
    ct_tensor_release(&wt);
    ct_backend_free(on);
    free(x), free(w), free(b), free(r), free(xr), free(y1), free(y2);
}

static void test_matmul(void **state) {
    fixture *f = *state;
    const int sizes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {64, 130, 96}, {1, 200, 129}};
    const ct_dtype dts[] = {CT_DTYPE_F32, CT_DTYPE_BF16, CT_DTYPE_F16};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int di = 0; di < 3; di++)
            for (int mode = 0; mode < 4; mode++) {
                int M = sizes[si][0], N = sizes[si][1], K = sizes[si][2];
                float *x = rnd((size_t)M * K), *w = rnd((size_t)N * K), *b = rnd(N), *r = rnd((size_t)M * N);
                float *y1 = rnd((size_t)M * N), *y2 = rnd((size_t)M * N);
                ct_tensor wt = weight(f, dts[di], w, N, K);
                ct_act act = mode == 1 ? CT_ACT_RELU : mode == 2 ? CT_ACT_SILU : CT_ACT_NONE;
                const float *res = mode == 3 ? r : mode == 2 ? r : NULL;
                float alpha = mode == 3 ? 0.5f : 1.0f;
                CT_ASSERT_OK(ct_ref_matmul(f->ref, y1, x, &wt, mode == 0 ? NULL : b, res, alpha, act, M, N, K, &f->ws));
                CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, mode == 0 ? NULL : b, res, alpha, act, M, N, K,
                                                  &f->ws));
                /* bf16 weights over the GEMV's rows on a CPU with native bf16
                 * products: activations rounded to bf16 (test_int8 checks that
                 * path exactly against rounded inputs) */
                const double tol = dts[di] == CT_DTYPE_BF16 && M > 4 && ct_cpu_state_of(f->fast)->dnnl_bf16 ? 5e-3 : 1e-5;
                CHECK_CLOSE(y2, y1, (size_t)M * N, tol);
                if (mode == 3) { /* residual aliasing y */
                    memcpy(y2, r, sizeof(float) * M * N);
                    CT_ASSERT_OK(f->fast->ops->matmul(f->fast, y2, x, &wt, b, y2, alpha, act, M, N, K, &f->ws));
                    CHECK_CLOSE(y2, y1, (size_t)M * N, tol);
                }
                /* bf16 weights are what the reference sees: compare against widened f32 too */
                if (dts[di] == CT_DTYPE_BF16) {
                    float *wf = malloc(sizeof(float) * N * K);
                    CT_ASSERT_OK(ct_convert_to_f32(wf, wt.data, wt.dtype, (size_t)N * K));
                    ct_tensor wft = weight(f, CT_DTYPE_F32, wf, N, K);
                    CT_ASSERT_OK(ct_ref_matmul(f->ref, y1, x, &wft, mode == 0 ? NULL : b, res, alpha, act, M, N, K, &f->ws));
                    CHECK_CLOSE(y2, y1, (size_t)M * N, tol);
                    ct_tensor_release(&wft);
                    free(wf);
                }
                ct_tensor_release(&wt);
                free(x), free(w), free(b), free(r), free(y1), free(y2);
            }
    assert_int_equal(f->ws.used, 0);
}

static void test_matmul_known_values(void **state) {
    fixture *f = *state;
    /* y = r + 0.5 * relu(x·wᵀ + b) with x = [1 2], w = [[1 0],[0 1],[1 1]], b = [0,-3,1], r = 1 */
    float x[2] = {1, 2}, w[6] = {1, 0, 0, 1, 1, 1}, b[3] = {0, -3, 1}, r[3] = {1, 1, 1}, y[3];
    ct_tensor wt = weight(f, CT_DTYPE_F32, w, 3, 2);
    for (int be = 0; be < 2; be++) {
        ct_backend *B = be ? f->fast : f->ref;
        CT_ASSERT_OK(B->ops->matmul(B, y, x, &wt, b, r, 0.5f, CT_ACT_RELU, 1, 3, 2, &f->ws));
        assert_float_equal(y[0], 1.5f, 1e-6);
        assert_float_equal(y[1], 1.0f, 1e-6);
        assert_float_equal(y[2], 3.0f, 1e-6);
    }
    ct_tensor_release(&wt);
}

/* Literal transcription of the reference: bd_full (T, 2T-1) → pad one zero
 * column left → view (2T, T) → drop first row → view (T, 2T-1) → keep T cols. */
static void rel_shift_literal(float *bd, const float *full, int T) {
    int P = 2 * T - 1;
    float *pad = calloc((size_t)T * (P + 1), sizeof(float));
    for (int i = 0; i < T; i++)
        for (int k = 0; k < P; k++) pad[(size_t)i * (P + 1) + 1 + k] = full[(size_t)i * P + k];
    const float *flat = pad + T; /* viewed as (2T, T), drop first row of T */
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) bd[(size_t)i * T + j] = flat[(size_t)i * P + j];
    free(pad);
}

static void test_attn_relpos(void **state) {
    fixture *f = *state;
    const int cases[][4] = {{1, 5, 1, 3}, {2, 7, 2, 4}, {3, 13, 4, 8}, {2, 40, 3, 5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int B = cases[c][0], T = cases[c][1], H = cases[c][2], Dh = cases[c][3], D = H * Dh;
        size_t n = (size_t)B * T * D;
        float *q = rnd(n), *k = rnd(n), *v = rnd(n), *p = rnd((size_t)(2 * T - 1) * D), *u = rnd(D), *vb = rnd(D);
        float *o1 = rnd(n), *o2 = rnd(n), *o3 = calloc(n, sizeof(float));
        int len[3] = {T, T > 3 ? T - 3 : 1, T / 2 + 1};
        CT_ASSERT_OK(ct_ref_attn_relpos(f->ref, o1, q, k, v, p, u, vb, len, B, T, H, Dh, &f->ws));
        CT_ASSERT_OK(f->fast->ops->attn_relpos(f->fast, o2, q, k, v, p, u, vb, len, B, T, H, Dh, &f->ws));
        CHECK_CLOSE(o2, o1, n, 1e-5);
        /* independent literal computation */
        float *full = malloc(sizeof(float) * T * (2 * T - 1)), *bd = malloc(sizeof(float) * T * T);
        float *s = malloc(sizeof(float) * T);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                for (int i = 0; i < T; i++)
                    for (int kk = 0; kk < 2 * T - 1; kk++) {
                        double a = 0;
                        for (int d = 0; d < Dh; d++)
                            a += (q[((size_t)b * T + i) * D + h * Dh + d] + vb[h * Dh + d]) * p[(size_t)kk * D + h * Dh + d];
                        full[(size_t)i * (2 * T - 1) + kk] = (float)a;
                    }
                rel_shift_literal(bd, full, T);
                for (int i = 0; i < len[b]; i++) {
                    for (int j = 0; j < T; j++) {
                        double a = 0;
                        for (int d = 0; d < Dh; d++)
                            a += (q[((size_t)b * T + i) * D + h * Dh + d] + u[h * Dh + d]) * k[((size_t)b * T + j) * D + h * Dh + d];
                        s[j] = j < len[b] ? (float)((a + bd[(size_t)i * T + j]) / sqrt(Dh)) : -INFINITY;
                    }
                    ct_ref_softmax(NULL, s, 1, T);
                    for (int d = 0; d < Dh; d++) {
                        double a = 0;
                        for (int j = 0; j < T; j++) a += s[j] * v[((size_t)b * T + j) * D + h * Dh + d];
                        o3[((size_t)b * T + i) * D + h * Dh + d] = (float)a;
                    }
                }
            }
        CHECK_CLOSE(o1, o3, n, 1e-5);
        /* padded query rows are zeros */
        for (int b = 0; b < B; b++)
            for (int i = len[b]; i < T; i++)
                for (int d = 0; d < D; d++) {
                    assert_true(o1[((size_t)b * T + i) * D + d] == 0.0f);
                    assert_true(o2[((size_t)b * T + i) * D + d] == 0.0f);
                }
        free(full), free(bd), free(s);
        free(q), free(k), free(v), free(p), free(u), free(vb), free(o1), free(o2), free(o3);
    }
    assert_int_equal(f->ws.used, 0);
}

static void test_decoder_attention(void **state) {
    fixture *f = *state;
    const int cases[][5] = {{1, 1, 0, 1, 4}, {3, 1, 9, 2, 8}, {2, 10, 0, 4, 16}, {4, 3, 5, 3, 7}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int n = cases[c][0], S = cases[c][1], pos0 = cases[c][2], H = cases[c][3], Dh = cases[c][4], D = H * Dh;
        int slots = n + 2, Smax = pos0 + S + 3, Tenc = 11;
        int slot[4] = {2, 0, 4, 1}, enc_len[6] = {11, 5, 1, 8, 3, 11};
        float *q = rnd((size_t)n * S * D), *kc = rnd((size_t)slots * Smax * D), *vc = rnd((size_t)slots * Smax * D);
        float *ek = rnd((size_t)slots * Tenc * D), *ev = rnd((size_t)slots * Tenc * D);
        float *o1 = rnd((size_t)n * S * D), *o2 = rnd((size_t)n * S * D);
        CT_ASSERT_OK(ct_ref_attn_causal(f->ref, o1, q, kc, vc, slot, n, S, pos0, Smax, H, Dh, &f->ws));
        CT_ASSERT_OK(f->fast->ops->attn_causal(f->fast, o2, q, kc, vc, slot, n, S, pos0, Smax, H, Dh, &f->ws));
        CHECK_CLOSE(o2, o1, (size_t)n * S * D, 1e-5);
        CT_ASSERT_OK(ct_ref_attn_cross(f->ref, o1, q, ek, ev, slot, enc_len, n, S, Tenc, H, Dh, &f->ws));
        CT_ASSERT_OK(f->fast->ops->attn_cross(f->fast, o2, q, ek, ev, slot, enc_len, n, S, Tenc, H, Dh, &f->ws));
        CHECK_CLOSE(o2, o1, (size_t)n * S * D, 1e-5);
        /* a cross-attention row whose encoder has one frame returns that frame's value */
        if (c == 1) {
            for (int d = 0; d < D; d++) assert_float_equal(o1[(size_t)0 * D + d], ev[(size_t)2 * Tenc * D + d], 1e-6);
        }
        /* causal: the first query at position 0 sees only key 0 */
        if (pos0 == 0)
            for (int d = 0; d < D; d++) {
                CT_ASSERT_OK(ct_ref_attn_causal(f->ref, o1, q, kc, vc, slot, n, S, pos0, Smax, H, Dh, &f->ws));
                assert_float_equal(o1[d], vc[(size_t)slot[0] * Smax * D + d], 1e-6);
            }
        free(q), free(kc), free(vc), free(ek), free(ev), free(o1), free(o2);
    }
    /* kv_write places rows at their slots and positions */
    float cache[2 * 4 * 3] = {0}, src[2 * 2 * 3];
    for (int i = 0; i < 12; i++) src[i] = (float)(i + 1);
    int slot[2] = {1, 0};
    CT_ASSERT_OK(ct_ref_kv_write(f->ref, cache, src, slot, 2, 2, 1, 4, 3));
    assert_true(cache[(1 * 4 + 1) * 3 + 0] == 1.0f && cache[(1 * 4 + 2) * 3 + 2] == 6.0f);
    assert_true(cache[(0 * 4 + 1) * 3 + 0] == 7.0f && cache[(0 * 4 + 0) * 3 + 0] == 0.0f);
    CT_ASSERT_STATUS(ct_ref_kv_write(f->ref, cache, src, slot, 2, 2, 3, 4, 3), CT_ERR_INVALID_ARG);
}

/* Decoding steps (one query per row) with enough keys to be split across
 * threads: 1, 2 and 3 threads, rows with fewer keys than threads (0, 1, 2)
 * and with all of them; against the reference. */
static void test_decoder_attention_split(void **state) {
    fixture *f = *state;
    const int H = 4, Dh = 64, D = H * Dh, Tenc = 300, Smax = 300, slots = 5;
    int slot[4] = {3, 0, 4, 1}, enc_len[5] = {300, 0, 7, 1, 2};
    float *kc = rnd((size_t)slots * Smax * D), *vc = rnd((size_t)slots * Smax * D);
    float *ek = rnd((size_t)slots * Tenc * D), *ev = rnd((size_t)slots * Tenc * D);
    float *q = rnd((size_t)4 * D), *o1 = rnd((size_t)4 * D), *o2 = rnd((size_t)4 * D);
    const int saved = omp_get_max_threads();
    for (int th = 1; th <= 3; th++) {
        omp_set_num_threads(th);
        for (int n = 1; n <= 4; n += 3)
            for (int pos0 = 0; pos0 < Smax; pos0 += 289) { /* 1 key, 290 keys */
                CT_ASSERT_OK(ct_ref_attn_causal(f->ref, o1, q, kc, vc, slot, n, 1, pos0, Smax, H, Dh, &f->ws));
                CT_ASSERT_OK(f->fast->ops->attn_causal(f->fast, o2, q, kc, vc, slot, n, 1, pos0, Smax, H, Dh, &f->ws));
                CHECK_CLOSE(o2, o1, (size_t)n * D, 1e-5);
            }
        for (int big = 1; big >= 0; big--) { /* slot 3 (row 0): all 300 frames, then 1 */
            enc_len[3] = big ? 300 : 1;
            CT_ASSERT_OK(ct_ref_attn_cross(f->ref, o1, q, ek, ev, slot, enc_len, 4, 1, Tenc, H, Dh, &f->ws));
            CT_ASSERT_OK(f->fast->ops->attn_cross(f->fast, o2, q, ek, ev, slot, enc_len, 4, 1, Tenc, H, Dh, &f->ws));
            CHECK_CLOSE(o2, o1, (size_t)4 * D, 1e-5);
            for (int d = 0; d < D; d++) assert_true(o2[(size_t)3 * D + d] == 0.0f); /* row 3, slot 1: no frames */
        }
    }
    omp_set_num_threads(saved);
    assert_int_equal(f->ws.used, 0);
    free(kc), free(vc), free(ek), free(ev), free(q), free(o1), free(o2);
}

/* The 3x3 stride-2 convs (the subsampling's conv2d with ReLU, the
 * depthwise one without) on the fast backend equal the reference bit for
 * bit. *y1, *y2: the two output buffers, (B, C, To, Fo) floats, left for
 * the caller's further checks; the caller frees them. */
static void s2_convs_equal(fixture *f, const float *x1, const float *xc, const float *w, const float *b, int B, int C,
                           int T, int F, float **y1, float **y2) {
    size_t no = (size_t)B * C * ((T - 1) / 2 + 1) * ((F - 1) / 2 + 1);
    *y1 = rnd(no), *y2 = rnd(no);
    CT_ASSERT_OK(ct_ref_conv2d_s2(f->ref, *y1, x1, w, b, B, C, T, F, CT_ACT_RELU));
    CT_ASSERT_OK(f->fast->ops->conv2d_s2(f->fast, *y2, x1, w, b, B, C, T, F, CT_ACT_RELU));
    assert_memory_equal(*y1, *y2, no * sizeof(float));
    CT_ASSERT_OK(ct_ref_dwconv2d_s2(f->ref, *y1, xc, w, b, B, C, T, F, CT_ACT_NONE));
    CT_ASSERT_OK(f->fast->ops->dwconv2d_s2(f->fast, *y2, xc, w, b, B, C, T, F, CT_ACT_NONE));
    assert_memory_equal(*y1, *y2, no * sizeof(float));
}

static void test_convs_and_elementwise(void **state) {
    fixture *f = *state;
    /* the 3x3 stride-2 convs at F = 1, 2, 3 and T = 1: the padded edges of
     * their vectorised row loops */
    const int edge[][4] = {{1, 2, 5, 1}, {1, 2, 1, 2}, {1, 3, 4, 3}, {2, 2, 3, 2}};
    for (size_t c = 0; c < sizeof edge / sizeof edge[0]; c++) {
        int B = edge[c][0], C = edge[c][1], T = edge[c][2], F = edge[c][3];
        float *x1 = rnd((size_t)B * T * F), *xc = rnd((size_t)B * C * T * F), *w = rnd((size_t)C * 9), *b = rnd(C);
        float *y1, *y2;
        s2_convs_equal(f, x1, xc, w, b, B, C, T, F, &y1, &y2);
        free(x1), free(xc), free(w), free(b), free(y1), free(y2);
    }
    const int dims[][4] = {{1, 3, 9, 8}, {2, 5, 17, 13}, {2, 4, 6, 128}};
    for (size_t c = 0; c < 3; c++) {
        int B = dims[c][0], C = dims[c][1], T = dims[c][2], F = dims[c][3];
        int Fo = (F - 1) / 2 + 1;
        float *x1 = rnd((size_t)B * T * F), *xc = rnd((size_t)B * C * T * F), *w = rnd((size_t)C * 9), *b = rnd(C);
        float *y1, *y2;
        s2_convs_equal(f, x1, xc, w, b, B, C, T, F, &y1, &y2);
        /* one output of conv2d by hand: y[0][0][1][1] uses x rows 1..3, cols 1..3 */
        CT_ASSERT_OK(ct_ref_conv2d_s2(f->ref, y1, x1, w, b, B, C, T, F, CT_ACT_NONE));
        float acc = b[0];
        for (int dt = 0; dt < 3; dt++)
            for (int df = 0; df < 3; df++) acc += w[dt * 3 + df] * x1[(1 + dt) * F + 1 + df];
        assert_float_equal(y1[1 * Fo + 1], acc, 1e-5);
        /* pointwise conv */
        int Co = C + 2;
        float *wp = rnd((size_t)Co * C), *bp = rnd(Co), *p1 = rnd((size_t)B * Co * T * F), *p2 = rnd((size_t)B * Co * T * F);
        ct_tensor wt = weight(f, CT_DTYPE_BF16, wp, Co, C);
        CT_ASSERT_OK(ct_ref_conv_pointwise(f->ref, p1, xc, &wt, bp, B, C, Co, T * F, CT_ACT_RELU, &f->ws));
        CT_ASSERT_OK(f->fast->ops->conv_pointwise(f->fast, p2, xc, &wt, bp, B, C, Co, T * F, CT_ACT_RELU, &f->ws));
        CHECK_CLOSE(p2, p1, (size_t)B * Co * T * F, 1e-5);
        ct_tensor_release(&wt);
        /* depthwise conv1d over (B, T, C) with K = 9 */
        float *w9 = rnd((size_t)F * 9), *bb = rnd(F), *d1 = rnd((size_t)B * T * F), *d2 = rnd((size_t)B * T * F);
        CT_ASSERT_OK(ct_ref_dwconv1d(f->ref, d1, x1, w9, bb, B, T, F, 9, CT_ACT_SILU));
        CT_ASSERT_OK(f->fast->ops->dwconv1d(f->fast, d2, x1, w9, bb, B, T, F, 9, CT_ACT_SILU));
        CHECK_CLOSE(d2, d1, (size_t)B * T * F, 1e-6);
        /* layer norm, GLU */
        float *g = rnd(F), *lb = rnd(F);
        CT_ASSERT_OK(ct_ref_layer_norm(f->ref, d1, x1, g, lb, B * T, F, 1e-5f));
        CT_ASSERT_OK(f->fast->ops->layer_norm(f->fast, d2, x1, g, lb, B * T, F, 1e-5f));
        assert_memory_equal(d1, d2, sizeof(float) * B * T * F);
        CT_ASSERT_OK(ct_ref_glu(f->ref, d1, x1, B * T, F / 2));
        CT_ASSERT_OK(f->fast->ops->glu(f->fast, d2, x1, B * T, F / 2));
        CHECK_CLOSE(d2, d1, (size_t)B * T * (F / 2), 1e-6);
        assert_float_equal(d1[0], x1[0] / (1.0f + expf(-x1[F / 2])), 1e-6);
        /* mask and flatten */
        int len[2] = {T / 2, 1};
        CT_ASSERT_OK(ct_ref_mask_time(f->ref, xc, len, B, C, T, F));
        for (int bb2 = 0; bb2 < B; bb2++)
            for (int t = len[bb2]; t < T; t++) assert_true(xc[(((size_t)bb2 * C + C - 1) * T + t) * F + F - 1] == 0.0f);
        float *fl = rnd((size_t)B * C * T * F);
        CT_ASSERT_OK(ct_ref_flatten_ct(f->ref, fl, xc, B, C, T, F));
        assert_true(fl[((size_t)(B - 1) * T + 1) * C * F + (size_t)(C - 1) * F + 2] ==
                    xc[(((size_t)(B - 1) * C + C - 1) * T + 1) * F + 2]);
        free(x1), free(xc), free(w), free(b), free(y1), free(y2), free(wp), free(bp), free(p1), free(p2);
        free(w9), free(bb), free(d1), free(d2), free(g), free(lb), free(fl);
    }
}

static void test_positions_embed_argmax(void **state) {
    fixture *f = *state;
    float y[5 * 4];
    CT_ASSERT_OK(ct_ref_pos_relative(f->ref, y, 3, 4));
    /* row 0 is position 2: [sin 2, cos 2, sin(2/100), cos(2/100)]; row 2 is position 0 */
    assert_float_equal(y[0], sinf(2.0f), 1e-6);
    assert_float_equal(y[1], cosf(2.0f), 1e-6);
    assert_float_equal(y[2], sinf(0.02f), 1e-6);
    assert_float_equal(y[2 * 4 + 1], 1.0f, 1e-6);
    assert_float_equal(y[4 * 4 + 0], sinf(-2.0f), 1e-6);
    float tok[3 * 2] = {1, 2, 3, 4, 5, 6}, pos[2 * 2] = {10, 20, 30, 40}, e[2 * 2];
    ct_tensor tt = weight(f, CT_DTYPE_BF16, tok, 3, 2), pt = weight(f, CT_DTYPE_F32, pos, 2, 2);
    int32_t ids[2] = {2, 0}, ps[2] = {1, 0};
    CT_ASSERT_OK(ct_ref_embed(f->ref, e, ids, ps, 2, &tt, &pt, 2));
    assert_true(e[0] == 35.0f && e[1] == 46.0f && e[2] == 11.0f && e[3] == 22.0f);
    ids[0] = 3;
    CT_ASSERT_STATUS(ct_ref_embed(f->ref, e, ids, ps, 2, &tt, &pt, 2), CT_ERR_INVALID_ARG);
    ct_tensor_release(&tt);
    ct_tensor_release(&pt);
    float x[2 * 4] = {1, 5, 5, 2, -1, -3, -1, -2};
    int32_t am[2];
    CT_ASSERT_OK(ct_ref_argmax(f->ref, am, x, 2, 4));
    assert_int_equal(am[0], 1); /* ties → lowest id */
    assert_int_equal(am[1], 0);
    float sm[2 * 3] = {1, 2, 3, -INFINITY, -INFINITY, -INFINITY};
    CT_ASSERT_OK(ct_ref_softmax(f->ref, sm, 2, 3));
    assert_float_equal(sm[2], expf(1) / (1 + expf(-1) + expf(1)), 1e-6);
    assert_true(sm[3] == 0.0f && sm[5] == 0.0f);
}

static void test_fast_expf(void **state) {
    (void)state;
    double worst = 0;
    for (float x = -87.0f; x < 88.3f; x += 0.0137f) {
        double e = fabs((double)ct_fast_expf(x) - exp((double)x)) / exp((double)x);
        if (e > worst) worst = e;
    }
    if (!(worst < 5e-7)) fail_msg("fast expf: worst relative error %.3g", worst);
    assert_true(ct_fast_expf(-INFINITY) >= 0.0f && ct_fast_expf(-INFINITY) < 1e-37f);
    assert_true(ct_fast_expf(0.0f) == 1.0f);
    /* Total over non-finite inputs (issue 10 item 4): NaN in, NaN out (UBSan
     * flagged a left shift of a negative value here before, as NaN passed
     * the clamp); +inf gives the clamp's finite maximum; quiet and
     * signalling, positive and negative NaN payloads alike. */
    assert_true(isnan(ct_fast_expf(NAN)) && isnan(ct_fast_expf(-NAN)));
    uint32_t nan_bits[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xffffffffu, 0x7fbfffffu};
    for (size_t i = 0; i < sizeof nan_bits / sizeof *nan_bits; i++) {
        float x;
        memcpy(&x, &nan_bits[i], 4);
        if (!isnan(ct_fast_expf(x))) fail_msg("fast expf of NaN 0x%08x is %g", nan_bits[i], ct_fast_expf(x));
        if (!isnan(ct_fast_silu(x)) || !isnan(ct_fast_sigmoid(x))) fail_msg("silu/sigmoid of NaN 0x%08x", nan_bits[i]);
    }
    assert_true(isfinite(ct_fast_expf(INFINITY)) && ct_fast_expf(INFINITY) > 1e38f);
    assert_true(ct_fast_silu(INFINITY) == INFINITY || ct_fast_silu(INFINITY) > 1e38f);
    assert_true(ct_fast_sigmoid(-INFINITY) < 1e-30f);
    float v[37], r[37];
    for (int i = 0; i < 37; i++) v[i] = r[i] = (float)i * 0.3f - 5.0f;
    ct_fast_bias_act(v, NULL, NULL, 1.0f, CT_ACT_SILU, 37);
    for (int i = 0; i < 37; i++) assert_float_equal(v[i], r[i] / (1.0f + expf(-r[i])), 1e-6);
}

/* Non-finite activations through the fast and reference ops (issue 10 item
 * 4): NaN propagates as NaN (never a crash, never undefined behaviour: the
 * asan build runs this under UBSan with -fno-sanitize-recover), and the
 * fast ops agree with the reference on which outputs are NaN. */
static void test_ops_on_nan_inputs(void **state) {
    fixture *f = *state;
    enum { M = 3, N = 37 };
    ct_backend *bes[2] = {f->fast, f->ref};
    float out[2][3][M * N];
    for (int k = 0; k < 2; k++) {
        float x[M * N];
        for (int i = 0; i < M * N; i++) x[i] = (float)(i % 11) * 0.7f - 3.0f;
        x[5] = NAN;                   /* row 0: one NaN */
        x[N + 3] = INFINITY;          /* row 1: +inf */
        x[N + 4] = -INFINITY;
        for (int i = 2 * N; i < 3 * N; i++) x[i] = -NAN; /* row 2: all NaN */
        memcpy(out[k][0], x, sizeof x);
        CT_ASSERT_OK(bes[k]->ops->softmax(bes[k], out[k][0], M, N));
        memcpy(out[k][1], x, sizeof x);
        CT_ASSERT_OK(bes[k]->ops->activate(bes[k], out[k][1], M * N, CT_ACT_SILU));
        CT_ASSERT_OK(bes[k]->ops->glu(bes[k], out[k][2], x, 1, (M * N - 1) / 2));
    }
    /* the NaN rows stay NaN in the softmax; SiLU(NaN) is NaN */
    for (int j = 0; j < N; j++) assert_true(isnan(out[0][0][j]) && isnan(out[0][0][2 * N + j]));
    assert_true(isnan(out[0][1][5]) && isnan(out[0][1][2 * N]));
    for (int op = 0; op < 3; op++) {
        int len = op == 2 ? (M * N - 1) / 2 : M * N;
        for (int i = 0; i < len; i++)
            /* ±inf into SiLU/GLU: inf·0 in the reference, the clamp's limit in
             * the fast path; only NaN-ness of NaN and finite inputs must agree */
            if ((op == 0 || (i != N + 3 && i != N + 4 && i + len != N + 3 && i + len != N + 4)) &&
                isnan(out[0][op][i]) != isnan(out[1][op][i]))
                fail_msg("op %d element %d: fast %g, reference %g", op, i, out[0][op][i], out[1][op][i]);
    }
}

static void test_backend_basics(void **state) {
    fixture *f = *state;
    ct_backend *be;
    CT_ASSERT_STATUS(ct_backend_create("tpu", NULL, &be), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("tpu");
    assert_int_equal(f->fast->ops->version, CT_BACKEND_VERSION);
    size_t fr = 0, tot = 0;
    CT_ASSERT_OK(f->fast->ops->memory_info(f->fast, &fr, &tot));
    assert_true(tot > 0 && fr <= tot);
    float src[3] = {1.5f, -2.25f, 3.0f};
    int64_t shape[1] = {3};
    ct_tensor t;
    CT_ASSERT_OK(ct_tensor_upload(f->fast, CT_DTYPE_F16, src, CT_DTYPE_F32, 1, shape, &t));
    assert_int_equal(t.nbytes, 6);
    float back[3];
    CT_ASSERT_OK(ct_convert_to_f32(back, t.data, t.dtype, 3));
    assert_memory_equal(back, src, sizeof src);
    ct_tensor_release(&t);
    ct_tensor_release(&t);
    ct_arena a;
    CT_ASSERT_OK(ct_backend_arena_create(f->fast, 1000, &a));
    assert_non_null(ct_arena_alloc(&a, 900));
    assert_null(ct_arena_alloc(&a, 900));
    ct_backend_arena_free(f->fast, &a);
}

/* The upload to a device (the cpu table posing as one: a stream, to_device
 * recorded): weights already in the device's type go up from where they
 * lie, with the same scan, and converted ones through a host copy; the
 * bytes on the device are the same either way. */
static ct_backend_ops g_dev_ops;
static const ct_backend_ops *g_host_ops;
static const void *g_last_src;
static void *dev_stream(ct_backend *be) {
    (void)be;
    return &g_dev_ops;
}
static ct_status dev_to_device(ct_backend *be, void *dst, const void *src, size_t bytes) {
    g_last_src = src;
    return g_host_ops->to_device(be, dst, src, bytes);
}

static void test_device_upload(void **state) {
    fixture *f = *state;
    enum { N = 300000 };
    ct_backend *be;
    CT_ASSERT_OK(ct_backend_create("cpu", NULL, &be));
    g_host_ops = be->ops;
    g_dev_ops = *be->ops;
    g_dev_ops.stream = dev_stream, g_dev_ops.to_device = dev_to_device;
    be->ops = &g_dev_ops;
    uint16_t *h = malloc(2 * N);
    float *x = malloc(4 * N);
    for (int i = 0; i < N; i++) x[i] = (float)(((int64_t)i * 7919) % 2003 - 1001) * 0.37f, h[i] = ct_f32_to_bf16(x[i]);
    h[123457] = 0x7fc0; /* a NaN */
    const int64_t shape[2] = {600, 500};
    ct_tensor t;
    int64_t bad = 7;
    CT_ASSERT_OK(ct_tensor_upload_checked(be, CT_DTYPE_BF16, h, CT_DTYPE_BF16, 2, shape, &bad, &t));
    assert_int_equal(bad, 123457);
    assert_ptr_equal(g_last_src, h); /* straight from the source, no copy */
    assert_memory_equal(t.data, h, 2 * N);
    ct_tensor_release(&t);
    CT_ASSERT_OK(ct_tensor_upload_checked(be, CT_DTYPE_BF16, x, CT_DTYPE_F32, 2, shape, &bad, &t));
    assert_int_equal(bad, -1);
    assert_true(g_last_src != (const void *)x); /* converted on the host first */
    for (int i = 0; i < N; i++)
        if (i != 123457) assert_int_equal(((const uint16_t *)t.data)[i], h[i]);
    ct_tensor_release(&t);
    free(h);
    free(x);
    be->ops = g_host_ops;
    ct_backend_free(be);
    (void)f;
}

/* Issue 16 item 4: views of host data in place, and the parallel
 * conversion with its NaN/infinity scan in the same pass. */
static void test_borrow_and_checked_upload(void **state) {
    fixture *f = *state;
    enum { N = 300000 }; /* several conversion blocks */
    float *src = malloc(sizeof(float) * (N + 1));
    assert_non_null(src);
    for (int i = 0; i < N + 1; i++) src[i] = (float)(((int64_t)i * 7919) % 2003 - 1001) * 0.37f;
    const int64_t shape[2] = {600, 500};
    ct_tensor t;
    /* same dtype, host backend, aligned: a view, not owned */
    assert_int_equal(ct_tensor_borrow(f->fast, CT_DTYPE_F32, src, CT_DTYPE_F32, 2, shape, &t), 1);
    assert_ptr_equal(t.data, src);
    assert_null(t.owner);
    assert_int_equal(t.nbytes, sizeof(float) * N);
    ct_tensor_release(&t);
    /* other dtype or misaligned: refused, the caller copies */
    memset(&t, 0x5a, sizeof t);
    assert_int_equal(ct_tensor_borrow(f->fast, CT_DTYPE_BF16, src, CT_DTYPE_F32, 2, shape, &t), 0);
    assert_int_equal(ct_tensor_borrow(f->fast, CT_DTYPE_F32, (char *)src + 2, CT_DTYPE_F32, 2, shape, &t), 0);
    /* conversion: bit-identical to the element-wise one, any thread count */
    int64_t bad = 7;
    CT_ASSERT_OK(ct_tensor_upload_checked(f->fast, CT_DTYPE_BF16, src, CT_DTYPE_F32, 2, shape, &bad, &t));
    assert_int_equal(bad, -1);
    for (int i = 0; i < N; i++) assert_int_equal(((const uint16_t *)t.data)[i], ct_f32_to_bf16(src[i]));
    ct_tensor_release(&t);
    /* the first non-finite element wins, across blocks, in each dtype */
    src[250001] = INFINITY;
    src[70000] = NAN;
    CT_ASSERT_OK(ct_tensor_upload_checked(f->fast, CT_DTYPE_BF16, src, CT_DTYPE_F32, 2, shape, &bad, &t));
    assert_int_equal(bad, 70000);
    ct_tensor_release(&t);
    assert_int_equal(ct_first_non_finite(src, CT_DTYPE_F32, N), 70000);
    assert_int_equal(ct_first_non_finite(src + 70001, CT_DTYPE_F32, N - 70001), 250001 - 70001);
    uint16_t *h = malloc(2 * N);
    assert_non_null(h);
    for (int i = 0; i < N; i++) h[i] = ct_f32_to_bf16(src[i]);
    assert_int_equal(ct_first_non_finite(h, CT_DTYPE_BF16, N), 70000);
    CT_ASSERT_OK(ct_tensor_upload_checked(f->fast, CT_DTYPE_F32, h, CT_DTYPE_BF16, 2, shape, &bad, &t));
    assert_int_equal(bad, 70000);
    for (int i = 0; i < N; i++)
        if (i != 70000) assert_true(((const float *)t.data)[i] == ct_bf16_to_f32(h[i]));
    ct_tensor_release(&t);
    src[70000] = 1.0f;
    src[250001] = 1.0f;
    assert_int_equal(ct_first_non_finite(src, CT_DTYPE_F32, N), -1);
    /* the vector scan against the plain one: every dtype, a bad element at
     * every position of a 300-element window (vector steps, step edges,
     * tail), any start alignment, NaN or infinity, and none */
    for (int dt = 0; dt < 3; dt++) {
        const ct_dtype ty = dt == 0 ? CT_DTYPE_F32 : dt == 1 ? CT_DTYPE_BF16 : CT_DTYPE_F16;
        const size_t es = ty == CT_DTYPE_F32 ? 4 : 2;
        unsigned char *buf = calloc(301, 4); /* zeros: finite in every dtype */
        for (int at = -1; at < 300; at++)
            for (int off = 0; off < 2; off++) {
                memset(buf, 0, 301 * 4);
                if (at >= 0) { /* NaN at even positions, infinity at odd ones */
                    const uint32_t fb = at % 2 ? 0x7f800000u : 0x7fc00000u;
                    const uint16_t hb = at % 2 ? 0x7f80 : 0x7fc0, hh = at % 2 ? 0x7c00 : 0x7e00;
                    if (ty == CT_DTYPE_F32) memcpy(buf + off * es + 4 * (size_t)at, &fb, 4);
                    else memcpy(buf + off * es + 2 * (size_t)at, ty == CT_DTYPE_BF16 ? &hb : &hh, 2);
                }
                const int64_t want = ct_scan_non_finite_ref(buf + off * es, ty, 300);
                assert_int_equal(want, at);
                assert_int_equal(ct_first_non_finite(buf + off * es, ty, 300), want);
                assert_int_equal(ct_first_non_finite(buf + off * es, ty, 299), at == 299 ? -1 : want);
            }
        free(buf);
    }
    /* the vectorised bf16 → f32 widening (AVX-512 16 / AVX2 8 lanes) against
     * the scalar ct_bf16_to_f32, bit for bit: every length 0..70 (vector
     * steps and tails), odd and even starts, any bit pattern (NaN payloads) */
    {
        uint16_t raw[80];
        uint32_t x = 12345u;
        for (int i = 0; i < 80; i++) raw[i] = (uint16_t)((x = x * 1664525u + 1013904223u) >> 16);
        float got[80];
        for (int off = 0; off < 2; off++)
            for (int n = 0; n <= 70; n++) {
                memset(got, 0xab, sizeof got);
                CT_ASSERT_OK(ct_convert_to_f32(got, raw + off, CT_DTYPE_BF16, (size_t)n));
                for (int i = 0; i < n; i++) {
                    const float w = ct_bf16_to_f32(raw[off + i]);
                    assert_memory_equal(&got[i], &w, 4);
                }
                uint32_t guard;
                memcpy(&guard, &got[n < 80 ? n : 79], 4);
                if (n < 80) assert_int_equal(guard, 0xabababab); /* nothing written past n */
            }
    }
    free(h);
    free(src);
}

/* The vectorised epilogue (cpu_elementwise.c, 16 lanes for SiLU, the
 * ReLU and linear loops specialised by whether bias and residual exist;
 * AVX2/AVX-512 clones) equals the scalar formula bit for bit, at every tail
 * length, for every activation, with and without bias and residual. */
static void test_bias_act_lanes(void **state) {
    (void)state;
    const int lens[] = {1, 7, 15, 16, 17, 31, 33, 1000};
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        const int n = lens[li];
        float *y = rnd((size_t)n), *b = rnd((size_t)n), *r = rnd((size_t)n), *want = malloc(sizeof(float) * (size_t)n);
        for (int i = 0; i < n; i++) y[i] *= 12.0f; /* both tails of the sigmoid */
        for (int act = 0; act < 3; act++)
            for (int mode = 0; mode < 4; mode++) {
                const float *bb = mode & 1 ? b : NULL, *rr = mode & 2 ? r : NULL;
                float *got = malloc(sizeof(float) * (size_t)n);
                memcpy(got, y, sizeof(float) * (size_t)n);
                for (int i = 0; i < n; i++) {
                    float v = y[i] + (bb ? bb[i] : 0.0f);
                    if (act == 2) v = ct_fast_silu(v);
                    else if (act == 1) v = v > 0.0f ? v : 0.0f;
                    want[i] = 0.5f * v + (rr ? rr[i] : 0.0f);
                }
                ct_fast_bias_act(got, bb, rr, 0.5f, act, n);
                if (memcmp(got, want, sizeof(float) * (size_t)n))
                    fail_msg("act %d, bias %d, residual %d, n %d: differs from the scalar formula", act, mode & 1,
                             mode >> 1, n);
                free(got);
            }
        free(y), free(b), free(r), free(want);
    }
}

/* The vectorised f32 → bf16 conversion equals ct_f32_to_bf16 bit for bit:
 * random values, rounding ties (odd and even), NaNs (quieted), infinities,
 * denormals (kept, unlike vcvtneps2bf16), at every tail length. */
static void test_f32_to_bf16_lanes(void **state) {
    (void)state;
    const size_t n = 1000;
    uint32_t *u = malloc(sizeof(uint32_t) * n);
    uint64_t st = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        u[i] = (uint32_t)(st >> 32);
    }
    const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x7fc00001u, 0xff800001u, 0x7f800000u, 0xff800000u,
                                0x00000001u, 0x807fffffu, 0x00008000u, 0x7f7fffffu, 0x80000000u, 0x00000000u};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) u[3 * i + 5] = special[i];
    const size_t lens[] = {1, 15, 16, 17, 33, 1000};
    uint16_t *got = malloc(2 * n), *want = malloc(2 * n);
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        float *x = (float *)(void *)u;
        for (size_t i = 0; i < lens[li]; i++) want[i] = ct_f32_to_bf16(x[i]);
        ct_fast_f32_to_bf16(got, x, lens[li]);
        assert_memory_equal(got, want, 2 * lens[li]);
    }
    free(u), free(got), free(want);
}

/* The version-5 fused references (ref_fused.c) against the ops they fuse:
 * the LN pair and GLU + mask + depthwise conv are those compositions, bit
 * for bit; attention over the packed q̃|k|v with q̃ = q + u and c = vb − u
 * is attn_relpos with u and vb, up to the rounding of the sums. */
static void test_fused_refs(void **state) {
    fixture *f = *state;
    const int B = 2, T = 19, H = 2, Dh = 8, D = H * Dh, K = 5;
    const size_t n = (size_t)B * T * D;
    int len[2] = {T, 11};
    /* layer_norm2 = layer_norm, then layer_norm of its output */
    float *x = rnd(n), *g1 = rnd(D), *b1 = rnd(D), *g2 = rnd(D), *b2 = rnd(D);
    float *y = malloc(sizeof(float) * n), *z = malloc(sizeof(float) * n), *y2 = malloc(sizeof(float) * n),
          *z2 = malloc(sizeof(float) * n);
    CT_ASSERT_OK(ct_ref_layer_norm2(f->ref, ct_buf_f32(y), ct_buf_f32(z), ct_buf_f32(x), g1, b1, g2, b2, B * T, D, 1e-5f));
    CT_ASSERT_OK(ct_ref_layer_norm(f->ref, y2, x, g1, b1, B * T, D, 1e-5f));
    CT_ASSERT_OK(ct_ref_layer_norm(f->ref, z2, y2, g2, b2, B * T, D, 1e-5f));
    assert_memory_equal(y, y2, sizeof(float) * n);
    assert_memory_equal(z, z2, sizeof(float) * n);
    /* glu_dwconv1d = glu, mask_time, dwconv1d */
    float *h = rnd(2 * n), *w = rnd((size_t)D * K), *b = rnd(D), *gl = malloc(sizeof(float) * n);
    CT_ASSERT_OK(ct_ref_glu_dwconv1d(f->ref, ct_buf_f32(y), ct_buf_f32(h), w, b, len, B, T, D, K, CT_ACT_SILU, &f->ws));
    CT_ASSERT_OK(ct_ref_glu(f->ref, gl, h, B * T, D));
    CT_ASSERT_OK(ct_ref_mask_time(f->ref, gl, len, B, 1, T, D));
    CT_ASSERT_OK(ct_ref_dwconv1d(f->ref, y2, gl, w, b, B, T, D, K, CT_ACT_SILU));
    assert_memory_equal(y, y2, sizeof(float) * n);
    /* attn_relpos_qkv on [q + u | k | v] with c = vb − u */
    float *q = rnd(n), *k = rnd(n), *v = rnd(n), *p = rnd((size_t)(2 * T - 1) * D), *u = rnd(D), *vb = rnd(D);
    float *qkv = malloc(sizeof(float) * 3 * n), *c = malloc(sizeof(float) * D);
    for (size_t r = 0; r < (size_t)B * T; r++)
        for (int e = 0; e < D; e++) {
            qkv[r * 3 * D + e] = q[r * D + e] + u[e];
            qkv[r * 3 * D + D + e] = k[r * D + e];
            qkv[r * 3 * D + 2 * D + e] = v[r * D + e];
        }
    for (int e = 0; e < D; e++) c[e] = vb[e] - u[e];
    CT_ASSERT_OK(ct_ref_attn_relpos_qkv(f->ref, ct_buf_f32(y), ct_buf_f32(qkv), ct_buf_f32(p), c, len, B, T, H, Dh,
                                        &f->ws));
    CT_ASSERT_OK(ct_ref_attn_relpos(f->ref, y2, q, k, v, p, u, vb, len, B, T, H, Dh, &f->ws));
    CHECK_CLOSE(y, y2, n, 1e-5);
    assert_int_equal(f->ws.used, 0);
    free(x), free(g1), free(b1), free(g2), free(b2), free(y), free(z), free(y2), free(z2);
    free(h), free(w), free(b), free(gl), free(q), free(k), free(v), free(p), free(u), free(vb), free(qkv), free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_refs),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_matmul_bf16_fused),
        cmocka_unit_test(test_bias_act_lanes),
        cmocka_unit_test(test_f32_to_bf16_lanes),
        cmocka_unit_test(test_borrow_and_checked_upload),
        cmocka_unit_test(test_device_upload),
        cmocka_unit_test(test_matmul_known_values),
        cmocka_unit_test(test_attn_relpos),
        cmocka_unit_test(test_decoder_attention),
        cmocka_unit_test(test_decoder_attention_split),
        cmocka_unit_test(test_convs_and_elementwise),
        cmocka_unit_test(test_positions_embed_argmax),
        cmocka_unit_test(test_fast_expf),
        cmocka_unit_test(test_backend_basics),
        cmocka_unit_test(test_ops_on_nan_inputs),
    };
    return cmocka_run_group_tests(tests, ct_test_backends_setup, ct_test_backends_teardown);
}
