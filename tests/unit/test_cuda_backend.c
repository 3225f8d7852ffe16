/* test_cuda_backend.c — every op of the "cuda" backend table against the
 * cpu-ref op of the same name (compute/ops.h), on random inputs rounded to
 * the element type under test, with poisoned (NaN) outputs so an unwritten
 * element fails: bf16 and f16 activations for all ops, float32 too for the
 * ops whose kernels take it. Without a CUDA build or device every test is
 * skipped with a visible message (CT_REQUIRE_GPU=1, a test hook for the GPU
 * machine, makes that a failure); with a device they must pass.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/ops.h"
#include "compute/ref/ops_ref.h"
#include "core/dtype.h"
#include "testutil.h"

static ct_backend *g_ref, *g_cu, *g_cu_simple;
static unsigned g_seed = 4242;

/* testutil.h's random data on this test's seed (the same stream as before) */
static float round_to(ct_dtype dt, float x) { return ct_test_round_to(dt, x); }
static float *rnd(ct_dtype dt, size_t n, float scale) { return ct_test_rnd_in(&g_seed, dt, n, scale); }

/* ---- device buffers ---------------------------------------------------- */
/* testutil.h's device buffers on the cuda backend under test */
static ct_buf dput(ct_dtype dt, const float *x, size_t n) { return ct_test_dput(g_cu, dt, x, n); }
static ct_buf dpoison(ct_dtype dt, size_t n) { return ct_test_dpoison(g_cu, dt, n); }
static float *dget(ct_buf b, size_t n) { return ct_test_dget(g_cu, b, n); }
static void dfree(ct_buf b) { g_cu->ops->free(g_cu, b.data); }
static float *dvec(const float *x, size_t n) { return (float *)dput(CT_DTYPE_F32, x, n).data; } /* params */

/* tolerance on relative L2 for outputs stored in dt (and inputs rounded to it) */
static double tol_for(ct_dtype dt) { return dt == CT_DTYPE_F32 ? 2e-5 : dt == CT_DTYPE_F16 ? 3e-3 : 1.5e-2; }

static void expect_close(const char *what, ct_dtype dt, const float *got, const float *ref, size_t n, double tol) {
    for (size_t i = 0; i < n; i++)
        if (isnan(got[i]) != isnan(ref[i]) || (!isnan(ref[i]) && !isfinite(got[i])))
            fail_msg("%s (%s): element %zu is %g, reference %g (unwritten?)", what, ct_dtype_name(dt), i, got[i], ref[i]);
    double e = ct_rel_l2(got, ref, n);
    printf("  %-30s %-4s n=%-8zu rel L2 %.3g (tol %.1e)\n", what, ct_dtype_name(dt), n, e, tol);
    if (!(e <= tol)) fail_msg("%s (%s): rel L2 %.3g > %.1e", what, ct_dtype_name(dt), e, tol);
}

static ct_arena g_ws_ref, g_ws_cu;

static const ct_dtype ACT16[] = {CT_DTYPE_BF16, CT_DTYPE_F16};
static const ct_dtype ALL3[] = {CT_DTYPE_F32, CT_DTYPE_BF16, CT_DTYPE_F16};

/* ---- dense ----------------------------------------------------------------- */
static void check_matmul(ct_dtype dt, int M, int N, int K, ct_act act, float alpha, int residual, int out_f32,
                         int bias) {
    float *x = rnd(dt, (size_t)M * K, 1.f), *w = rnd(dt, (size_t)N * K, 0.2f), *b = rnd(CT_DTYPE_F32, N, 1.f);
    ct_dtype yt = (residual || out_f32) ? CT_DTYPE_F32 : dt;
    float *r = rnd(yt, (size_t)M * N, 1.f);
    int64_t shape[2] = {N, K};
    ct_tensor wr, wc;
    CT_ASSERT_OK(ct_tensor_upload(g_ref, CT_DTYPE_F32, w, CT_DTYPE_F32, 2, shape, &wr));
    CT_ASSERT_OK(ct_tensor_upload(g_cu, dt, w, CT_DTYPE_F32, 2, shape, &wc));
    float *yr = malloc(sizeof(float) * (size_t)M * N);
    if (residual) memcpy(yr, r, sizeof(float) * (size_t)M * N);
    CT_ASSERT_OK(ct_op_matmul(g_ref, ct_buf_f32(yr), ct_buf_f32(x), &wr, bias ? b : NULL,
                              residual ? ct_buf_f32(yr) : CT_BUF_NONE, alpha, act, M, N, K, &g_ws_ref));
    ct_buf dy = residual ? dput(yt, r, (size_t)M * N) : dpoison(yt, (size_t)M * N), dx = dput(dt, x, (size_t)M * K);
    float *db = bias ? dvec(b, N) : NULL;
    CT_ASSERT_OK(ct_op_matmul(g_cu, dy, dx, &wc, db, residual ? dy : CT_BUF_NONE, alpha, act, M, N, K, &g_ws_cu));
    assert_int_equal(g_ws_cu.used, 0);
    float *got = dget(dy, (size_t)M * N);
    char what[96];
    snprintf(what, sizeof what, "matmul %dx%dx%d act%d a%.1f%s%s", M, N, K, (int)act, alpha, residual ? " +res" : "",
             bias ? " +b" : "");
    expect_close(what, dt, got, yr, (size_t)M * N, yt == CT_DTYPE_F32 && residual ? 2e-3 : tol_for(dt));
    free(got);
    free(x), free(w), free(b), free(r), free(yr);
    dfree(dy), dfree(dx);
    if (db) g_cu->ops->free(g_cu, db);
    ct_tensor_release(&wr);
    ct_tensor_release(&wc);
}

static void test_matmul(void **state) {
    (void)state;
    for (int i = 0; i < 2; i++) {
        ct_dtype dt = ACT16[i];
        check_matmul(dt, 77, 96, 136, CT_ACT_NONE, 1.f, 0, 0, 1);
        check_matmul(dt, 77, 96, 136, CT_ACT_RELU, 1.f, 0, 0, 1);
        check_matmul(dt, 64, 200, 72, CT_ACT_SILU, 1.f, 0, 0, 1); /* SiLU pass, 16-byte vectors */
        check_matmul(dt, 20, 100, 40, CT_ACT_SILU, 1.f, 0, 0, 1); /* ... one element per thread */
        check_matmul(dt, 33, 64, 48, CT_ACT_NONE, 0.5f, 1, 1, 1); /* FF: x += 0.5·(hW + b) */
        check_matmul(dt, 33, 64, 48, CT_ACT_NONE, 1.f, 1, 1, 1);
        check_matmul(dt, 5, 300, 64, CT_ACT_NONE, 1.f, 0, 1, 1); /* logits */
        check_matmul(dt, 9, 40, 32, CT_ACT_NONE, 1.f, 0, 0, 0);  /* no bias */
        /* a 16-bit output with alpha ≠ 1: the bias converted and scaled (the
         * path taken where cuBLASLt has no fp32-bias kernel), kept per bias */
        check_matmul(dt, 33, 64, 48, CT_ACT_NONE, 0.5f, 0, 0, 1);
        /* SiLU over a large block: the grid-stride pass, a partial last
         * round (129 vectors a row: some threads take one vector, not two) */
        check_matmul(dt, 520, 1032, 64, CT_ACT_SILU, 1.f, 0, 0, 1);
    }
    /* float32 activations are refused with a message, not computed wrong */
    ct_buf y = dpoison(CT_DTYPE_F32, 4), x = dpoison(CT_DTYPE_F32, 4);
    ct_tensor w;
    float wv[4] = {1, 2, 3, 4};
    int64_t shape[2] = {2, 2};
    CT_ASSERT_OK(ct_tensor_upload(g_cu, CT_DTYPE_BF16, wv, CT_DTYPE_F32, 2, shape, &w));
    CT_ASSERT_STATUS(ct_op_matmul(g_cu, y, x, &w, NULL, CT_BUF_NONE, 1.f, CT_ACT_NONE, 2, 2, 2, &g_ws_cu),
                     CT_ERR_UNSUPPORTED);
    CT_ASSERT_ERROR_HAS("activation type");
    ct_tensor_release(&w);
    dfree(y), dfree(x);
}

