/* test_cuda_w2v2_ops.c — the wav2vec2 aligner's ops on the "cuda" backend
 * (backend.h version 5: conv1d_t, conv1d_grouped_t, gelu_t, add_t,
 * attn_full_t) against the cpu-ref float32 ops through compute/ops.h, on
 * random inputs rounded to the element type under test, outputs poisoned
 * (NaN) so an unwritten element fails. Both conv1d paths (the direct kernel
 * over the PCM, the tap-chunked GEMMs with K > stride and K = stride), the
 * positional conv at the aligner's size, the layer norm over 16-bit rows in
 * place (the warp kernel and the block one), the flash attention with short key
 * lengths (reference: the unmasked cpu-ref op on the first len rows) and its
 * simple fallback. On the CPU tables the same calls fall back to the
 * float32 entries (checked here too, without a GPU). Without a CUDA device
 * the GPU tests are skipped with a message (CT_REQUIRE_GPU=1 fails them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/wav2vec2.h"
#include "compute/ops.h"
#include "core/dtype.h"
#include "model/safetensors.h"
#include "testutil.h"

static ct_backend *g_ref, *g_cu, *g_cu_simple;
static ct_arena g_ws_ref, g_ws_cu;
static unsigned g_seed = 777;

/* testutil.h's random data on this test's seed (the same stream as before) */
static float frand(void) { return ct_test_lcg_frand(&g_seed); }
static float *rnd(ct_dtype dt, size_t n, float scale) { return ct_test_rnd_in(&g_seed, dt, n, scale); }

/* testutil.h's device buffers (dpoison and dget on the cuda backend under test) */
static ct_buf dput(ct_backend *be, ct_dtype dt, const float *x, size_t n) { return ct_test_dput(be, dt, x, n); }
static ct_buf dpoison(ct_dtype dt, size_t n) { return ct_test_dpoison(g_cu, dt, n); }
static float *dget(ct_buf b, size_t n) { return ct_test_dget(g_cu, b, n); }
static void dfree(ct_buf b) { g_cu->ops->free(g_cu, b.data); }

static double tol_for(ct_dtype dt) { return dt == CT_DTYPE_F32 ? 2e-5 : dt == CT_DTYPE_F16 ? 3e-3 : 1.5e-2; }

static void expect_close(const char *what, ct_dtype dt, const float *got, const float *ref, size_t n, double tol) {
    for (size_t i = 0; i < n; i++)
        if (isnan(got[i]) != isnan(ref[i]) || (!isnan(ref[i]) && !isfinite(got[i])))
            fail_msg("%s (%s): element %zu is %g, reference %g (unwritten?)", what, ct_dtype_name(dt), i, got[i],
                     ref[i]);
    double e = ct_rel_l2(got, ref, n);
    printf("  %-40s %-4s n=%-9zu rel L2 %.3g (tol %.1e)\n", what, ct_dtype_name(dt), n, e, tol);
    if (!(e <= tol)) fail_msg("%s (%s): rel L2 %.3g > %.1e", what, ct_dtype_name(dt), e, tol);
}

