/* test_cuda_ops.c — every CUDA backend kernel (but the encoder attention:
 * test_cuda_attention.c) against a plain CPU reference (double accumulation
 * over the same bf16-rounded inputs), on fresh random inputs with poisoned
 * outputs. Without CUDA compiled in, or without a usable
 * device, every test is skipped with a visible message; with a device they
 * must pass.
 */
#include "cuda_test_util.h"

#ifdef CT_HAVE_CUDA
static void test_gemm(void **state) {
    (void)state;
    int M = 77, N = 96, K = 136;
    float *A = malloc(M * K * 4), *W = malloc(N * K * 4), *bias = malloc(N * 4), *C = malloc(M * N * 4),
          *ref = malloc(M * N * 4);
    fill(A, M * K, 1.f); fill(W, N * K, 0.2f); fill(bias, N, 1.f); fill(C, M * N, 1.f);
    for (int act = 0; act < 2; act++) {
        /* bf16 out, bias, optional ReLU */
        void *dA = dev_bf16(A, M * K), *dW = dev_bf16(W, N * K), *db = dev_bf16(bias, N), *dD = dev_poison(M * N * 2);
        ct_cuda_gemm_args g = {M, N, K, dA, K, dW, K, db, dD, N, 0, 1.f, 0.f, act ? CT_CUDA_ACT_RELU : CT_CUDA_ACT_NONE, 0, 0};
        CT_ASSERT_OK(ct_cuda_gemm(g_cuda, &g));
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = bias[j];
                for (int k = 0; k < K; k++) s += (double)A[i * K + k] * W[j * K + k];
                ref[i * N + j] = act && s < 0 ? 0.f : (float)s;
            }
        float *got = get_bf16(dD, M * N);
        expect_close(act ? "gemm bf16 bias relu" : "gemm bf16 bias", got, ref, M * N, 6e-3);
        free(got);
        ct_cuda_dfree(g_cuda, dA); ct_cuda_dfree(g_cuda, dW); ct_cuda_dfree(g_cuda, db); ct_cuda_dfree(g_cuda, dD);
    }
    /* fp32 residual: D = 0.5·A·Wᵀ + bias + 1·C (bias not scaled by alpha) */
    void *dA = dev_bf16(A, M * K), *dW = dev_bf16(W, N * K), *db = dev_f32(bias, N), *dD = dev_f32(C, M * N);
    ct_cuda_gemm_args g = {M, N, K, dA, K, dW, K, db, dD, N, 1, 0.5f, 1.f, CT_CUDA_ACT_NONE, 0, 0};
    CT_ASSERT_OK(ct_cuda_gemm(g_cuda, &g));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)A[i * K + k] * W[j * K + k];
            ref[i * N + j] = (float)(0.5 * s + bias[j] + C[i * N + j]);
        }
    float *got = get_f32(dD, M * N);
    expect_close("gemm f32 alpha+bias+residual", got, ref, M * N, 1e-5);
    free(got);
    ct_cuda_dfree(g_cuda, dA); ct_cuda_dfree(g_cuda, dW); ct_cuda_dfree(g_cuda, db); ct_cuda_dfree(g_cuda, dD);
    free(A); free(W); free(bias); free(C); free(ref);
}

static void test_bgemm(void **state) {
    (void)state;
    int M = 33, N = 40, K = 24, nb = 3;
    float *A = malloc(nb * M * K * 4), *Bm = malloc(nb * N * K * 4), *ref = malloc(nb * M * N * 4);
    fill(A, nb * M * K, 1.f); fill(Bm, nb * N * K, 1.f);
    for (int trans = 0; trans < 2; trans++) {
        void *dA = dev_bf16(A, nb * M * K), *dB = dev_bf16(Bm, nb * N * K), *dD = dev_poison(nb * M * N * 4);
        ct_cuda_bgemm_args g = {M, N, K, nb, dA, K, (long long)M * K, dB, trans ? K : N, (long long)N * K, trans,
                                dD, N, (long long)M * N, 1, 0.75f, 0};
        CT_ASSERT_OK(ct_cuda_bgemm(g_cuda, &g));
        for (int b = 0; b < nb; b++)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int k = 0; k < K; k++)
                        s += (double)A[b * M * K + i * K + k] *
                             (trans ? Bm[b * N * K + j * K + k] : Bm[b * N * K + k * N + j]);
                    ref[b * M * N + i * N + j] = (float)(0.75 * s);
                }
        float *got = get_f32(dD, nb * M * N);
        expect_close(trans ? "bgemm B transposed" : "bgemm B plain", got, ref, nb * M * N, 1e-5);
        free(got);
        ct_cuda_dfree(g_cuda, dA); ct_cuda_dfree(g_cuda, dB); ct_cuda_dfree(g_cuda, dD);
    }
    free(A); free(Bm); free(ref);
}

