/* test_cuda_attention.c — the encoder's relative-position attention on the
 * GPU: the unfused pieces (u/v terms, score GEMMs, shift/mask/softmax, P·V,
 * position table) and the fused kernel, each against a CPU
 * version written from MODEL.md (double accumulation over the same
 * bf16-rounded inputs), and the fused kernel against the unfused path.
 * Without CUDA compiled in, or without a device, skipped with a message.
 */
#include "cuda_test_util.h"

#ifdef CT_HAVE_CUDA
/* CPU reference tail: o (Dh) = softmax(s[0..n), max mx) · V with value rows
 * of stride ldv starting at v (double accumulation); s is overwritten. */
static void softmax_pv_ref(float *o, double *s, double mx, int n, const float *v, size_t ldv, int Dh) {
    double sum = 0;
    for (int j = 0; j < n; j++) sum += s[j] = exp(s[j] - mx);
    for (int e = 0; e < Dh; e++) {
        double a = 0;
        for (int j = 0; j < n; j++) a += s[j] / sum * v[(size_t)j * ldv + e];
        o[e] = (float)a;
    }
}

/* Padded query rows (i ≥ len[b]) must be exactly zero, not merely small. */
static void expect_padded_rows_zero(const char *what, const float *got, const int *len, int B, int T, int D) {
    for (int b = 0; b < B; b++)
        for (int i = len[b]; i < T; i++)
            for (int e = 0; e < D; e++)
                if (got[((size_t)b * T + i) * D + e] != 0.f) fail_msg("%s: padded row %d of batch %d not zero", what, i, b);
}

/* The engine's unfused path on qkv rows (B,T,3D) bf16: ac = q·kᵀ and
 * bd = q·rpᵀ as batched GEMMs straight on the rows (bd rows padded to ldbd),
 * shift + mask + softmax with the uk/vr terms (uk may be NULL), P·V per head
 * into o's columns. ac, bd, P are scratch of (H,B,T,T) fp32, (H,B·T,ldbd)
 * fp32 and (H,B,T,T) bf16. */
static void unfused_attention(void *o, const void *qkv, const void *rp, const void *uk, const void *vr,
                              const void *len, int B, int T, int H, int Dh, float scale, void *ac, void *bd, int ldbd,
                              void *P) {
    int D = H * Dh;
    size_t R = (size_t)B * T;
    long long sq = (long long)T * 3 * D;
    for (int h = 0; h < H; h++) {
        ct_cuda_bgemm_args g1 = {T, T, Dh, B, (const uint16_t *)qkv + h * Dh, 3 * D, sq,
                                 (const uint16_t *)qkv + D + h * Dh, 3 * D, sq, 1, (float *)ac + (size_t)h * B * T * T,
                                 T, (long long)T * T, 1, 1.f, 0};
        CT_ASSERT_OK(ct_cuda_bgemm(g_cuda, &g1));
    }
    ct_cuda_bgemm_args g2 = {(int)R, 2 * T - 1, Dh, H, qkv, 3 * D, Dh, rp, D, Dh, 1, bd, ldbd, (long long)R * ldbd, 1,
                             1.f, 0};
    CT_ASSERT_OK(ct_cuda_bgemm(g_cuda, &g2));
    CT_ASSERT_OK(ct_cuda_relattn_softmax_uv(g_cuda, P, ac, bd, (size_t)ldbd, uk, vr, len, B, T, H, scale));
    for (int h = 0; h < H; h++) {
        ct_cuda_bgemm_args g3 = {T, Dh, T, B, (uint16_t *)P + (size_t)h * B * T * T, T, (long long)T * T,
                                 (const uint16_t *)qkv + 2 * D + h * Dh, 3 * D, sq, 0, (uint16_t *)o + h * Dh, D,
                                 (long long)T * D, 0, 1.f, 0};
        CT_ASSERT_OK(ct_cuda_bgemm(g_cuda, &g3));
    }
}