/* ---- conv1d ------------------------------------------------------------------ */
/* x in xt, weights in wt (the GEMM path: the activation type), y in yt */
static void check_conv1d(ct_dtype xt, ct_dtype wt, ct_dtype yt, int B, int T, int Ci, int Co, int K, int S, int bias) {
    const int To = (T - K) / S + 1;
    const size_t ny = (size_t)B * To * Co;
    float *x = rnd(xt, (size_t)B * T * Ci, 1.f), *w = rnd(wt, (size_t)Co * Ci * K, 0.3f), *b = rnd(CT_DTYPE_F32, Co, 1.f);
    int64_t shape[3] = {Co, Ci, K};
    ct_tensor wr, wc;
    CT_ASSERT_OK(ct_tensor_upload(g_ref, CT_DTYPE_F32, w, CT_DTYPE_F32, 3, shape, &wr));
    CT_ASSERT_OK(ct_tensor_upload(g_cu, wt, w, CT_DTYPE_F32, 3, shape, &wc));
    float *yr = malloc(sizeof(float) * ny);
    CT_ASSERT_OK(ct_op_conv1d(g_ref, ct_buf_f32(yr), ct_buf_f32(x), &wr, bias ? b : NULL, B, T, Ci, Co, K, S, &g_ws_ref));
    ct_buf dx = dput(g_cu, xt, x, (size_t)B * T * Ci), dy = dpoison(yt, ny), db = dput(g_cu, CT_DTYPE_F32, b, Co);
    CT_ASSERT_OK(ct_op_conv1d(g_cu, dy, dx, &wc, bias ? (float *)db.data : NULL, B, T, Ci, Co, K, S, &g_ws_cu));
    assert_int_equal(g_ws_cu.used, 0);
    float *got = dget(dy, ny);
    char what[96];
    snprintf(what, sizeof what, "conv1d x%s Ci=%d K=%d S=%d%s", ct_dtype_name(xt), Ci, K, S, bias ? " +b" : "");
    ct_dtype et = yt == CT_DTYPE_F32 ? xt : yt; /* the inputs' rounding bounds an f32 output's error */
    expect_close(what, yt, got, yr, ny, tol_for(et));
    free(got), free(x), free(w), free(b), free(yr);
    dfree(dx), dfree(dy), dfree(db);
    ct_tensor_release(&wr);
    ct_tensor_release(&wc);
}

static void test_conv1d(void **state) {
    (void)state;
    /* the first layer over the PCM: f32 input and weights, direct kernel */
    check_conv1d(CT_DTYPE_F32, CT_DTYPE_F32, CT_DTYPE_F32, 2, 1003, 1, 96, 10, 5, 1);
    check_conv1d(CT_DTYPE_F32, CT_DTYPE_F32, CT_DTYPE_BF16, 2, 1003, 1, 300, 10, 5, 1);
    /* ... the product's types and width (bf16 weights, 512 channels), and an odd
     * width without bias: 199 rows per batch row, so blocks of 32 rows span two */
    check_conv1d(CT_DTYPE_F32, CT_DTYPE_BF16, CT_DTYPE_BF16, 3, 1003, 1, 512, 10, 5, 1);
    check_conv1d(CT_DTYPE_F32, CT_DTYPE_F32, CT_DTYPE_F32, 2, 1003, 1, 75, 10, 5, 0);
    /* few taps over several channels: the one-thread-per-output kernel */
    check_conv1d(CT_DTYPE_F32, CT_DTYPE_F32, CT_DTYPE_F32, 2, 300, 4, 40, 3, 2, 1);
    const ct_dtype act[2] = {CT_DTYPE_BF16, CT_DTYPE_F16};
    for (int i = 0; i < 2; i++) {
        ct_dtype dt = act[i];
        check_conv1d(dt, dt, CT_DTYPE_F32, 3, 101, 64, 80, 3, 2, 1); /* K > S: two tap chunks, bias first */
        check_conv1d(dt, dt, CT_DTYPE_F32, 3, 101, 64, 80, 3, 2, 0); /* ... no bias: the first chunk writes */
        check_conv1d(dt, dt, dt, 2, 64, 64, 48, 2, 2, 1);            /* K = S: one GEMM */
        check_conv1d(dt, dt, CT_DTYPE_F32, 1, 41, 32, 40, 5, 1, 1);  /* stride 1: five chunks */
    }
    /* the aligner's second layer at one 0.2 s slice: 512 → 512, K 3, S 2 */
    check_conv1d(CT_DTYPE_BF16, CT_DTYPE_BF16, CT_DTYPE_F32, 2, 640, 512, 512, 3, 2, 1);
}