static void ln_ref(float *y, const float *x, const float *w, const float *b, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        double m = 0, v = 0;
        for (int i = 0; i < n; i++) m += x[r * n + i];
        m /= n;
        for (int i = 0; i < n; i++) v += (x[r * n + i] - m) * (x[r * n + i] - m);
        v /= n;
        for (int i = 0; i < n; i++) y[r * n + i] = (float)((x[r * n + i] - m) / sqrt(v + 1e-5) * w[i] + b[i]);
    }
}

static void test_layernorm(void **state) {
    (void)state;
    for (int pass = 0; pass < 2; pass++) { /* warp-per-row path (n % 128 == 0), block path */
    int rows = 19, n = pass ? 200 : 1280;
    float *x = malloc(rows * n * 4), *w = malloc(n * 4), *b = malloc(n * 4), *ref = malloc(rows * n * 4);
    fill(x, rows * n, 3.f); fill(w, n, 1.f); fill(b, n, 1.f);
    for (int i = 0; i < rows * n; i++) x[i] += 2.f; /* a mean to remove */
    ln_ref(ref, x, w, b, rows, n);
    void *dx = dev_f32(x, rows * n), *dw = dev_f32(w, n), *db = dev_f32(b, n), *dy = dev_poison(rows * n * 2);
    CT_ASSERT_OK(ct_cuda_layernorm(g_cuda, dy, dx, dw, db, rows, n, 1e-5f));
    float *got = get_bf16(dy, rows * n);
    expect_close("layernorm bf16 out", got, ref, rows * n, 5e-3);
    free(got);
    {
        /* fused pair: y = LN1(x) fp32, a = LN2(y) bf16 */
        float *w2 = malloc(n * 4), *b2 = malloc(n * 4), *ref2 = malloc(rows * n * 4);
        fill(w2, n, 1.f); fill(b2, n, 1.f);
        ln_ref(ref2, ref, w2, b2, rows, n);
        void *dw2 = dev_f32(w2, n), *db2 = dev_f32(b2, n), *dy2 = dev_poison(rows * n * 4), *da2 = dev_poison(rows * n * 2);
        CT_ASSERT_OK(ct_cuda_layernorm2(g_cuda, dy2, da2, dx, dw, db, dw2, db2, rows, n, 1e-5f));
        float *g1 = get_f32(dy2, rows * n), *g2 = get_bf16(da2, rows * n);
        expect_close("layernorm2 first (f32)", g1, ref, rows * n, 1e-5);
        expect_close("layernorm2 second (bf16)", g2, ref2, rows * n, 5e-3);
        free(g1); free(g2); free(w2); free(b2); free(ref2);
        ct_cuda_dfree(g_cuda, dw2); ct_cuda_dfree(g_cuda, db2); ct_cuda_dfree(g_cuda, dy2); ct_cuda_dfree(g_cuda, da2);
    }
    CT_ASSERT_OK(ct_cuda_layernorm_f32(g_cuda, dx, dx, dw, db, rows, n, 1e-5f)); /* in place */
    got = get_f32(dx, rows * n);
    expect_close("layernorm f32 in place", got, ref, rows * n, 1e-5);
    free(got);
    ct_cuda_dfree(g_cuda, dx); ct_cuda_dfree(g_cuda, dw); ct_cuda_dfree(g_cuda, db); ct_cuda_dfree(g_cuda, dy);
    free(x); free(w); free(b); free(ref);
    }
}