/* The kept bias conversion (cuda_ops_gemm.cu) follows its source: the same
 * bias pointer with new contents (to_device) gives the new result. */
static void test_bias_kept(void **state) {
    (void)state;
    const int M = 9, N = 40, K = 32;
    ct_dtype dt = CT_DTYPE_BF16;
    float *x = rnd(dt, (size_t)M * K, 1.f), *w = rnd(dt, (size_t)N * K, 0.2f), *b = rnd(CT_DTYPE_F32, N, 1.f);
    int64_t shape[2] = {N, K};
    ct_tensor wr, wc;
    CT_ASSERT_OK(ct_tensor_upload(g_ref, CT_DTYPE_F32, w, CT_DTYPE_F32, 2, shape, &wr));
    CT_ASSERT_OK(ct_tensor_upload(g_cu, dt, w, CT_DTYPE_F32, 2, shape, &wc));
    ct_buf dx = dput(dt, x, (size_t)M * K), dy = dpoison(dt, (size_t)M * N);
    float *db = dvec(b, N), *yr = malloc(sizeof(float) * (size_t)M * N);
    for (int round = 0; round < 2; round++) {
        if (round) { /* new values at the same address */
            for (int j = 0; j < N; j++) b[j] = 3.f - b[j];
            CT_ASSERT_OK(g_cu->ops->to_device(g_cu, db, b, sizeof(float) * N));
        }
        CT_ASSERT_OK(ct_op_matmul(g_ref, ct_buf_f32(yr), ct_buf_f32(x), &wr, b, CT_BUF_NONE, 0.5f, CT_ACT_NONE, M, N, K,
                                  &g_ws_ref));
        CT_ASSERT_OK(ct_op_matmul(g_cu, dy, dx, &wc, db, CT_BUF_NONE, 0.5f, CT_ACT_NONE, M, N, K, &g_ws_cu));
        float *got = dget(dy, (size_t)M * N);
        expect_close(round ? "matmul, bias rewritten" : "matmul, bias kept", dt, got, yr, (size_t)M * N, tol_for(dt));
        free(got);
    }
    free(x), free(w), free(b), free(yr);
    dfree(dx), dfree(dy);
    g_cu->ops->free(g_cu, db);
    ct_tensor_release(&wr);
    ct_tensor_release(&wc);
}

static void test_conv_pointwise(void **state) {
    (void)state;
    for (int i = 0; i < 2; i++) {
        ct_dtype dt = ACT16[i];
        /* per-channel bias: one element, 16-byte vectors, the grid-stride pass */
        static const int Ps[3] = {57, 64, 4104};
        for (int pi = 0; pi < 3; pi++) {
        int P = Ps[pi];
        int B = 2, Ci = 24, Co = 64;
        float *x = rnd(dt, (size_t)B * Ci * P, 1.f), *w = rnd(dt, (size_t)Co * Ci, 0.3f), *b = rnd(CT_DTYPE_F32, Co, 1.f);
        int64_t shape[2] = {Co, Ci};
        ct_tensor wr, wc;
        CT_ASSERT_OK(ct_tensor_upload(g_ref, CT_DTYPE_F32, w, CT_DTYPE_F32, 2, shape, &wr));
        CT_ASSERT_OK(ct_tensor_upload(g_cu, dt, w, CT_DTYPE_F32, 2, shape, &wc));
        float *yr = malloc(sizeof(float) * (size_t)B * Co * P);
        CT_ASSERT_OK(ct_op_conv_pointwise(g_ref, ct_buf_f32(yr), ct_buf_f32(x), &wr, b, B, Ci, Co, P, CT_ACT_RELU,
                                          &g_ws_ref));
        ct_buf dy = dpoison(dt, (size_t)B * Co * P), dx = dput(dt, x, (size_t)B * Ci * P);
        float *db = dvec(b, Co);
        CT_ASSERT_OK(ct_op_conv_pointwise(g_cu, dy, dx, &wc, db, B, Ci, Co, P, CT_ACT_RELU, &g_ws_cu));
        float *got = dget(dy, (size_t)B * Co * P);
        expect_close("conv_pointwise relu", dt, got, yr, (size_t)B * Co * P, tol_for(dt));
        free(got), free(x), free(w), free(b), free(yr);
        dfree(dy), dfree(dx);
        g_cu->ops->free(g_cu, db);
        ct_tensor_release(&wr);
        ct_tensor_release(&wc);
        }
    }
}

static void check_layer_norm(int M, int D) {
    float *x = rnd(CT_DTYPE_F32, (size_t)M * D, 2.f), *g = rnd(CT_DTYPE_F32, D, 1.f), *b = rnd(CT_DTYPE_F32, D, 1.f);
    for (size_t i = 0; i < (size_t)M * D; i++) x[i] += 0.5f; /* a mean to remove */
    float *yr = malloc(sizeof(float) * (size_t)M * D);
    CT_ASSERT_OK(ct_op_layer_norm(g_ref, ct_buf_f32(yr), ct_buf_f32(x), g, b, M, D, 1e-5f));
    float *dg = dvec(g, D), *dbv = dvec(b, D);
    for (int i = 0; i < 3; i++) { /* f32 stream → act (or f32) */
        ct_dtype dt = ALL3[i];
        ct_buf dx = dput(CT_DTYPE_F32, x, (size_t)M * D), dy = dpoison(dt, (size_t)M * D);
        CT_ASSERT_OK(ct_op_layer_norm(g_cu, dy, dx, dg, dbv, M, D, 1e-5f));
        float *got = dget(dy, (size_t)M * D);
        expect_close("layer_norm f32 ->", dt, got, yr, (size_t)M * D, tol_for(dt));
        free(got);
        dfree(dx), dfree(dy);
    }
    /* in place on the float32 stream */
    ct_buf dx = dput(CT_DTYPE_F32, x, (size_t)M * D);
    CT_ASSERT_OK(ct_op_layer_norm(g_cu, dx, dx, dg, dbv, M, D, 1e-5f));
    float *got = dget(dx, (size_t)M * D);
    expect_close("layer_norm in place", CT_DTYPE_F32, got, yr, (size_t)M * D, 2e-5);
    free(got), free(x), free(g), free(b), free(yr);
    dfree(dx);
    g_cu->ops->free(g_cu, dg);
    g_cu->ops->free(g_cu, dbv);
}

static void test_layer_norm(void **state) {
    (void)state;
    check_layer_norm(37, 200);  /* the kernel's row-in-registers variants: 2, 6 and 16 per thread */
    check_layer_norm(9, 1280);
    check_layer_norm(5, 1700);
}

