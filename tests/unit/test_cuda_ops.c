/* test_cuda_ops.c — the CUDA runtime's cuBLASLt GEMM wrappers, the mel
 * frontend's kernels and the allocation fault injection (the op table's own
 * entries: test_cuda_backend.c; the encoder attention pieces:
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
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_bgemm),
        cmocka_unit_test(test_mel),
        cmocka_unit_test(test_alloc_injection),
    };
    return cuda_test_main("test_cuda_ops", tests, sizeof tests / sizeof tests[0]);
#endif
}