static void test_conv_module(void **state) {
    (void)state;
    float *got;
    /* K = 9: the sliding-window kernel over several time tiles, a length
     * ending mid-tile; K = 7: the generic kernel */
    for (int pass = 0; pass < 2; pass++) {
    int B = 2, T = pass ? 23 : 150, d = 48, K = pass ? 7 : 9;
    int len[2] = {T, pass ? 9 : 70};
    float *a = malloc(B * T * 2 * d * 4), *w = malloc(d * K * 4), *bias = malloc(d * 4), *ref = malloc(B * T * d * 4);
    fill(a, B * T * 2 * d, 2.f); fill(w, d * K, 0.5f); fill(bias, d, 0.5f);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < d; c++) {
                double s = bias[c];
                for (int k = 0; k < K; k++) {
                    int tt = t + k - K / 2;
                    if (tt < 0 || tt >= len[b]) continue;
                    const float *r = a + ((size_t)b * T + tt) * 2 * d;
                    s += w[c * K + k] * r[c] / (1.0 + exp(-r[c + d]));
                }
                ref[((size_t)b * T + t) * d + c] = (float)(s / (1.0 + exp(-s)));
            }
    void *da = dev_bf16(a, B * T * 2 * d), *dw = dev_f32(w, d * K), *db = dev_f32(bias, d), *dl = dev_i32(len, B),
         *dy = dev_poison(B * T * d * 2);
    CT_ASSERT_OK(ct_cuda_glu_dwconv_silu(g_cuda, dy, da, dw, db, dl, B, T, d, K));
    got = get_bf16(dy, B * T * d);
    expect_close(pass ? "GLU+dwconv7+BN+SiLU (generic)" : "GLU+dwconv9+BN+SiLU (window)", got, ref, B * T * d, 5e-3);
    free(got);
    ct_cuda_dfree(g_cuda, da); ct_cuda_dfree(g_cuda, dw); ct_cuda_dfree(g_cuda, db); ct_cuda_dfree(g_cuda, dl);
    ct_cuda_dfree(g_cuda, dy);
    free(a); free(w); free(bias); free(ref);
    }
    /* SiLU: 16-byte path (n % 8 == 0) and the scalar path */
    for (int n = 1000; n <= 1003; n += 3) {
    float *x = malloc(n * 4), *r2 = malloc(n * 4);
    fill(x, n, 6.f);
    for (int i = 0; i < n; i++) r2[i] = (float)(x[i] / (1.0 + exp(-x[i])));
    void *dx = dev_bf16(x, n);
    CT_ASSERT_OK(ct_cuda_silu(g_cuda, dx, n));
    got = get_bf16(dx, n);
    expect_close(n == 1000 ? "SiLU (vector)" : "SiLU (scalar)", got, r2, n, 5e-3);
    free(got); free(x); free(r2); ct_cuda_dfree(g_cuda, dx);
    }
}