static void test_glu_convert(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        ct_dtype dt = ALL3[i];
        int M = 19, D = 70;
        float *x = rnd(dt, (size_t)M * 2 * D, 3.f), *yr = malloc(sizeof(float) * (size_t)M * D);
        CT_ASSERT_OK(ct_op_glu(g_ref, ct_buf_f32(yr), ct_buf_f32(x), M, D));
        ct_buf dx = dput(dt, x, (size_t)M * 2 * D), dy = dpoison(dt, (size_t)M * D);
        CT_ASSERT_OK(ct_op_glu(g_cu, dy, dx, M, D));
        float *got = dget(dy, (size_t)M * D);
        expect_close("glu", dt, got, yr, (size_t)M * D, tol_for(dt));
        /* convert: f32 → dt rounds to nearest even, as the host conversion */
        float *f = rnd(CT_DTYPE_F32, 1000, 10.f), *fr = malloc(sizeof(float) * 1000);
        for (int k = 0; k < 1000; k++) fr[k] = round_to(dt, f[k]);
        ct_buf df = dput(CT_DTYPE_F32, f, 1000), dc = dpoison(dt, 1000);
        CT_ASSERT_OK(ct_op_convert(g_cu, dc, df, 1000));
        float *gc = dget(dc, 1000);
        for (int k = 0; k < 1000; k++)
            if (gc[k] != fr[k]) fail_msg("convert to %s: %g -> %g, host %g", ct_dtype_name(dt), f[k], gc[k], fr[k]);
        free(gc), free(f), free(fr), free(got), free(x), free(yr);
        dfree(dx), dfree(dy), dfree(df), dfree(dc);
    }
}

/* ---- subsampling convolutions --------------------------------------------- */
static void test_convs(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        ct_dtype dt = ALL3[i];
        int B = 2, C = 6, T = 23, F = 17, To = (T - 1) / 2 + 1, Fo = (F - 1) / 2 + 1;
        float *w = rnd(CT_DTYPE_F32, (size_t)C * 9, 0.5f), *b = rnd(CT_DTYPE_F32, C, 0.5f);
        float *dw = dvec(w, (size_t)C * 9), *db = dvec(b, C);
        /* conv2d_s2: f32 features → act */
        float *x = rnd(CT_DTYPE_F32, (size_t)B * T * F, 1.f), *yr = malloc(sizeof(float) * (size_t)B * C * To * Fo);
        CT_ASSERT_OK(ct_op_conv2d_s2(g_ref, ct_buf_f32(yr), ct_buf_f32(x), w, b, B, C, T, F, CT_ACT_RELU));
        ct_buf dx = dput(CT_DTYPE_F32, x, (size_t)B * T * F), dy = dpoison(dt, (size_t)B * C * To * Fo);
        CT_ASSERT_OK(ct_op_conv2d_s2(g_cu, dy, dx, dw, db, B, C, T, F, CT_ACT_RELU));
        float *got = dget(dy, (size_t)B * C * To * Fo);
        expect_close("conv2d_s2 relu", dt, got, yr, (size_t)B * C * To * Fo, tol_for(dt));
        free(got), free(x), free(yr);
        dfree(dx), dfree(dy);
        /* dwconv2d_s2 */
        x = rnd(dt, (size_t)B * C * T * F, 1.f);
        yr = malloc(sizeof(float) * (size_t)B * C * To * Fo);
        CT_ASSERT_OK(ct_op_dwconv2d_s2(g_ref, ct_buf_f32(yr), ct_buf_f32(x), w, b, B, C, T, F, CT_ACT_NONE));
        dx = dput(dt, x, (size_t)B * C * T * F), dy = dpoison(dt, (size_t)B * C * To * Fo);
        CT_ASSERT_OK(ct_op_dwconv2d_s2(g_cu, dy, dx, dw, db, B, C, T, F, CT_ACT_NONE));
        got = dget(dy, (size_t)B * C * To * Fo);
        expect_close("dwconv2d_s2", dt, got, yr, (size_t)B * C * To * Fo, tol_for(dt));
        free(got), free(yr);
        /* mask_time then flatten_ct, on the conv's input */
        int len[2] = {T - 5, 0};
        float *m = malloc(sizeof(float) * (size_t)B * C * T * F);
        memcpy(m, x, sizeof(float) * (size_t)B * C * T * F);
        CT_ASSERT_OK(ct_op_mask_time(g_ref, ct_buf_f32(m), len, B, C, T, F));
        CT_ASSERT_OK(ct_op_mask_time(g_cu, dx, len, B, C, T, F));
        float *fr = malloc(sizeof(float) * (size_t)B * C * T * F);
        CT_ASSERT_OK(ct_op_flatten_ct(g_ref, ct_buf_f32(fr), ct_buf_f32(m), B, C, T, F));
        ct_buf dfl = dpoison(dt, (size_t)B * C * T * F);
        CT_ASSERT_OK(ct_op_flatten_ct(g_cu, dfl, dx, B, C, T, F));
        got = dget(dfl, (size_t)B * C * T * F);
        for (size_t k = 0; k < (size_t)B * C * T * F; k++) /* pure data movement: exact */
            if (got[k] != fr[k]) fail_msg("mask_time+flatten_ct (%s): element %zu %g != %g", ct_dtype_name(dt), k, got[k], fr[k]);
        free(got), free(fr), free(m), free(x);
        dfree(dx), dfree(dy), dfree(dfl);
        /* dwconv1d + SiLU over (B, T, C), kernel 9 */
        int K = 9, Cd = 33;
        float *w1 = rnd(CT_DTYPE_F32, (size_t)Cd * K, 0.4f), *b1 = rnd(CT_DTYPE_F32, Cd, 0.4f);
        float *dw1 = dvec(w1, (size_t)Cd * K), *db1 = dvec(b1, Cd);
        x = rnd(dt, (size_t)B * T * Cd, 1.f);
        yr = malloc(sizeof(float) * (size_t)B * T * Cd);
        CT_ASSERT_OK(ct_op_dwconv1d(g_ref, ct_buf_f32(yr), ct_buf_f32(x), w1, b1, B, T, Cd, K, CT_ACT_SILU));
        dx = dput(dt, x, (size_t)B * T * Cd), dy = dpoison(dt, (size_t)B * T * Cd);
        CT_ASSERT_OK(ct_op_dwconv1d(g_cu, dy, dx, dw1, db1, B, T, Cd, K, CT_ACT_SILU));
        got = dget(dy, (size_t)B * T * Cd);
        expect_close("dwconv1d silu", dt, got, yr, (size_t)B * T * Cd, tol_for(dt));
        free(got), free(x), free(yr), free(w1), free(b1), free(w), free(b);
        dfree(dx), dfree(dy);
        g_cu->ops->free(g_cu, dw), g_cu->ops->free(g_cu, db), g_cu->ops->free(g_cu, dw1), g_cu->ops->free(g_cu, db1);
    }
}