/* The whole relative-position attention (minus projections) against a CPU
 * version written straight from MODEL.md: scores (q+u)·k_j + (q+v)·R[T−1−(i−j)]. */
static void test_relattn(void **state) {
    (void)state;
    int B = 3, T = 37, H = 2, Dh = 32, D = H * Dh;
    int len[3] = {37, 20, 1};
    size_t R = (size_t)B * T;
    float *qkv = malloc(R * 3 * D * 4), *u = malloc(D * 4), *v = malloc(D * 4), *rp = malloc((2 * T - 1) * D * 4);
    fill(qkv, R * 3 * D, 1.f); fill(u, D, 0.5f); fill(v, D, 0.5f); fill(rp, (2 * T - 1) * D, 1.f);
    float scale = 1.f / sqrtf((float)Dh);
    float *ref = calloc(R * D, 4);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < len[b]; i++) {
                double s[64], mx = -1e30;
                const float *q = qkv + ((size_t)b * T + i) * 3 * D + h * Dh;
                for (int j = 0; j < len[b]; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * D + D + h * Dh;
                    const float *r = rp + (size_t)(T - 1 - (i - j)) * D + h * Dh;
                    double a = 0, c = 0;
                    for (int e = 0; e < Dh; e++) {
                        a += (double)bfr(q[e] + u[h * Dh + e]) * k[e];
                        c += (double)bfr(q[e] + v[h * Dh + e]) * r[e];
                    }
                    s[j] = (a + c) * scale;
                    if (s[j] > mx) mx = s[j];
                }
                softmax_pv_ref(ref + ((size_t)b * T + i) * D + h * Dh, s, mx, len[b],
                               qkv + (size_t)b * T * 3 * D + 2 * D + h * Dh, 3 * D, Dh);
            }
    void *dqkv = dev_bf16(qkv, R * 3 * D), *du = dev_f32(u, D), *dv = dev_f32(v, D), *drp = dev_bf16(rp, (2 * T - 1) * D);
    void *dlen = dev_i32(len, B);
    int ldbd = (2 * T - 1 + 7) & ~7; /* padded rows, as the engine uses */
    void *ac = dev_poison(H * R * T * 4), *bd = dev_poison(H * R * ldbd * 4), *P = dev_poison(H * R * T * 2);
    /* the engine's path: GEMMs straight on the qkv rows, u/v as bias terms */
    {
        void *uk = dev_poison(H * R * 4), *vr = dev_poison(H * (2 * T - 1) * 4), *o2 = dev_poison(R * D * 2);
        CT_ASSERT_OK(ct_cuda_relattn_uv(g_cuda, uk, vr, dqkv, drp, du, dv, B, T, H, Dh));
        unfused_attention(o2, dqkv, drp, uk, vr, dlen, B, T, H, Dh, scale, ac, bd, ldbd, P);
        float *g = get_bf16(o2, R * D);
        expect_close("rel-pos attention via u/v terms", g, ref, R * D, 1e-2);
        expect_padded_rows_zero("rel-pos attention via u/v terms", g, len, B, T, D); /* their P rows are 0 */
        free(g);
        /* the engine's folding: q' = q + u in the qkv rows, v' = v − u, no uk term */
        {
            float *qf = malloc(R * 3 * D * 4), *vu = malloc(D * 4);
            memcpy(qf, qkv, R * 3 * D * 4);
            for (size_t r = 0; r < R; r++)
                for (int e = 0; e < D; e++) qf[r * 3 * D + e] += u[e];
            for (int e = 0; e < D; e++) vu[e] = v[e] - u[e];
            void *dqf = dev_bf16(qf, R * 3 * D), *dvu = dev_f32(vu, D);
            CT_ASSERT_OK(ct_cuda_relattn_uv(g_cuda, NULL, vr, dqf, drp, du, dvu, B, T, H, Dh));
            CT_ASSERT_OK(ct_cuda_memset(g_cuda, o2, 0xff, R * D * 2));
            unfused_attention(o2, dqf, drp, NULL, vr, dlen, B, T, H, Dh, scale, ac, bd, ldbd, P);
            float *gf = get_bf16(o2, R * D);
            expect_close("rel-pos attention, u folded", gf, ref, R * D, 1e-2);
            free(gf); free(qf); free(vu);
            /* the fused kernel on the same folded inputs, against the u/v form of MODEL.md */
            CT_ASSERT_OK(ct_cuda_memset(g_cuda, o2, 0xff, R * D * 2));
            CT_ASSERT_OK(ct_cuda_relattn_fused(g_cuda, o2, dqf, drp, vr, dlen, B, T, H, Dh, scale));
            gf = get_bf16(o2, R * D);
            expect_close("rel-pos attention, fused", gf, ref, R * D, 1e-2);
            free(gf);
            ct_cuda_dfree(g_cuda, dqf); ct_cuda_dfree(g_cuda, dvu);
        }
        ct_cuda_dfree(g_cuda, uk); ct_cuda_dfree(g_cuda, vr); ct_cuda_dfree(g_cuda, o2);
    }
    void *ptrs[] = {dqkv, du, dv, drp, dlen, ac, bd, P};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) ct_cuda_dfree(g_cuda, ptrs[i]);
    /* the position table */
    int Tp = 11, dp = 64;
    void *pe = dev_poison((2 * Tp - 1) * dp * 2);
    CT_ASSERT_OK(ct_cuda_relpos_table(g_cuda, pe, Tp, dp));
    float *pt = get_bf16(pe, (2 * Tp - 1) * dp), *pr = malloc((2 * Tp - 1) * dp * 4);
    for (int r = 0; r < 2 * Tp - 1; r++)
        for (int i = 0; i < dp / 2; i++) {
            double f = 1.0 / pow(10000.0, 2.0 * i / dp), p = Tp - 1 - r;
            pr[r * dp + 2 * i] = (float)sin(p * f);
            pr[r * dp + 2 * i + 1] = (float)cos(p * f);
        }
    expect_close("relative position table", pt, pr, (2 * Tp - 1) * dp, 4e-3);
    free(pt); free(pr); ct_cuda_dfree(g_cuda, pe);
    free(qkv); free(u); free(v); free(rp); free(ref);
}