static void test_subsampling(void **state) {
    (void)state;
    int B = 2, T = 21, F = 16, C = 32;
    int L0[2] = {20, 7}, L1[2] = {(20 - 1) / 2 + 1, (7 - 1) / 2 + 1};
    int T1 = (T - 1) / 2 + 1, F1 = (F - 1) / 2 + 1, T2 = (T1 - 1) / 2 + 1, F2 = (F1 - 1) / 2 + 1;
    float *x = malloc(B * T * F * 4), *w = malloc(C * 9 * 4), *bias = malloc(C * 4);
    fill(x, B * T * F, 2.f); fill(w, C * 9, 0.5f); fill(bias, C, 0.5f);
    float *r1 = malloc(B * T1 * F1 * C * 4), *r2 = malloc(B * T2 * F2 * C * 4);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T1; t++)
            for (int f = 0; f < F1; f++)
                for (int c = 0; c < C; c++) {
                    double s = bias[c];
                    for (int kt = 0; kt < 3; kt++)
                        for (int kf = 0; kf < 3; kf++) {
                            int ti = 2 * t - 1 + kt, fi = 2 * f - 1 + kf;
                            if (ti < 0 || ti >= L0[b] || fi < 0 || fi >= F) continue;
                            s += w[c * 9 + kt * 3 + kf] * x[((size_t)b * T + ti) * F + fi];
                        }
                    r1[(((size_t)b * T1 + t) * F1 + f) * C + c] = t < L1[b] && s > 0 ? bfr((float)s) : 0.f;
                }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T2; t++)
            for (int f = 0; f < F2; f++)
                for (int c = 0; c < C; c++) {
                    double s = bias[c];
                    for (int kt = 0; kt < 3; kt++)
                        for (int kf = 0; kf < 3; kf++) {
                            int ti = 2 * t - 1 + kt, fi = 2 * f - 1 + kf;
                            if (ti < 0 || ti >= L1[b] || fi < 0 || fi >= F1) continue;
                            s += w[c * 9 + kt * 3 + kf] * r1[(((size_t)b * T1 + ti) * F1 + fi) * C + c];
                        }
                    r2[(((size_t)b * T2 + t) * F2 + f) * C + c] = (float)s;
                }
    void *dx = dev_f32(x, B * T * F), *dw = dev_f32(w, C * 9), *db = dev_f32(bias, C), *dl0 = dev_i32(L0, B),
         *dl1 = dev_i32(L1, B), *y1 = dev_poison(B * T1 * F1 * C * 2), *y2 = dev_poison(B * T2 * F2 * C * 2);
    CT_ASSERT_OK(ct_cuda_subsample_conv0(g_cuda, y1, dx, dw, db, dl0, dl1, B, T, F, C));
    CT_ASSERT_OK(ct_cuda_subsample_dw(g_cuda, y2, y1, dw, db, dl1, B, T1, F1, C));
    float *g1 = get_bf16(y1, B * T1 * F1 * C), *g2 = get_bf16(y2, B * T2 * F2 * C);
    expect_close("subsampling conv0+ReLU+mask", g1, r1, B * T1 * F1 * C, 5e-3);
    expect_close("subsampling depthwise s2", g2, r2, B * T2 * F2 * C, 5e-3);
    free(g1); free(g2);
    void *ptrs[] = {dx, dw, db, dl0, dl1, y1, y2};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) ct_cuda_dfree(g_cuda, ptrs[i]);
    free(x); free(w); free(bias); free(r1); free(r2);
}

static void attn_ref(float *o, const float *q, const float *kv, size_t ld, int n, int Dh) {
    double s[512], mx = -1e30, sum = 0;
    for (int j = 0; j < n; j++) {
        double a = 0;
        for (int e = 0; e < Dh; e++) a += (double)q[e] * kv[j * ld + e];
        s[j] = a / sqrt((double)Dh);
        if (s[j] > mx) mx = s[j];
    }
    for (int j = 0; j < n; j++) sum += s[j] = exp(s[j] - mx);
    for (int e = 0; e < Dh; e++) {
        double a = 0;
        for (int j = 0; j < n; j++) a += s[j] / sum * kv[j * ld + ld / 2 + e];
        o[e] = (float)a;
    }
}

/* Each head size takes a different value-loading path in attn_one: 64, 128
 * and 256 vectorised (2, 4, 8 values per lane), 16 the strided fallback. */