/* ---- positions, embeddings, argmax --------------------------------------- */
static void test_pos_embed_argmax(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        ct_dtype dt = ALL3[i];
        int T = 40, D = 64;
        float *yr = malloc(sizeof(float) * (size_t)(2 * T - 1) * D);
        CT_ASSERT_OK(ct_op_pos_relative(g_ref, ct_buf_f32(yr), T, D));
        ct_buf dy = dpoison(dt, (size_t)(2 * T - 1) * D);
        CT_ASSERT_OK(ct_op_pos_relative(g_cu, dy, T, D));
        float *got = dget(dy, (size_t)(2 * T - 1) * D);
        expect_close("pos_relative", dt, got, yr, (size_t)(2 * T - 1) * D, dt == CT_DTYPE_F32 ? 1e-6 : tol_for(dt));
        free(got), free(yr);
        dfree(dy);
        /* embed: tables in dt on the device, the same values in f32 on the reference */
        int V = 50, P = 20, n = 7, Dm = 48;
        float *tok = rnd(dt, (size_t)V * Dm, 1.f), *pos = rnd(dt, (size_t)P * Dm, 1.f);
        int64_t ts[2] = {V, Dm}, ps[2] = {P, Dm};
        ct_tensor tr, pr, tc, pc;
        CT_ASSERT_OK(ct_tensor_upload(g_ref, CT_DTYPE_F32, tok, CT_DTYPE_F32, 2, ts, &tr));
        CT_ASSERT_OK(ct_tensor_upload(g_ref, CT_DTYPE_F32, pos, CT_DTYPE_F32, 2, ps, &pr));
        CT_ASSERT_OK(ct_tensor_upload(g_cu, dt, tok, CT_DTYPE_F32, 2, ts, &tc));
        CT_ASSERT_OK(ct_tensor_upload(g_cu, dt, pos, CT_DTYPE_F32, 2, ps, &pc));
        int32_t ids[7] = {0, 49, 3, 3, 17, 22, 8}, positions[7] = {0, 1, 2, 19, 5, 5, 11};
        float *er = malloc(sizeof(float) * (size_t)n * Dm);
        CT_ASSERT_OK(ct_op_embed(g_ref, ct_buf_f32(er), ids, positions, n, &tr, &pr, Dm));
        ct_buf de = dpoison(CT_DTYPE_F32, (size_t)n * Dm);
        CT_ASSERT_OK(ct_op_embed(g_cu, de, ids, positions, n, &tc, &pc, Dm));
        got = dget(de, (size_t)n * Dm);
        expect_close("embed", dt, got, er, (size_t)n * Dm, 1e-6);
        ids[2] = V; /* out of range: refused as on the reference */
        CT_ASSERT_STATUS(ct_op_embed(g_cu, de, ids, positions, n, &tc, &pc, Dm), CT_ERR_INVALID_ARG);
        free(got), free(er), free(tok), free(pos);
        dfree(de);
        ct_tensor_release(&tr), ct_tensor_release(&pr), ct_tensor_release(&tc), ct_tensor_release(&pc);
    }
    /* argmax: ties to the lowest id, the first NaN wins, as the reference */
    int n = 5, N = 1000;
    float *x = rnd(CT_DTYPE_F32, (size_t)n * N, 1.f);
    x[0 * N + 900] = 5.f, x[0 * N + 300] = 5.f;        /* tie: 300 */
    x[1 * N + 999] = 7.f;                               /* last */
    x[2 * N + 10] = NAN, x[2 * N + 500] = NAN;          /* first NaN: 10 */
    for (int j = 0; j < N; j++) x[3 * N + j] = -INFINITY; /* all -inf: 0 */
    x[4 * N + 0] = 3.f;                                 /* first */
    int32_t ir[5], ic[5];
    CT_ASSERT_OK(ct_op_argmax(g_ref, ir, ct_buf_f32(x), n, N));
    ct_buf dx = dput(CT_DTYPE_F32, x, (size_t)n * N);
    CT_ASSERT_OK(ct_op_argmax(g_cu, ic, dx, n, N));
    for (int r = 0; r < n; r++) assert_int_equal(ic[r], ir[r]);
    assert_int_equal(ir[0], 300);
    assert_int_equal(ir[2], 10);
    free(x);
    dfree(dx);
}

/* ---- attention ----------------------------------------------------------- */
static void test_decoder_attention(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        ct_dtype dt = ALL3[i];
        int slots = 4, Smax = 24, H = 4, Dh = 32, D = H * Dh, Tenc = 37;
        int slot_p[4] = {0, 1, 2, 3}, slot_s[3] = {3, 0, 2}; /* a step without row 1, rows out of order */
        size_t csz = (size_t)slots * Smax * D;
        float *kc = calloc(csz, sizeof(float)), *vc = calloc(csz, sizeof(float));
        ct_buf dkc = dput(dt, kc, csz), dvc = dput(dt, vc, csz);
        /* prompt step S = 5 for all slots, then one step S = 1 at pos0 = 5 for three */
        for (int step = 0; step < 2; step++) {
            int n = step ? 3 : 4, S = step ? 1 : 5, pos0 = step ? 5 : 0;
            const int *slot = step ? slot_s : slot_p;
            size_t m = (size_t)n * S * D;
            float *k = rnd(dt, m, 1.f), *v = rnd(dt, m, 1.f), *q = rnd(dt, m, 1.f), *orf = malloc(sizeof(float) * m);
            CT_ASSERT_OK(ct_op_kv_write(g_ref, ct_buf_f32(kc), ct_buf_f32(k), slot, n, S, pos0, Smax, D));
            CT_ASSERT_OK(ct_op_kv_write(g_ref, ct_buf_f32(vc), ct_buf_f32(v), slot, n, S, pos0, Smax, D));
            CT_ASSERT_OK(ct_op_attn_causal(g_ref, ct_buf_f32(orf), ct_buf_f32(q), ct_buf_f32(kc), ct_buf_f32(vc), slot, n,
                                           S, pos0, Smax, H, Dh, &g_ws_ref));
            ct_buf dk = dput(dt, k, m), dv = dput(dt, v, m), dq = dput(dt, q, m), dout = dpoison(dt, m);
            CT_ASSERT_OK(ct_op_kv_write(g_cu, dkc, dk, slot, n, S, pos0, Smax, D));
            CT_ASSERT_OK(ct_op_kv_write(g_cu, dvc, dv, slot, n, S, pos0, Smax, D));
            CT_ASSERT_OK(ct_op_attn_causal(g_cu, dout, dq, dkc, dvc, slot, n, S, pos0, Smax, H, Dh, &g_ws_cu));
            float *got = dget(dout, m);
            expect_close(step ? "attn_causal step" : "attn_causal prompt", dt, got, orf, m, tol_for(dt));
            float *gk = dget(dkc, csz); /* the cache itself, positions written so far */
            expect_close("kv_write cache", dt, gk, kc, csz, dt == CT_DTYPE_F32 ? 0 : 1e-12);
            free(gk), free(got), free(k), free(v), free(q), free(orf);
            dfree(dk), dfree(dv), dfree(dq), dfree(dout);
        }
        /* cross-attention with one slot of no frames (all masked: zeros) */
        int enc_len[4] = {37, 10, 0, 1};
        size_t esz = (size_t)slots * Tenc * D, m = (size_t)3 * D;
        float *ek = rnd(dt, esz, 1.f), *ev = rnd(dt, esz, 1.f), *q = rnd(dt, m, 1.f), *orf = malloc(sizeof(float) * m);
        CT_ASSERT_OK(ct_op_attn_cross(g_ref, ct_buf_f32(orf), ct_buf_f32(q), ct_buf_f32(ek), ct_buf_f32(ev), slot_s,
                                      enc_len, 3, 1, Tenc, H, Dh, &g_ws_ref));
        ct_buf dek = dput(dt, ek, esz), dev = dput(dt, ev, esz), dq = dput(dt, q, m), dout = dpoison(dt, m);
        CT_ASSERT_OK(ct_op_attn_cross(g_cu, dout, dq, dek, dev, slot_s, enc_len, 3, 1, Tenc, H, Dh, &g_ws_cu));
        float *got = dget(dout, m);
        expect_close("attn_cross", dt, got, orf, m, tol_for(dt));
        free(got), free(ek), free(ev), free(q), free(orf), free(kc), free(vc);
        dfree(dek), dfree(dev), dfree(dq), dfree(dout), dfree(dkc), dfree(dvc);
    }
}