/* ---- grouped positional conv ------------------------------------------------ */
static void check_grouped(ct_dtype dt, int B, int T, int C, int G, int K) {
    const size_t n = (size_t)B * T * C;
    float *x = rnd(dt, n, 1.f), *w = rnd(CT_DTYPE_F32, (size_t)C * (C / G) * K, 0.05f), *b = rnd(CT_DTYPE_F32, C, 1.f);
    float *yr = malloc(sizeof(float) * n);
    CT_ASSERT_OK(ct_op_conv1d_grouped(g_ref, ct_buf_f32(yr), ct_buf_f32(x), w, b, B, T, C, G, K, &g_ws_ref));
    ct_buf dx = dput(g_cu, dt, x, n), dy = dpoison(dt, n), dw = dput(g_cu, CT_DTYPE_F32, w, (size_t)C * (C / G) * K),
           db = dput(g_cu, CT_DTYPE_F32, b, C);
    CT_ASSERT_OK(ct_op_conv1d_grouped(g_cu, dy, dx, dw.data, db.data, B, T, C, G, K, &g_ws_cu));
    float *got = dget(dy, n);
    char what[96];
    snprintf(what, sizeof what, "conv1d_grouped T=%d C=%d G=%d K=%d", T, C, G, K);
    expect_close(what, dt, got, yr, n, tol_for(dt));
    free(got), free(x), free(w), free(b), free(yr);
    dfree(dx), dfree(dy), dfree(dw), dfree(db);
}

static void test_conv1d_grouped(void **state) {
    (void)state;
    check_grouped(CT_DTYPE_BF16, 2, 77, 128, 4, 16);
    check_grouped(CT_DTYPE_F16, 2, 77, 128, 4, 15); /* odd K */
    check_grouped(CT_DTYPE_BF16, 1, 90, 1024, 16, 128); /* the aligner's, T < K: taps reach past both ends */
}

/* ---- gelu, add --------------------------------------------------------------- */
static void test_gelu_add(void **state) {
    (void)state;
    const ct_dtype all[3] = {CT_DTYPE_F32, CT_DTYPE_BF16, CT_DTYPE_F16};
    const size_t sizes[2] = {1001, 4096}; /* one element per thread; 16-byte vectors */
    for (int d = 0; d < 3; d++)
        for (int si = 0; si < 2; si++) {
            size_t n = sizes[si];
            float *x = rnd(all[d], n, 4.f), *r = malloc(sizeof(float) * n);
            memcpy(r, x, sizeof(float) * n);
            CT_ASSERT_OK(ct_op_gelu(g_ref, ct_buf_f32(r), n));
            ct_buf dx = dput(g_cu, all[d], x, n);
            CT_ASSERT_OK(ct_op_gelu(g_cu, dx, n));
            float *got = dget(dx, n);
            expect_close("gelu", all[d], got, r, n, tol_for(all[d]) / 4);
            free(got), free(x), free(r);
            dfree(dx);
        }
    for (int d = 0; d < 3; d++) {
        size_t n = 5000;
        float *a = rnd(CT_DTYPE_F32, n, 1.f), *b = rnd(all[d], n, 1.f), *r = malloc(sizeof(float) * n);
        CT_ASSERT_OK(ct_op_add(g_ref, ct_buf_f32(r), ct_buf_f32(a), ct_buf_f32(b), n));
        ct_buf da = dput(g_cu, CT_DTYPE_F32, a, n), db = dput(g_cu, all[d], b, n);
        CT_ASSERT_OK(ct_op_add(g_cu, da, da, db, n)); /* the residual stream in place */
        float *got = dget(da, n);
        expect_close("add f32 += b", all[d], got, r, n, 1e-6);
        free(got), free(a), free(b), free(r);
        dfree(da), dfree(db);
    }
}

/* ---- layer norm over 16-bit rows in place (the feature encoder's) ------------ */
static void check_ln16(ct_dtype dt, int M, int D) {
    const size_t n = (size_t)M * D;
    float *x = rnd(dt, n, 2.f), *g = rnd(CT_DTYPE_F32, D, 1.f), *b = rnd(CT_DTYPE_F32, D, 1.f);
    for (size_t i = 0; i < n; i++) x[i] += (float)(i / D % 7); /* row means away from 0: the two-pass variance */
    float *xr = malloc(sizeof(float) * n), *r = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) xr[i] = ct_test_round_to(dt, x[i]);
    CT_ASSERT_OK(ct_op_layer_norm(g_ref, ct_buf_f32(r), ct_buf_f32(xr), g, b, M, D, 1e-5f));
    ct_buf dx = dput(g_cu, dt, xr, n), dg = dput(g_cu, CT_DTYPE_F32, g, D), db = dput(g_cu, CT_DTYPE_F32, b, D);
    CT_ASSERT_OK(ct_op_layer_norm(g_cu, dx, dx, dg.data, db.data, M, D, 1e-5f));
    float *got = dget(dx, n);
    char what[96];
    snprintf(what, sizeof what, "layer_norm in place M=%d D=%d", M, D);
    expect_close(what, dt, got, r, n, tol_for(dt));
    free(got), free(x), free(xr), free(g), free(b), free(r);
    dfree(dx), dfree(dg), dfree(db);
}