static void decoder_attn_case(int H, int Dh) {
    int B = 3, d = H * Dh, S = 9, T = 30;
    printf("  decoder attention, %d heads of %d\n", H, Dh);
    /* self attention: run 5 positions, check the last one */
    float *qkv = malloc(S * B * 3 * d * 4), *ref = malloc(B * d * 4), *cache = malloc(B * S * 2 * d * 4);
    fill(qkv, S * B * 3 * d, 1.f);
    void *dc = dev_poison(B * S * 2 * d * 2), *dpos, *dout = dev_poison(B * d * 2);
    int pos = 0;
    dpos = dev_i32(&pos, 1);
    void *dq = NULL;
    int P = 5;
    for (int p = 0; p < P; p++) {
        dq = dev_bf16(qkv + (size_t)p * B * 3 * d, B * 3 * d);
        CT_ASSERT_OK(ct_cuda_h2d(g_cuda, dpos, &p, 4));
        CT_ASSERT_OK(ct_cuda_dec_self_attn(g_cuda, dout, dq, dc, dpos, NULL, B, S, H, Dh));
        CT_ASSERT_OK(ct_cuda_sync(g_cuda));
        ct_cuda_dfree(g_cuda, dq);
    }
    for (int b = 0; b < B; b++)
        for (int p = 0; p < P; p++)
            for (int e = 0; e < d; e++) {
                cache[((size_t)b * S + p) * 2 * d + e] = qkv[((size_t)p * B + b) * 3 * d + d + e];
                cache[((size_t)b * S + p) * 2 * d + d + e] = qkv[((size_t)p * B + b) * 3 * d + 2 * d + e];
            }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            float kvh[9 * 2 * 256]; /* S positions × (k, v) × Dh ≤ 256 */
            for (int p = 0; p < P; p++)
                for (int e = 0; e < Dh; e++) {
                    kvh[p * 2 * Dh + e] = cache[((size_t)b * S + p) * 2 * d + h * Dh + e];
                    kvh[p * 2 * Dh + Dh + e] = cache[((size_t)b * S + p) * 2 * d + d + h * Dh + e];
                }
            attn_ref(ref + b * d + h * Dh, qkv + ((size_t)(P - 1) * B + b) * 3 * d + h * Dh, kvh, 2 * Dh, P, Dh);
        }
    float *got = get_bf16(dout, B * d);
    expect_close("decoder self-attn + KV cache", got, ref, B * d, 6e-3);
    free(got);
    /* cross attention over a stacked (T, ld) K/V with masked frames */
    int len[3] = {30, 11, 1}, L = 2;
    size_t ld = (size_t)L * 2 * d;
    float *kv = malloc(B * T * ld * 4), *q = malloc(B * d * 4);
    fill(kv, B * T * ld, 1.f); fill(q, B * d, 1.f);
    int layer = 1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            float *kvh = malloc(T * 2 * Dh * 4);
            for (int j = 0; j < T; j++)
                for (int e = 0; e < Dh; e++) {
                    kvh[j * 2 * Dh + e] = kv[((size_t)b * T + j) * ld + layer * 2 * d + h * Dh + e];
                    kvh[j * 2 * Dh + Dh + e] = kv[((size_t)b * T + j) * ld + layer * 2 * d + d + h * Dh + e];
                }
            attn_ref(ref + b * d + h * Dh, q + b * d + h * Dh, kvh, 2 * Dh, len[b], Dh);
            free(kvh);
        }
    void *dkv = dev_bf16(kv, B * T * ld), *dqq = dev_bf16(q, B * d), *dl = dev_i32(len, B);
    CT_ASSERT_OK(ct_cuda_dec_cross_attn(g_cuda, dout, dqq, (uint16_t *)dkv + layer * 2 * d, ld, dl, NULL, B, T, H, Dh));
    got = get_bf16(dout, B * d);
    expect_close("decoder cross-attn masked", got, ref, B * d, 6e-3);
    free(got);
    /* finished rows (skip) come out zero; the others as before */
    int fin[3] = {0, 1, 0};
    void *dfin = dev_i32(fin, B);
    CT_ASSERT_OK(ct_cuda_memset(g_cuda, dout, 0xff, B * d * 2));
    CT_ASSERT_OK(ct_cuda_dec_cross_attn(g_cuda, dout, dqq, (uint16_t *)dkv + layer * 2 * d, ld, dl, dfin, B, T, H, Dh));
    got = get_bf16(dout, B * d);
    for (int e = 0; e < d; e++)
        if (got[d + e] != 0.f) fail_msg("cross-attn: finished row 1 element %d is %g, not 0", e, got[d + e]);
    expect_close("cross-attn row 0, skip on", got, ref, d, 6e-3);
    expect_close("cross-attn row 2, skip on", got + 2 * d, ref + 2 * d, d, 6e-3);
    free(got);
    CT_ASSERT_OK(ct_cuda_memset(g_cuda, dout, 0xff, B * d * 2));
    void *dq3 = dev_bf16(qkv, B * 3 * d); /* rows 0 and 2 run normally at the last position again */
    CT_ASSERT_OK(ct_cuda_dec_self_attn(g_cuda, dout, dq3, dc, dpos, dfin, B, S, H, Dh));
    ct_cuda_dfree(g_cuda, dq3);
    got = get_bf16(dout, B * d);
    for (int e = 0; e < d; e++)
        if (got[d + e] != 0.f) fail_msg("self-attn: finished row 1 element %d is %g, not 0", e, got[d + e]);
    free(got);
    ct_cuda_dfree(g_cuda, dfin);
    void *ptrs[] = {dc, dpos, dout, dkv, dqq, dl};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) ct_cuda_dfree(g_cuda, ptrs[i]);
    free(qkv); free(ref); free(cache); free(kv); free(q);
}