/* The cross-attention at the model's head sizes (the fast kernel's
 * vector loads: Dh 64, 128, 256) and over a few rows, where the keys are
 * split over several blocks whose parts the last one adds: slots of every
 * length (all frames, a few, none, one, 33: parts left empty), a prompt
 * (S = 3) and one step, each twice in a row (the parts' counters must be
 * back at zero for the second), and a grid of enough rows that it is not
 * split (on a GPU of at least 37 SMs: 72 pairs under two blocks per SM).
 * The workspace's peak shows whether the split ran. */
static void check_cross(ct_dtype dt, int n, int S, int H, int Dh, int Tenc, int split) {
    int slots = 5, D = H * Dh, slot[48];
    int enc_len[5] = {Tenc, 100 < Tenc ? 100 : Tenc, 0, 1, 33 < Tenc ? 33 : Tenc};
    for (int r = 0; r < n; r++) slot[r] = (r * 3 + 1) % slots;
    size_t esz = (size_t)slots * Tenc * D, m = (size_t)n * S * D;
    float *ek = rnd(dt, esz, 1.f), *ev = rnd(dt, esz, 1.f), *q = rnd(dt, m, 1.f), *orf = malloc(sizeof(float) * m);
    CT_ASSERT_OK(ct_op_attn_cross(g_ref, ct_buf_f32(orf), ct_buf_f32(q), ct_buf_f32(ek), ct_buf_f32(ev), slot, enc_len,
                                  n, S, Tenc, H, Dh, &g_ws_ref));
    ct_buf dek = dput(dt, ek, esz), dev = dput(dt, ev, esz), dq = dput(dt, q, m);
    for (int rep = 0; rep < 2; rep++) {
        ct_buf dout = dpoison(dt, m);
        g_ws_cu.peak = 0;
        CT_ASSERT_OK(ct_op_attn_cross(g_cu, dout, dq, dek, dev, slot, enc_len, n, S, Tenc, H, Dh, &g_ws_cu));
        assert_int_equal(g_ws_cu.used, 0);
        if (split) assert_true(g_ws_cu.peak >= sizeof(float) * 2 * (size_t)n * S * H * (Dh + 2));
        else assert_int_equal(g_ws_cu.peak, 0);
        float *got = dget(dout, m);
        char what[64];
        snprintf(what, sizeof what, "attn_cross n%d S%d Dh%d T%d rep%d", n, S, Dh, Tenc, rep);
        expect_close(what, dt, got, orf, m, tol_for(dt));
        free(got);
        dfree(dout);
    }
    free(ek), free(ev), free(q), free(orf);
    dfree(dek), dfree(dev), dfree(dq);
}

static void test_cross_split(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        ct_dtype dt = ALL3[i];
        check_cross(dt, 1, 1, 8, 128, 376, 1); /* the model's batch-1 step: 8 pairs, 12 parts */
        check_cross(dt, 3, 3, 8, 128, 301, 1); /* a prompt over a few rows */
        check_cross(dt, 2, 1, 4, 64, 200, 1);
        check_cross(dt, 2, 1, 2, 256, 97, 1);
        check_cross(dt, 40, 1, 8, 128, 150, 0); /* 320 pairs: one part each */
    }
}

/* The fused decoder step (version 6) against its composition: new k|v
 * written into the caches at *pos, then the causal attention of q. */
static void check_causal_qkv(ct_dtype dt, int H, int Dh, int pos) {
    int slots = 4, Smax = 24, D = H * Dh, n = 3, slot[3] = {3, 0, 2};
    size_t csz = (size_t)slots * Smax * D, m = (size_t)n * D;
    float *kc = rnd(dt, csz, 1.f), *vc = rnd(dt, csz, 1.f), *qkv = rnd(dt, 3 * m, 1.f), *orf = malloc(sizeof(float) * m);
    ct_buf dkc = dput(dt, kc, csz), dvc = dput(dt, vc, csz), dqkv = dput(dt, qkv, 3 * m), dout = dpoison(dt, m);
    int32_t *dpos = NULL;
    CT_ASSERT_OK(g_cu->ops->alloc(g_cu, sizeof(int32_t), (void **)&dpos));
    CT_ASSERT_OK(g_cu->ops->to_device(g_cu, dpos, &pos, sizeof(int32_t)));
    CT_ASSERT_OK(ct_ref_attn_causal_qkv_dev(g_ref, ct_buf_f32(orf), ct_buf_f32(qkv), ct_buf_f32(kc), ct_buf_f32(vc),
                                            slot, n, &pos, Smax, H, Dh, &g_ws_ref));
    assert_int_equal(g_ws_ref.used, 0);
    CT_ASSERT_OK(ct_op_attn_causal_qkv_dev(g_cu, dout, dqkv, dkc, dvc, slot, n, dpos, Smax, H, Dh, &g_ws_cu));
    char what[80];
    float *got = dget(dout, m);
    snprintf(what, sizeof what, "attn_causal_qkv_dev H%d Dh%d pos%d", H, Dh, pos);
    expect_close(what, dt, got, orf, m, tol_for(dt));
    float *gk = dget(dkc, csz), *gv = dget(dvc, csz); /* the caches: exact copies */
    expect_close("attn_causal_qkv_dev k cache", dt, gk, kc, csz, dt == CT_DTYPE_F32 ? 0 : 1e-12);
    expect_close("attn_causal_qkv_dev v cache", dt, gv, vc, csz, dt == CT_DTYPE_F32 ? 0 : 1e-12);
    free(gk), free(gv), free(got), free(kc), free(vc), free(qkv), free(orf);
    dfree(dkc), dfree(dvc), dfree(dqkv), dfree(dout);
    g_cu->ops->free(g_cu, dpos);
}

static void test_fused_decoder(void **state) {
    (void)state;
    assert_true(ct_backend_has_fused_decoder(g_cu));
    assert_false(ct_backend_has_fused_decoder(g_ref)); /* the CPU runs the composition */
    for (int i = 0; i < 3; i++) {
        check_causal_qkv(ALL3[i], 4, 32, 5);  /* the fast kernel writes the new key and value itself */
        check_causal_qkv(ALL3[i], 4, 32, 0);  /* the first position */
        check_causal_qkv(ALL3[i], 4, 32, 23); /* the cache's last */
        check_causal_qkv(ALL3[i], 3, 20, 7);  /* a head the fast kernel does not take: writes, then attention */
    }
}