static void test_layer_norm16(void **state) {
    (void)state;
    check_ln16(CT_DTYPE_BF16, 37, 512);  /* a warp per row, 8 rows a block: the last block part-full */
    check_ln16(CT_DTYPE_F16, 9, 2048);   /* the widest row the warp kernel takes */
    check_ln16(CT_DTYPE_BF16, 5, 320);   /* D % 256 ≠ 0: the block-per-row kernel */
}

/* ---- attention ---------------------------------------------------------------- */
/* Reference with key lengths: the unmasked op on each row's first len rows,
 * zeros after them. */
static void ref_attn_masked(float *out, const float *q, const float *k, const float *v, const int *len, int B, int T,
                            int H, int Dh) {
    const size_t D = (size_t)H * Dh;
    memset(out, 0, sizeof(float) * B * T * D);
    for (int b = 0; b < B; b++) {
        const int L = len ? len[b] : T;
        if (L <= 0) continue;
        const size_t o = (size_t)b * T * D;
        CT_ASSERT_OK(ct_op_attn_full(g_ref, ct_buf_f32(out + o), ct_buf_f32(q + o), ct_buf_f32(k + o),
                                     ct_buf_f32(v + o), NULL, 1, L, H, Dh, CT_DTYPE_F32, &g_ws_ref));
    }
}

static void check_attn(ct_backend *cu, const char *variant, ct_dtype dt, int B, int T, int H, int Dh, const int *len) {
    const size_t n = (size_t)B * T * H * Dh;
    float *q = rnd(dt, n, 1.f), *k = rnd(dt, n, 1.f), *v = rnd(dt, n, 1.f), *r = malloc(sizeof(float) * n);
    ref_attn_masked(r, q, k, v, len, B, T, H, Dh);
    ct_buf dq = dput(g_cu, dt, q, n), dk = dput(g_cu, dt, k, n), dv = dput(g_cu, dt, v, n), dout = dpoison(dt, n);
    /* the buffers are g_cu's: another backend has its own stream, so both wait around the op */
    CT_ASSERT_OK(g_cu->ops->synchronize(g_cu));
    CT_ASSERT_OK(ct_op_attn_full(cu, dout, dq, dk, dv, len, B, T, H, Dh, dt, &g_ws_cu));
    CT_ASSERT_OK(cu->ops->synchronize(cu));
    float *got = dget(dout, n);
    char what[96];
    snprintf(what, sizeof what, "attn_full %s T=%d H=%d Dh=%d%s", variant, T, H, Dh, len ? " len" : "");
    expect_close(what, dt, got, r, n, tol_for(dt));
    /* padded query rows are exact zeros */
    for (int b = 0; len && b < B; b++)
        for (size_t i = (size_t)len[b] * H * Dh; i < (size_t)T * H * Dh; i++)
            if (got[(size_t)b * T * H * Dh + i] != 0.f) fail_msg("%s: padded row %d not zero", what, b);
    free(got), free(q), free(k), free(v), free(r);
    dfree(dq), dfree(dk), dfree(dv), dfree(dout);
}