static void test_decoder_attn(void **state) {
    (void)state;
    decoder_attn_case(2, 64);
    decoder_attn_case(2, 128);
    decoder_attn_case(1, 256);
    decoder_attn_case(4, 16);
}

static void test_greedy(void **state) {
    (void)state;
    int B = 3, V = 5000, S = 8, eos = 3, pad = 2;
    int prompt[2] = {13, 7};
    float *lg = malloc(B * V * 4);
    fill(lg, B * V, 1.f);
    lg[0 * V + 4000] = 5.f; lg[0 * V + 100] = 5.f; /* tie: lowest id wins */
    lg[1 * V + eos] = 9.f; lg[1 * V + 77] = 8.f;   /* eos banned while < min_new */
    lg[2 * V + eos] = 9.f;
    int tok[3] = {13, 13, 13}, pos = 0, fin[3] = {0, 0, 0}, lim[3] = {-1, -1, 0};
    int *out = malloc(B * S * 4);
    for (int i = 0; i < B * S; i++) out[i] = -1;
    void *dt = dev_i32(tok, B), *dout = dev_i32(out, B * S), *dp = dev_i32(&pos, 1), *df = dev_i32(fin, B),
         *dl = dev_f32(lg, B * V), *dpr = dev_i32(prompt, 2), *dlim = dev_i32(lim, B);
    /* step at pos 0 → prompt[1] forced */
    CT_ASSERT_OK(ct_cuda_greedy_step(g_cuda, dt, dout, S, dp, df, dl, dpr, 2, NULL, NULL, 0, B, V, eos, pad, 1));
    /* step at pos 1 → argmax, eos banned (generated 0 < min_new 1) */
    CT_ASSERT_OK(ct_cuda_greedy_step(g_cuda, dt, dout, S, dp, df, dl, dpr, 2, dlim, NULL, 0, B, V, eos, pad, 1));
    /* step at pos 2 → eos allowed now */
    CT_ASSERT_OK(ct_cuda_greedy_step(g_cuda, dt, dout, S, dp, df, dl, dpr, 2, NULL, NULL, 0, B, V, eos, pad, 1));
    CT_ASSERT_OK(ct_cuda_sync(g_cuda));
    CT_ASSERT_OK(ct_cuda_d2h(g_cuda, out, dout, B * S * 4));
    CT_ASSERT_OK(ct_cuda_d2h(g_cuda, &pos, dp, 4));
    CT_ASSERT_OK(ct_cuda_d2h(g_cuda, fin, df, B * 4));
    assert_int_equal(pos, 3);
    assert_int_equal(out[0 * S + 1], 7);
    assert_int_equal(out[0 * S + 2], 100);
    assert_int_equal(out[1 * S + 2], 77);
    assert_int_equal(out[1 * S + 3], eos);
    assert_int_equal(fin[1], 1);
    assert_int_equal(out[2 * S + 2], pad); /* row limit 0: nothing generated */
    assert_int_equal(out[2 * S + 3], pad);
    /* teacher forcing: the forced id goes in (tok), the argmax is recorded (out),
     * and an eos prediction does not finish the row */
    {
        int maxnew = 2, forced[6] = {11, 12, 21, 22, 31, 32};
        pos = 1;
        int zero[3] = {0, 0, 0};
        void *dfo = dev_i32(forced, B * maxnew);
        CT_ASSERT_OK(ct_cuda_h2d(g_cuda, dp, &pos, 4));
        CT_ASSERT_OK(ct_cuda_h2d(g_cuda, df, zero, B * 4));
        CT_ASSERT_OK(ct_cuda_greedy_step(g_cuda, dt, dout, S, dp, df, dl, dpr, 2, NULL, dfo, maxnew, B, V, eos, pad, 0));
        CT_ASSERT_OK(ct_cuda_greedy_step(g_cuda, dt, dout, S, dp, df, dl, dpr, 2, NULL, dfo, maxnew, B, V, eos, pad, 0));
        CT_ASSERT_OK(ct_cuda_sync(g_cuda));
        CT_ASSERT_OK(ct_cuda_d2h(g_cuda, out, dout, B * S * 4));
        CT_ASSERT_OK(ct_cuda_d2h(g_cuda, tok, dt, B * 4));
        CT_ASSERT_OK(ct_cuda_d2h(g_cuda, fin, df, B * 4));
        assert_int_equal(out[0 * S + 2], 100); /* the argmax, though 11 went in */
        assert_int_equal(out[1 * S + 2], eos); /* eos predicted (min_new 0) ... */
        assert_int_equal(out[1 * S + 3], eos); /* ... and the row went on */
        assert_int_equal(fin[1], 0);
        assert_int_equal(tok[0], 12);
        assert_int_equal(tok[1], 22);
        assert_int_equal(tok[2], 32);
        ct_cuda_dfree(g_cuda, dfo);
    }
    void *ptrs[] = {dt, dout, dp, df, dl, dpr, dlim};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) ct_cuda_dfree(g_cuda, ptrs[i]);
    free(lg); free(out);
}