/* The fused kernel (cuda_relattn_fused.cu) against a CPU version written from
 * MODEL.md on the engine's folded inputs (q' = q + u in the qkv rows,
 * vr = (v − u)·rp) and against the unfused GPU path on the same inputs. Shapes
 * cover several query blocks and key tiles with partial last ones, lengths
 * that end inside, at the edge of and before a tile, a fully padded query
 * block, and the head sizes of the tiny (16) and full (160) models. */
static void relattn_fused_case(int B, int T, int H, int Dh, const int *len) {
    int D = H * Dh;
    size_t R = (size_t)B * T, NP = (size_t)2 * T - 1;
    float *qkv = malloc(R * 3 * D * 4), *rp = malloc(NP * D * 4), *vr = malloc(H * NP * 4), *ref = calloc(R * D, 4);
    fill(qkv, R * 3 * D, 1.f); fill(rp, NP * D, 1.f);
    for (size_t i = 0; i < H * NP; i++) vr[i] = frand() * 2.f;
    float scale = 1.f / sqrtf((float)Dh);
    double *s = malloc(T * sizeof(double));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < len[b]; i++) {
                double mx = -1e300;
                const float *q = qkv + ((size_t)b * T + i) * 3 * D + h * Dh;
                for (int j = 0; j < len[b]; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * D + D + h * Dh;
                    const float *r = rp + (size_t)(T - 1 - i + j) * D + h * Dh;
                    double a = 0;
                    for (int e = 0; e < Dh; e++) a += (double)q[e] * k[e] + (double)q[e] * r[e];
                    s[j] = (a + vr[(size_t)h * NP + (T - 1 - i + j)]) * scale;
                    if (s[j] > mx) mx = s[j];
                }
                softmax_pv_ref(ref + ((size_t)b * T + i) * D + h * Dh, s, mx, len[b],
                               qkv + (size_t)b * T * 3 * D + 2 * D + h * Dh, 3 * D, Dh);
            }
    void *dqkv = dev_bf16(qkv, R * 3 * D), *drp = dev_bf16(rp, NP * D), *dvr = dev_f32(vr, H * NP);
    void *dlen = dev_i32(len, B), *o = dev_poison(R * D * 2);
    char what[96];
    assert_true(ct_cuda_relattn_fused_supports(Dh));
    CT_ASSERT_OK(ct_cuda_relattn_fused(g_cuda, o, dqkv, drp, dvr, dlen, B, T, H, Dh, scale));
    float *got = get_bf16(o, R * D);
    snprintf(what, sizeof what, "fused B%d T%d H%d Dh%d", B, T, H, Dh);
    expect_close(what, got, ref, R * D, 1e-2);
    expect_padded_rows_zero(what, got, len, B, T, D);
    /* the unfused path on the same inputs: both must agree to bf16 rounding of P and o */
    {
        int ldbd = (2 * T - 1 + 7) & ~7;
        void *ac = dev_poison((size_t)H * R * T * 4), *bd = dev_poison((size_t)H * R * ldbd * 4);
        void *P = dev_poison((size_t)H * R * T * 2), *o2 = dev_poison(R * D * 2);
        unfused_attention(o2, dqkv, drp, NULL, dvr, dlen, B, T, H, Dh, scale, ac, bd, ldbd, P);
        float *g2h = get_bf16(o2, R * D);
        snprintf(what, sizeof what, "unfused B%d T%d H%d Dh%d", B, T, H, Dh);
        expect_close(what, g2h, ref, R * D, 1e-2);
        snprintf(what, sizeof what, "fused vs unfused Dh%d", Dh);
        expect_close(what, got, g2h, R * D, 1e-2);
        free(g2h);
        void *fr[] = {ac, bd, P, o2};
        for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) ct_cuda_dfree(g_cuda, fr[i]);
    }
    free(got);
    void *fr[] = {dqkv, drp, dvr, dlen, o};
    for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) ct_cuda_dfree(g_cuda, fr[i]);
    free(qkv); free(rp); free(vr); free(ref); free(s);
}