static void test_attn_full(void **state) {
    (void)state;
    const int len3[3] = {150, 97, 1};
    /* the fused kernel (double-buffered K/V tiles: 1699 keys are 27 tiles,
     * 150 end in a partial tile, len 1 in a first tile that is also the last) */
    const char *v = "fused";
    check_attn(g_cu, v, CT_DTYPE_BF16, 3, 150, 4, 64, NULL);
    check_attn(g_cu, v, CT_DTYPE_BF16, 3, 150, 4, 64, len3);
    check_attn(g_cu, v, CT_DTYPE_BF16, 2, 70, 3, 32, NULL);
    check_attn(g_cu, v, CT_DTYPE_BF16, 2, 200, 2, 128, len3);
    check_attn(g_cu, v, CT_DTYPE_BF16, 2, 128, 2, 64, NULL);  /* exactly two full tiles */
    check_attn(g_cu, v, CT_DTYPE_BF16, 1, 1699, 2, 64, NULL); /* a 34 s window's frames */
    check_attn(g_cu_simple, "simple", CT_DTYPE_BF16, 3, 150, 4, 64, len3);
    check_attn(g_cu, "simple", CT_DTYPE_F16, 3, 150, 4, 64, len3);
    check_attn(g_cu, "simple", CT_DTYPE_BF16, 2, 50, 2, 80, NULL); /* a head size the fused kernel lacks */
}

/* ---- the whole network on the device ------------------------------------------ */
/* make_aligner_fixtures.py pcm_clip: the generator test_align_wav2vec2.c uses. */
static float *pcm_clip(size_t n, uint32_t seed) {
    float *x = malloc(n * sizeof *x);
    uint32_t st = seed;
    for (size_t i = 0; i < n; i++) {
        st = st * 1664525u + 1013904223u;
        long long noise = (long long)(st >> 16) - 32768, env = (long long)((i / 800) % 16);
        long long a = noise * env, q = a / 16;
        if (a % 16 != 0 && a < 0) q--; /* Python's floor division */
        x[i] = (float)((double)q / 32768.0);
    }
    return x;
}

/* max |got − want| over the emissions' scale, as test_align_wav2vec2.c states the bound */
#define REF_SCALE 22.334494
static double em_err(const float *got, const float *want, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (d > worst || isnan(d)) worst = isnan(d) ? INFINITY : d;
    }
    return worst / REF_SCALE;
}

/* The tiny random aligner (tests/fixtures/align/tiny-w2v2) on the cuda
 * backend, bf16, against transformers' Wav2Vec2ForCTC float32 emissions of
 * the same clips (align/emissions.safetensors): clip A, shorter than a
 * window, and clip B, three windows in one padded batch, within the issue's
 * 2e-2 (the full-size model is checked against transformers bf16 by
 * tools/device/tf_align.py). Its head size 16 takes the simple attention. */
static void test_forward_tiny(void **state) {
    (void)state;
    ct_safetensors *st;
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("align/emissions.safetensors"), &st));
    const ct_st_tensor *ta = ct_st_find(st, "a"), *tb = ct_st_find(st, "b"), *tf = ct_st_find(st, "b_frames");
    assert_non_null(ta);
    assert_non_null(tb);
    assert_non_null(tf);
    float *ra = malloc((size_t)ta->numel * sizeof(float)), *rb = malloc((size_t)tb->numel * sizeof(float));
    CT_ASSERT_OK(ct_st_tensor_to_f32(ta, ra, (size_t)ta->numel));
    CT_ASSERT_OK(ct_st_tensor_to_f32(tb, rb, (size_t)tb->numel));
    const int32_t *bfr = (const int32_t *)tf->data;
    ct_w2v2_options wo = ct_w2v2_default_options();
    wo.weight_dtype = CT_DTYPE_BF16;
    ct_w2v2 *m;
    CT_ASSERT_OK(ct_w2v2_open(CT_FIXTURE("align/tiny-w2v2"), g_cu, &wo, &m));
    float *a = pcm_clip(40000, 1), *b = pcm_clip(976000, 2), *ea, *eb;
    int fa, fb, ca, cb;
    double stride;
    CT_ASSERT_OK(ct_w2v2_emissions(m, a, 40000, 2, &ea, &fa, &ca, &stride));
    assert_int_equal(fa, 125);
    assert_int_equal(ca, 32);
    CT_ASSERT_OK(ct_w2v2_emissions(m, b, 976000, 3, &eb, &fb, &cb, &stride));
    assert_int_equal(fb, 3050);
    const double e_a = em_err(ea, ra, 125 * 32);
    double e_b = 0;
    for (int64_t k = 0; k < tf->numel; k++) {
        double e = em_err(eb + (size_t)bfr[k] * 32, rb + k * 32, 32);
        if (e > e_b) e_b = e;
    }
    printf("  tiny aligner on cuda bf16 vs Wav2Vec2ForCTC fp32: clip A %.2e, clip B %.2e (bound 2e-2)\n", e_a, e_b);
    assert_true(e_a <= 2e-2);
    assert_true(e_b <= 2e-2);
    assert_true(e_a > 1e-6); /* it did compute in bf16 */
    free(a), free(b), free(ea), free(eb), free(ra), free(rb);
    ct_w2v2_free(m);
    ct_st_free(st);
}