/* GPU mel pieces against a direct double-precision DFT of MODEL.md's recipe. */
static void test_mel(void **state) {
    (void)state;
    int B = 2, M = 16;
    int n[2] = {8000, 3205};
    int ns = 8000, T = 1 + ns / 160;
    float *pcm = calloc(B * ns, 4), *win = malloc(400 * 4);
    for (int i = 0; i < B * ns; i++) pcm[i] = 0.1f * frand();
    for (int k = 0; k < 400; k++) win[k] = (float)(0.5 - 0.5 * cos(2 * M_PI * k / 399.0));
    /* a small random "filterbank" (257, M) exercises the same GEMM path */
    float *fbt = malloc(257 * M * 4), *dft = malloc(400 * 514 * 4);
    for (int i = 0; i < 257 * M; i++) fbt[i] = fabsf(frand()) * 0.01f;
    for (int k = 0; k < 400; k++)
        for (int f = 0; f < 257; f++) {
            double a = 2 * M_PI * f * (k + 56) / 512.0;
            dft[k * 514 + f] = (float)cos(a);
            dft[k * 514 + 257 + f] = (float)-sin(a);
        }
    int L[2] = {n[0] / 160, n[1] / 160};
    float *ref = calloc(B * T * M, 4);
    double *lm = malloc(T * M * 8);
    for (int b = 0; b < B; b++) {
        const float *x = pcm + b * ns;
        for (int f = 0; f < T; f++) {
            double pw[257];
            for (int k = 0; k < 257; k++) {
                double re = 0, im = 0;
                for (int j = 0; j < 400; j++) {
                    int s = f * 160 - 200 + j;
                    double y = s < 0 || s >= n[b] ? 0 : s == 0 ? x[0] : x[s] - 0.97f * x[s - 1];
                    re += y * win[j] * cos(2 * M_PI * k * (j + 56) / 512.0);
                    im -= y * win[j] * sin(2 * M_PI * k * (j + 56) / 512.0);
                }
                pw[k] = re * re + im * im;
            }
            for (int m = 0; m < M; m++) {
                double s = 0;
                for (int k = 0; k < 257; k++) s += fbt[k * M + m] * pw[k];
                lm[f * M + m] = log(s + 5.9604644775390625e-08);
            }
        }
        for (int m = 0; m < M; m++) {
            double mean = 0, var = 0;
            for (int f = 0; f < L[b]; f++) mean += lm[f * M + m];
            mean /= L[b];
            for (int f = 0; f < L[b]; f++) var += (lm[f * M + m] - mean) * (lm[f * M + m] - mean);
            var /= (L[b] - 1);
            for (int f = 0; f < L[b]; f++) ref[(b * T + f) * M + m] = (float)((lm[f * M + m] - mean) / (sqrt(var) + 1e-5));
        }
    }
    void *dp = dev_f32(pcm, B * ns), *dn = dev_i32(n, B), *dw = dev_f32(win, 400), *dL = dev_i32(L, B),
         *dfb = dev_f32(fbt, 257 * M), *ddft = dev_f32(dft, 400 * 514);
    void *fr = dev_poison(B * T * 400 * 4), *sp = dev_poison(B * T * 514 * 4), *pw = dev_poison(B * T * 257 * 4),
         *ft = dev_poison(B * T * M * 4);
    CT_ASSERT_OK(ct_cuda_mel_frames(g_cuda, fr, dp, dn, B, ns, T, dw));
    CT_ASSERT_OK(ct_cuda_sgemm(g_cuda, B * T, 514, 400, fr, 400, ddft, 514, sp, 514));
    CT_ASSERT_OK(ct_cuda_mel_power(g_cuda, pw, sp, (size_t)B * T));
    CT_ASSERT_OK(ct_cuda_sgemm(g_cuda, B * T, M, 257, pw, 257, dfb, M, ft, M));
    CT_ASSERT_OK(ct_cuda_mel_normalize(g_cuda, ft, dL, B, T, M));
    float *got = get_f32(ft, B * T * M);
    expect_close("mel frontend (fp32)", got, ref, B * T * M, 1e-4);
    free(got);
    void *ptrs[] = {dp, dn, dw, dL, dfb, ddft, fr, sp, pw, ft};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) ct_cuda_dfree(g_cuda, ptrs[i]);
    free(pcm); free(win); free(fbt); free(dft); free(ref); free(lm);
}