/* The fused subsampling (version 6) against its composition. */
static void check_subsample(ct_dtype dt, int B, int T, int M, int C, int d, const int *len) {
    int T3 = T, F3 = M;
    for (int i = 0; i < 3; i++) T3 = (T3 - 1) / 2 + 1, F3 = (F3 - 1) / 2 + 1;
    const int T1 = (T - 1) / 2 + 1, F1 = (M - 1) / 2 + 1, T2 = (T1 - 1) / 2 + 1, F2 = (F1 - 1) / 2 + 1;
    float *feats = rnd(CT_DTYPE_F32, (size_t)B * T * M, 1.f);
    float *v[8]; /* c0_w c0_b dw1_w dw1_b pw1_b dw2_w dw2_b pw2_b */
    const size_t vn[8] = {(size_t)C * 9, (size_t)C, (size_t)C * 9, (size_t)C, (size_t)C, (size_t)C * 9, (size_t)C, (size_t)C};
    for (int i = 0; i < 8; i++) v[i] = rnd(CT_DTYPE_F32, vn[i], 0.4f);
    float *pw1 = rnd(dt, (size_t)C * C, 0.2f), *pw2 = rnd(dt, (size_t)C * C, 0.2f);
    float *ow = rnd(dt, (size_t)d * F3 * C, 0.1f), *ob = rnd(CT_DTYPE_F32, d, 1.f);
    int64_t sp[2] = {C, C}, so[2] = {d, (int64_t)F3 * C};
    ct_tensor rp1, rp2, ro, cp1, cp2, co;
    CT_ASSERT_OK(ct_tensor_upload(g_ref, CT_DTYPE_F32, pw1, CT_DTYPE_F32, 2, sp, &rp1));
    CT_ASSERT_OK(ct_tensor_upload(g_ref, CT_DTYPE_F32, pw2, CT_DTYPE_F32, 2, sp, &rp2));
    CT_ASSERT_OK(ct_tensor_upload(g_ref, CT_DTYPE_F32, ow, CT_DTYPE_F32, 2, so, &ro));
    CT_ASSERT_OK(ct_tensor_upload(g_cu, dt, pw1, CT_DTYPE_F32, 2, sp, &cp1));
    CT_ASSERT_OK(ct_tensor_upload(g_cu, dt, pw2, CT_DTYPE_F32, 2, sp, &cp2));
    CT_ASSERT_OK(ct_tensor_upload(g_cu, dt, ow, CT_DTYPE_F32, 2, so, &co));
    float *dv[8];
    for (int i = 0; i < 8; i++) dv[i] = dvec(v[i], vn[i]);
    float *db = dvec(ob, d);
    ct_subsample_weights wr = {v[0], v[1], v[2], v[3], &rp1, v[4], v[5], v[6], &rp2, v[7], &ro, ob};
    ct_subsample_weights wc = {dv[0], dv[1], dv[2], dv[3], &cp1, dv[4], dv[5], dv[6], &cp2, dv[7], &co, db};
    size_t nx = (size_t)B * T3 * d;
    float *xr = malloc(sizeof(float) * nx);
    CT_ASSERT_OK(ct_ref_subsample(g_ref, ct_buf_f32(xr), ct_buf_f32(feats), &wr, len, B, T, M, C, d, CT_BUF_NONE,
                                  CT_BUF_NONE, &g_ws_ref));
    ct_buf dx = dpoison(CT_DTYPE_F32, nx), df = dput(CT_DTYPE_F32, feats, (size_t)B * T * M);
    ct_buf da = dpoison(dt, (size_t)B * T1 * F1 * C), dbuf = dpoison(dt, (size_t)B * T2 * F2 * C);
    CT_ASSERT_OK(ct_op_subsample(g_cu, dx, df, &wc, len, B, T, M, C, d, da, dbuf, &g_ws_cu));
    float *got = dget(dx, nx);
    char what[80];
    snprintf(what, sizeof what, "subsample %dx%dx%d C%d d%d", B, T, M, C, d);
    expect_close(what, dt, got, xr, nx, tol_for(dt));
    free(got), free(xr), free(feats), free(pw1), free(pw2), free(ow), free(ob);
    for (int i = 0; i < 8; i++) free(v[i]), g_cu->ops->free(g_cu, dv[i]);
    g_cu->ops->free(g_cu, db);
    dfree(dx), dfree(df), dfree(da), dfree(dbuf);
    ct_tensor_release(&rp1), ct_tensor_release(&rp2), ct_tensor_release(&ro);
    ct_tensor_release(&cp1), ct_tensor_release(&cp2), ct_tensor_release(&co);
}

static void test_subsample(void **state) {
    (void)state;
    assert_true(ct_backend_has_fused_subsample(g_cu));
    assert_false(ct_backend_has_fused_subsample(g_ref)); /* the CPU runs the composition */
    int len3[3] = {37, 0, 13}, len1[1] = {200};
    for (int i = 0; i < 2; i++) {
        check_subsample(ACT16[i], 3, 37, 20, 24, 40, len3);  /* masked and empty rows, odd sizes */
        check_subsample(ACT16[i], 1, 200, 128, 64, 96, len1); /* the model's 128 bins */
    }
}

static void check_relpos(ct_backend *be, const char *what, ct_dtype dt, int B, int T, int H, int Dh) {
    int D = H * Dh, len[3] = {T, T - 7, 1};
    size_t m = (size_t)B * T * D, pn = (size_t)(2 * T - 1) * D;
    float *q = rnd(dt, m, 1.f), *k = rnd(dt, m, 1.f), *v = rnd(dt, m, 1.f), *p = rnd(dt, pn, 1.f);
    float *u = rnd(CT_DTYPE_F32, D, 0.5f), *vb = rnd(CT_DTYPE_F32, D, 0.5f), *orf = malloc(sizeof(float) * m);
    CT_ASSERT_OK(ct_op_attn_relpos(g_ref, ct_buf_f32(orf), ct_buf_f32(q), ct_buf_f32(k), ct_buf_f32(v), ct_buf_f32(p),
                                   u, vb, len, B, T, H, Dh, &g_ws_ref));
    ct_buf dq = dput(dt, q, m), dk = dput(dt, k, m), dv = dput(dt, v, m), dp = dput(dt, p, pn), dout = dpoison(dt, m);
    float *du = dvec(u, D), *dvb = dvec(vb, D);
    /* be may be another context than g_cu (own stream): the uploads must
     * have landed before it reads them, its kernels ended before we read */
    CT_ASSERT_OK(g_cu->ops->synchronize(g_cu));
    CT_ASSERT_OK(ct_op_attn_relpos(be, dout, dq, dk, dv, dp, du, dvb, len, B, T, H, Dh, &g_ws_cu));
    CT_ASSERT_OK(be->ops->synchronize(be));
    assert_int_equal(g_ws_cu.used, 0);
    float *got = dget(dout, m);
    expect_close(what, dt, got, orf, m, tol_for(dt));
    free(got), free(q), free(k), free(v), free(p), free(u), free(vb), free(orf);
    dfree(dq), dfree(dk), dfree(dv), dfree(dp), dfree(dout);
    g_cu->ops->free(g_cu, du), g_cu->ops->free(g_cu, dvb);
}

static void test_relpos(void **state) {
    (void)state;
    /* the fused kernel (bf16, head size 64 and 80), across its 64-row tiles */
    check_relpos(g_cu, "attn_relpos fused", CT_DTYPE_BF16, 3, 150, 2, 64);
    check_relpos(g_cu, "attn_relpos fused", CT_DTYPE_BF16, 2, 70, 3, 80);
    /* the simple kernel: every type, and a head size the fused one lacks */
    for (int i = 0; i < 3; i++) check_relpos(g_cu_simple, "attn_relpos simple", ALL3[i], 3, 90, 2, 64);
    check_relpos(g_cu, "attn_relpos (head 24: simple)", CT_DTYPE_BF16, 2, 33, 2, 24);
}