/* ---- the CPU tables: the float32 entries, unchanged ---------------------------- */
static void test_cpu_fallback(void **state) {
    (void)state;
    ct_backend *cpu;
    ct_backend_options o = ct_backend_default_options();
    CT_ASSERT_OK(ct_backend_create("cpu", &o, &cpu));
    assert_true(ct_backend_has_w2v2_ops(cpu));
    float q[2 * 4 * 8], out[2 * 4 * 8], r[2 * 4 * 8];
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) q[i] = frand();
    CT_ASSERT_OK(cpu->ops->attn_full(cpu, r, q, q, q, 2, 4, 2, 4, CT_DTYPE_F32, &g_ws_ref));
    const int full[2] = {4, 4}, shrt[2] = {4, 3};
    CT_ASSERT_OK(ct_op_attn_full(cpu, ct_buf_f32(out), ct_buf_f32(q), ct_buf_f32(q), ct_buf_f32(q), full, 2, 4, 2, 4,
                                 CT_DTYPE_F32, &g_ws_ref));
    assert_memory_equal(out, r, sizeof r);
    /* no key mask on the CPU: a short length is refused, not ignored */
    assert_int_equal(ct_op_attn_full(cpu, ct_buf_f32(out), ct_buf_f32(q), ct_buf_f32(q), ct_buf_f32(q), shrt, 2, 4, 2,
                                     4, CT_DTYPE_F32, &g_ws_ref),
                     CT_ERR_UNSUPPORTED);
    /* and 16-bit buffers are refused */
    assert_int_equal(ct_op_gelu(cpu, ct_buf_make(out, CT_DTYPE_BF16), 4), CT_ERR_UNSUPPORTED);
    ct_backend_free(cpu);
}

int main(void) {
    ct_backend_options o = ct_backend_default_options();
    CT_ASSERT_OK(ct_backend_create("cpu-ref", &o, &g_ref));
    CT_ASSERT_OK(ct_backend_arena_create(g_ref, 64 << 20, &g_ws_ref));
    const struct CMUnitTest cpu_tests[] = {cmocka_unit_test(test_cpu_fallback)};
    int r = cmocka_run_group_tests_name("cpu", cpu_tests, NULL, NULL);
    int code = 0;
    if (r || !ct_test_have_gpu("test_cuda_w2v2_ops", &code)) {
        ct_backend_arena_free(g_ref, &g_ws_ref);
        ct_backend_free(g_ref);
        return r ? r : code;
    }
    CT_ASSERT_OK(ct_backend_create("cuda", &o, &g_cu));
    o.attn_variant = CT_ATTN_SIMPLE;
    CT_ASSERT_OK(ct_backend_create("cuda", &o, &g_cu_simple));
    CT_ASSERT_OK(ct_backend_arena_create(g_cu, 64 << 20, &g_ws_cu));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv1d),
        cmocka_unit_test(test_conv1d_grouped),
        cmocka_unit_test(test_gelu_add),
        cmocka_unit_test(test_layer_norm16),
        cmocka_unit_test(test_attn_full),
        cmocka_unit_test(test_forward_tiny),
    };
    r = cmocka_run_group_tests_name("cuda", tests, NULL, NULL);
    ct_backend_arena_free(g_cu, &g_ws_cu);
    ct_backend_arena_free(g_ref, &g_ws_ref);
    ct_backend_free(g_cu);
    ct_backend_free(g_cu_simple);
    ct_backend_free(g_ref);
    return r;
}