static void test_alloc_injection(void **state) {
    (void)state;
    void *p = NULL;
    ct_cuda_set_fail_alloc_above(g_cuda, 1 << 20);
    CT_ASSERT_STATUS(ct_cuda_malloc(g_cuda, &p, 2 << 20), CT_ERR_OOM);
    CT_ASSERT_ERROR_HAS("CT_CUDA_FAIL_ALLOC_ABOVE");
    assert_null(p);
    CT_ASSERT_OK(ct_cuda_malloc(g_cuda, &p, 1 << 20));
    ct_cuda_dfree(g_cuda, p);
    ct_cuda_set_fail_alloc_above(g_cuda, 0);
    /* a real allocation failure maps to CT_ERR_OOM too */
    CT_ASSERT_STATUS(ct_cuda_malloc(g_cuda, &p, (size_t)1 << 50), CT_ERR_OOM);
    CT_ASSERT_OK(ct_cuda_sync(g_cuda)); /* and leaves the context usable */
}
#endif

int main(void) {
#ifndef CT_HAVE_CUDA
    printf("SKIP test_cuda_ops: built without CUDA (no nvcc at configure time)\n");
    return 0;
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm),         cmocka_unit_test(test_bgemm),
        cmocka_unit_test(test_layernorm),    cmocka_unit_test(test_conv_module),
        cmocka_unit_test(test_subsampling),  cmocka_unit_test(test_decoder_attn),
        cmocka_unit_test(test_greedy),       cmocka_unit_test(test_mel),
        cmocka_unit_test(test_alloc_injection),
    };
    return cuda_test_main("test_cuda_ops", tests, sizeof tests / sizeof tests[0]);
#endif
}