static void test_relattn_fused(void **state) {
    (void)state;
    int l1[3] = {150, 64, 1};  /* full; exactly one key tile; a single key (blocks 1, 2 fully padded) */
    relattn_fused_case(3, 150, 2, 160, l1);
    int l2[2] = {129, 70};     /* one key past a tile edge; ends inside the second tile */
    relattn_fused_case(2, 129, 4, 16, l2);
    int l3[2] = {37, 30};      /* one query block, one partial key tile */
    relattn_fused_case(2, 37, 2, 64, l3);
    int l4[1] = {200};
    relattn_fused_case(1, 200, 1, 128, l4);
    CT_ASSERT_STATUS(ct_cuda_relattn_fused(g_cuda, NULL, NULL, NULL, NULL, NULL, 1, 8, 1, 24, 1.f), CT_ERR_UNSUPPORTED);
    assert_false(ct_cuda_relattn_fused_supports(24));
}
#endif

int main(void) {
#ifndef CT_HAVE_CUDA
    printf("SKIP test_cuda_attention: built without CUDA (no nvcc at configure time)\n");
    return 0;
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relattn),
        cmocka_unit_test(test_relattn_fused),
    };
    return cuda_test_main("test_cuda_attention", tests, sizeof tests / sizeof tests[0]);
#endif
}