/* ---- version 5: the fused encoder ops against their reference compositions */
static void check_layer_norm2(ct_dtype dt, int M, int D) {
    float *x = rnd(CT_DTYPE_F32, (size_t)M * D, 2.f), *g1 = rnd(CT_DTYPE_F32, D, 1.f), *b1 = rnd(CT_DTYPE_F32, D, 1.f);
    float *g2 = rnd(CT_DTYPE_F32, D, 1.f), *b2 = rnd(CT_DTYPE_F32, D, 1.f);
    float *yr = malloc(sizeof(float) * (size_t)M * D), *zr = malloc(sizeof(float) * (size_t)M * D);
    CT_ASSERT_OK(ct_ref_layer_norm2(g_ref, ct_buf_f32(yr), ct_buf_f32(zr), ct_buf_f32(x), g1, b1, g2, b2, M, D, 1e-5f));
    ct_buf dx = dput(CT_DTYPE_F32, x, (size_t)M * D), dz = dpoison(dt, (size_t)M * D);
    float *dg1 = dvec(g1, D), *db1 = dvec(b1, D), *dg2 = dvec(g2, D), *db2 = dvec(b2, D);
    /* in place, as the encoder calls it: y = x */
    CT_ASSERT_OK(ct_op_layer_norm2(g_cu, dx, dz, dx, dg1, db1, dg2, db2, M, D, 1e-5f));
    float *gy = dget(dx, (size_t)M * D), *gz = dget(dz, (size_t)M * D);
    char what[64];
    snprintf(what, sizeof what, "layer_norm2 y %dx%d", M, D);
    expect_close(what, CT_DTYPE_F32, gy, yr, (size_t)M * D, 2e-5);
    snprintf(what, sizeof what, "layer_norm2 z %dx%d", M, D);
    expect_close(what, dt, gz, zr, (size_t)M * D, tol_for(dt));
    free(gy), free(gz), free(x), free(g1), free(b1), free(g2), free(b2), free(yr), free(zr);
    dfree(dx), dfree(dz);
    g_cu->ops->free(g_cu, dg1), g_cu->ops->free(g_cu, db1), g_cu->ops->free(g_cu, dg2), g_cu->ops->free(g_cu, db2);
}

static void check_glu_dwconv(ct_dtype dt, int B, int T, int C, int K, const int *len) {
    size_t nx = (size_t)B * T * 2 * C, ny = (size_t)B * T * C;
    float *x = rnd(dt, nx, 2.f), *w = rnd(CT_DTYPE_F32, (size_t)C * K, 0.4f), *b = rnd(CT_DTYPE_F32, C, 0.4f);
    float *yr = malloc(sizeof(float) * ny);
    CT_ASSERT_OK(ct_ref_glu_dwconv1d(g_ref, ct_buf_f32(yr), ct_buf_f32(x), w, b, len, B, T, C, K, CT_ACT_SILU,
                                     &g_ws_ref));
    assert_int_equal(g_ws_ref.used, 0);
    ct_buf dx = dput(dt, x, nx), dy = dpoison(dt, ny);
    float *dw = dvec(w, (size_t)C * K), *db = dvec(b, C);
    CT_ASSERT_OK(ct_op_glu_dwconv1d(g_cu, dy, dx, dw, db, len, B, T, C, K, CT_ACT_SILU, &g_ws_cu));
    float *got = dget(dy, ny);
    char what[64];
    snprintf(what, sizeof what, "glu_dwconv1d %dx%dx%d k%d", B, T, C, K);
    expect_close(what, dt, got, yr, ny, tol_for(dt));
    free(got), free(x), free(w), free(b), free(yr);
    dfree(dx), dfree(dy);
    g_cu->ops->free(g_cu, dw), g_cu->ops->free(g_cu, db);
}

static void check_relpos_qkv(ct_backend *be, const char *what, ct_dtype dt, int B, int T, int H, int Dh) {
    int D = H * Dh, len[3] = {T, T - 7, 1};
    size_t m = (size_t)B * T * D, pn = (size_t)(2 * T - 1) * D;
    float *qkv = rnd(dt, 3 * m, 1.f), *p = rnd(dt, pn, 1.f), *c = rnd(CT_DTYPE_F32, D, 0.5f);
    float *orf = malloc(sizeof(float) * m);
    CT_ASSERT_OK(ct_ref_attn_relpos_qkv(g_ref, ct_buf_f32(orf), ct_buf_f32(qkv), ct_buf_f32(p), c, len, B, T, H, Dh,
                                        &g_ws_ref));
    assert_int_equal(g_ws_ref.used, 0);
    ct_buf dqkv = dput(dt, qkv, 3 * m), dp = dput(dt, p, pn), dout = dpoison(dt, m);
    float *dc = dvec(c, D);
    CT_ASSERT_OK(g_cu->ops->synchronize(g_cu));
    CT_ASSERT_OK(ct_op_attn_relpos_qkv(be, dout, dqkv, dp, dc, len, B, T, H, Dh, &g_ws_cu));
    CT_ASSERT_OK(be->ops->synchronize(be));
    assert_int_equal(g_ws_cu.used, 0);
    float *got = dget(dout, m);
    expect_close(what, dt, got, orf, m, tol_for(dt));
    free(got), free(qkv), free(p), free(c), free(orf);
    dfree(dqkv), dfree(dp), dfree(dout);
    g_cu->ops->free(g_cu, dc);
}

static void test_fused(void **state) {
    (void)state;
    assert_true(ct_backend_has_fused_encoder(g_cu));
    assert_false(ct_backend_has_fused_encoder(g_ref)); /* the CPU runs the compositions */
    for (int i = 0; i < 2; i++) {
        ct_dtype dt = ACT16[i];
        check_layer_norm2(dt, 37, 1280); /* a warp per row */
        check_layer_norm2(dt, 5, 200);   /* other widths: the two plain norms */
        int len2[2] = {61, 23}, len3[3] = {40, 0, 17};
        check_glu_dwconv(dt, 2, 61, 320, 9, len2); /* several channel blocks and time tiles */
        check_glu_dwconv(dt, 3, 40, 33, 5, len3);  /* a partial block, an empty row */
        int len4[3] = {70, 0, 5};
        check_glu_dwconv(dt, 3, 70, 64, 9, len4); /* kernel 9's register window: masked and empty rows */
        check_glu_dwconv(dt, 1, 20, 33, 9, len4); /* kernel 9 over an odd channel count: the tile kernel */
        int len6[6] = {720, 700, 1, 0, 719, 64};
        check_glu_dwconv(dt, 6, 720, 1024, 9, len6); /* kernel 9 with a grid that fills the GPU: 64 steps a block */
        check_relpos_qkv(g_cu_simple, "attn_relpos_qkv simple", dt, 3, 90, 2, 64);
    }
    check_relpos_qkv(g_cu, "attn_relpos_qkv fused", CT_DTYPE_BF16, 3, 150, 2, 64);
    check_relpos_qkv(g_cu, "attn_relpos_qkv fused", CT_DTYPE_BF16, 2, 70, 3, 80);
    check_relpos_qkv(g_cu, "attn_relpos_qkv (head 24: simple)", CT_DTYPE_BF16, 2, 33, 2, 24);
}

/* ---- setup --------------------------------------------------------------- */
static int make_backends(void) {
    ct_backend_options o = ct_backend_default_options();
    CT_ASSERT_OK(ct_backend_create("cpu-ref", &o, &g_ref));
    o.attn_variant = CT_ATTN_SIMPLE;
    if (ct_backend_create("cuda", &o, &g_cu_simple) != CT_OK) return 0;
    o.attn_variant = CT_ATTN_AUTO;
    CT_ASSERT_OK(ct_backend_create("cuda", &o, &g_cu));
    CT_ASSERT_OK(ct_backend_arena_create(g_ref, 64 << 20, &g_ws_ref));
    CT_ASSERT_OK(ct_backend_arena_create(g_cu, 64 << 20, &g_ws_cu));
    return 1;
}

static void test_options(void **state) {
    (void)state;
    /* the activation type is chosen by the options: bf16 by default, f16 on
     * request; the CPU backends refuse anything but float32 */
    assert_int_equal(ct_backend_act_dtype(g_cu), CT_DTYPE_BF16);
    ct_backend_options o = ct_backend_default_options();
    o.act_dtype = CT_DTYPE_F16;
    ct_backend *be;
    CT_ASSERT_OK(ct_backend_create("cuda", &o, &be));
    assert_int_equal(ct_backend_act_dtype(be), CT_DTYPE_F16);
    assert_true(be->ops->supports_weight(be, CT_DTYPE_F16));
    assert_false(be->ops->supports_weight(be, CT_DTYPE_BF16));
    ct_backend_free(be);
    o.act_dtype = CT_DTYPE_I8;
    CT_ASSERT_STATUS(ct_backend_create("cuda", &o, &be), CT_ERR_UNSUPPORTED);
    o = ct_backend_default_options();
    o.device_index = 999;
    CT_ASSERT_STATUS(ct_backend_create("cuda", &o, &be), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("device 999");
}

/* Background uploads (to_device_async, cuda_upload.cu): sizes below the
 * small-copy cut, at it, over several pieces with an odd tail; each
 * destination first zeroed on the stream, then read back through each
 * operation that must wait for them (to_host, copy, synchronize); many in
 * flight at once; a backend freed with uploads still queued. */
static void test_upload_async(void **state) {
    (void)state;
    const size_t sizes[] = {0, 1000, (size_t)1 << 20, ((size_t)37 << 20) + 13};
    enum { NS = sizeof sizes / sizeof sizes[0], MANY = 160 };
    assert_non_null(g_cu->ops->to_device_async);
    const size_t big = sizes[NS - 1];
    unsigned char *src = malloc(big + NS), *back = malloc(big + 1); /* src + k: misaligned starts */
    for (size_t i = 0; i < big + NS; i++) src[i] = (unsigned char)(i * 2654435761u >> 13);
    for (int how = 0; how < 3; how++)
        for (int k = 0; k < NS; k++) {
            const size_t n = sizes[k];
            void *d = NULL, *d2 = NULL;
            CT_ASSERT_OK(g_cu->ops->alloc(g_cu, n + 64, &d));
            CT_ASSERT_OK(g_cu->ops->zero(g_cu, d, n + 64));
            /* how 2 uploads from a copy that is wiped once synchronize
             * returns: the upload must have read it by then */
            unsigned char *from = src + k;
            if (how == 2 && n) {
                from = malloc(n);
                memcpy(from, src + k, n);
            }
            CT_ASSERT_OK(g_cu->ops->to_device_async(g_cu, d, from, n));
            memset(back, 0, n + 1);
            if (how == 0) { /* to_host waits for the upload */
                CT_ASSERT_OK(g_cu->ops->to_host(g_cu, back, d, n));
            } else if (how == 1) { /* a device copy reads it after it landed */
                CT_ASSERT_OK(g_cu->ops->alloc(g_cu, n + 64, &d2));
                CT_ASSERT_OK(g_cu->ops->copy(g_cu, d2, d, n));
                CT_ASSERT_OK(g_cu->ops->to_host(g_cu, back, d2, n));
            } else {
                CT_ASSERT_OK(g_cu->ops->synchronize(g_cu));
                if (n) memset(from, 0, n), free(from);
                CT_ASSERT_OK(g_cu->ops->to_host(g_cu, back, d, n));
            }
            if (memcmp(back, src + k, n)) fail_msg("upload of %zu bytes (read %d) differs", n, how);
            g_cu->ops->free(g_cu, d);
            if (d2) g_cu->ops->free(g_cu, d2);
        }
    /* many at once: 160 × 1.5 MB from one source, each at its own offset */
    const size_t part = (size_t)3 << 19;
    void *many;
    CT_ASSERT_OK(g_cu->ops->alloc(g_cu, part * MANY, &many));
    for (int i = 0; i < MANY; i++)
        CT_ASSERT_OK(g_cu->ops->to_device_async(g_cu, (char *)many + (size_t)i * part, src + (size_t)i * 97, part));
    CT_ASSERT_OK(g_cu->ops->synchronize(g_cu));
    unsigned char *all = malloc(part * MANY);
    CT_ASSERT_OK(g_cu->ops->to_host(g_cu, all, many, part * MANY));
    for (int i = 0; i < MANY; i++)
        if (memcmp(all + (size_t)i * part, src + (size_t)i * 97, part)) fail_msg("upload %d of %d differs", i, MANY);
    g_cu->ops->free(g_cu, many);
    free(all);
    /* freed with uploads queued: the backend waits for them first */
    ct_backend *be;
    CT_ASSERT_OK(ct_backend_create("cuda", NULL, &be));
    void *d;
    CT_ASSERT_OK(be->ops->alloc(be, big, &d));
    CT_ASSERT_OK(be->ops->to_device_async(be, d, src, big));
    ct_backend_free(be); /* the destination goes with the context */
    free(src);
    free(back);
}

int main(void) {
    /* the CPU half of the interface runs everywhere */
    ct_backend_options o = ct_backend_default_options();
    o.act_dtype = CT_DTYPE_BF16;
    ct_backend *be = NULL;
    if (ct_backend_create("cpu", &o, &be) != CT_ERR_UNSUPPORTED) {
        printf("FAIL: the cpu backend took bf16 activations\n");
        return 1;
    }
    if (!make_backends()) {
        const char *req = getenv("CT_REQUIRE_GPU");
        printf("%s test_cuda_backend: %s\n", req && *req == '1' ? "FAIL" : "SKIP", ct_last_error());
        return req && *req == '1' ? 1 : 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),     cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_conv_pointwise), cmocka_unit_test(test_layer_norm),
        cmocka_unit_test(test_glu_convert), cmocka_unit_test(test_convs),
        cmocka_unit_test(test_pos_embed_argmax), cmocka_unit_test(test_decoder_attention),
        cmocka_unit_test(test_cross_split),
        cmocka_unit_test(test_relpos),      cmocka_unit_test(test_fused),
        cmocka_unit_test(test_fused_decoder), cmocka_unit_test(test_bias_kept),
        cmocka_unit_test(test_subsample),   cmocka_unit_test(test_upload_async),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    ct_backend_arena_free(g_cu, &g_ws_cu);
    ct_backend_arena_free(g_ref, &g_ws_ref);
    ct_backend_free(g_cu);
    ct_backend_free(g_cu_simple);
    ct_backend_free(g_ref);
    return r;
}
