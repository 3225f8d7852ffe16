/* test_dnnl_pack.c — weights pre-packed into oneDNN's blocked layout
 * (compute/cpu/cpu_dnnl.h, ct_dnnl_matmul_w): the matmul op with packing
 * forced on (any CPU) against packing off and against the reference
 * definition (cpu-ref), for f32, bf16 (oneDNN bf16 forced on, emulated
 * without AVX512-BF16) and int8 weights; int8's integer products must be
 * bit-identical packed and plain. Also: no packing below
 * CT_DNNL_PACK_ROWS rows, a weight changed at the same address is not
 * served from its stale copy, freeing a weight drops its copy, a
 * file-backed view keeps giving the right products after its pages are
 * handed back, and the default (auto) policy packs nothing (no shape
 * measured faster end to end: docs/PERFORMANCE.md "Pre-packed weights"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compute/backend.h"
#include "compute/cpu/cpu_features.h"
#include "compute/cpu/cpu_state.h"
#include "compute/quant.h"
#include "compute/ref/ops_ref.h"
#include "testutil.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float *rnd(size_t n) { return ct_test_rnd(&rng_state, n); }

#define CHECK_CLOSE(a, b, n, tol)                                                                   \
    do {                                                                                            \
        double e_ = ct_rel_l2((a), (b), (n));                                                       \
        if (!(e_ <= (tol))) fail_msg("%s vs %s: relative L2 %.3g > %.3g", #a, #b, e_, (double)(tol)); \
    } while (0)

typedef struct fixture {
    ct_backend *ref, *on, *off;
    ct_arena ws;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    ct_backend_options on = ct_backend_default_options(), off = on;
    on.dnnl_bf16 = 1, on.dnnl_pack = 1;
    off.dnnl_bf16 = 1, off.dnnl_pack = -1;
    if (ct_backend_create("cpu-ref", NULL, &f->ref) || ct_backend_create("cpu", &on, &f->on) ||
        ct_backend_create("cpu", &off, &f->off))
        return -1;
    if (ct_backend_arena_create(f->on, 64u << 20, &f->ws)) return -1;
    *state = f;
    return 0;
}
static int teardown(void **state) {
    fixture *f = *state;
    ct_backend_arena_free(f->on, &f->ws);
    ct_backend_free(f->ref);
    ct_backend_free(f->on);
    ct_backend_free(f->off);
    free(f);
    return 0;
}

static int packs(ct_backend *be) {
    const ct_cpu_state *st = ct_cpu_state_of(be);
    int n = 0;
    if (st && st->dnnl) ct_dnnl_pack_stats(st->dnnl, &n, NULL);
    return n;
}

/* Whether the op takes oneDNN for this weight type at M rows here (else
 * packing cannot apply and only the results are compared). */
static int takes_dnnl(ct_backend *be, ct_dtype dt, int M) {
    const ct_cpu_state *st = ct_cpu_state_of(be);
    if (!st || !st->dnnl || M <= 4) return 0;
    if (dt == CT_DTYPE_Q8) return st->dnnl_u8s8;
    return dt == CT_DTYPE_BF16 ? st->dnnl_bf16 : st->dnnl_f32;
}

static ct_tensor make_weight(fixture *f, ct_dtype dt, const float *w, int N, int K) {
    ct_tensor t;
    if (dt == CT_DTYPE_Q8) {
        int64_t bad = 0;
        CT_ASSERT_OK(ct_tensor_quantize_q8(f->on, w, CT_DTYPE_F32, N, K, &bad, &t));
    } else {
        CT_ASSERT_OK(ct_tensor_upload(f->on, dt, w, CT_DTYPE_F32, 2, (const int64_t[]){N, K}, &t));
    }
    return t;
}

/* Packed against plain and the reference, over shapes with N ≥ K and N < K,
 * each epilogue form, a row count below the packing threshold first (no
 * copy) and then above it, and then a smaller one on the same copy. */
static void test_packed_vs_plain(void **state) {
    fixture *f = *state;
    const ct_dtype dts[] = {CT_DTYPE_F32, CT_DTYPE_BF16, CT_DTYPE_Q8};
    const int shapes[][2] = {{256, 128}, {96, 320}, {130, 96}};
    const int rows[] = {CT_DNNL_PACK_ROWS - 1, 200, CT_DNNL_PACK_ROWS, 70};
    for (size_t di = 0; di < sizeof dts / sizeof *dts; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
            const int N = shapes[si][0], K = shapes[si][1];
            float *w = rnd((size_t)N * K), *b = rnd(N);
            ct_tensor wt = make_weight(f, dts[di], w, N, K);
            const int before = packs(f->on);
            for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++) {
                const int M = rows[ri], mode = (int)ri % 4;
                float *x = rnd((size_t)M * K), *r = rnd((size_t)M * N);
                float *y0 = malloc(sizeof(float) * M * N), *y1 = malloc(sizeof(float) * M * N),
                      *y2 = malloc(sizeof(float) * M * N);
                const ct_act act = mode == 1 ? CT_ACT_SILU : mode == 3 ? CT_ACT_RELU : CT_ACT_NONE;
                const float *res = mode >= 2 ? r : NULL;
                const float alpha = mode == 2 ? 0.5f : 1.0f;
                CT_ASSERT_OK(f->on->ops->matmul(f->on, y1, x, &wt, mode ? b : NULL, res, alpha, act, M, N, K, &f->ws));
                CT_ASSERT_OK(f->off->ops->matmul(f->off, y2, x, &wt, mode ? b : NULL, res, alpha, act, M, N, K, &f->ws));
                if (dts[di] == CT_DTYPE_Q8 && takes_dnnl(f->on, dts[di], M)) {
                    /* integer products: exact either way, same epilogue */
                    assert_memory_equal(y1, y2, sizeof(float) * (size_t)M * N);
                } else {
                    CHECK_CLOSE(y1, y2, (size_t)M * N, 1e-5);
                }
                /* bf16 rounds the activations in both; the reference does too for bf16
                 * weights on cpu-ref only through the weights, hence the bf16 bound */
                if (dts[di] == CT_DTYPE_F32) {
                    CT_ASSERT_OK(ct_ref_matmul(f->ref, y0, x, &wt, mode ? b : NULL, res, alpha, act, M, N, K, &f->ws));
                    CHECK_CLOSE(y1, y0, (size_t)M * N, 1e-5);
                }
                if (takes_dnnl(f->on, dts[di], M)) {
                    /* the copy is made on the first call with enough rows, once */
                    const int want = before + (M >= CT_DNNL_PACK_ROWS || ri > 0 ? 1 : 0);
                    if (dts[di] == CT_DTYPE_Q8) assert_int_equal(packs(f->on), want); /* u8·s8 is always blocked */
                    else assert_true(packs(f->on) <= want);
                }
                assert_int_equal(packs(f->off), 0);
                free(x), free(r), free(y0), free(y1), free(y2);
            }
            const int held = packs(f->on);
            ct_tensor_release(&wt); /* frees the memory: its copy goes too */
            assert_int_equal(packs(f->on), held > before ? held - 1 : held);
            free(w), free(b);
        }
    assert_int_equal(f->ws.used, 0);
}

/* A weight rewritten in place (as a recycled address would be) is packed
 * again, not served from the old copy. */
static void test_changed_weight(void **state) {
    fixture *f = *state;
    const int M = 96, N = 192, K = 128;
    float *w = rnd((size_t)N * K), *x = rnd((size_t)M * K);
    float *y0 = malloc(sizeof(float) * M * N), *y1 = malloc(sizeof(float) * M * N);
    ct_tensor wt = make_weight(f, CT_DTYPE_F32, w, N, K);
    CT_ASSERT_OK(f->on->ops->matmul(f->on, y1, x, &wt, NULL, NULL, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
    float *w2 = rnd((size_t)N * K);
    memcpy(wt.data, w2, sizeof(float) * (size_t)N * K);
    CT_ASSERT_OK(f->on->ops->matmul(f->on, y1, x, &wt, NULL, NULL, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
    CT_ASSERT_OK(ct_ref_matmul(f->ref, y0, x, &wt, NULL, NULL, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
    CHECK_CLOSE(y1, y0, (size_t)M * N, 1e-5);
    ct_tensor_release(&wt);
    free(w), free(w2), free(x), free(y0), free(y1);
}

/* A bf16 weight borrowed from a read-only file mapping, as the loader does:
 * after packing, its pages go back to the page cache; the products stay
 * right (packed copy), and so do the decoding rows that read the plain
 * pages again (GEMV, re-read from the file). */
static void test_file_backed(void **state) {
    fixture *f = *state;
    const int N = 1024, K = 512, M = 80; /* 1 MiB of weights: many whole pages */
    float *w = rnd((size_t)N * K), *x = rnd((size_t)M * K);
    uint16_t *h = malloc(2 * (size_t)N * K);
    for (size_t i = 0; i < (size_t)N * K; i++) h[i] = ct_f32_to_bf16(w[i]);
    char path[] = "/tmp/ct-pack-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, h, 2 * (size_t)N * K), (ssize_t)(2 * (size_t)N * K));
    void *map = mmap(NULL, 2 * (size_t)N * K, PROT_READ, MAP_PRIVATE, fd, 0);
    assert_true(map != MAP_FAILED);
    close(fd);
    unlink(path);
    ct_tensor view;
    assert_int_equal(ct_tensor_borrow(f->on, CT_DTYPE_BF16, map, CT_DTYPE_BF16, 2, (const int64_t[]){N, K}, &view), 1);
    view.file_backed = 1;
    ct_tensor owned = make_weight(f, CT_DTYPE_BF16, w, N, K);
    float *y1 = malloc(sizeof(float) * M * N), *y2 = malloc(sizeof(float) * M * N);
    for (int rep = 0; rep < 2; rep++) {
        CT_ASSERT_OK(f->on->ops->matmul(f->on, y1, x, &view, NULL, NULL, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
        CT_ASSERT_OK(f->off->ops->matmul(f->off, y2, x, &owned, NULL, NULL, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
        CHECK_CLOSE(y1, y2, (size_t)M * N, 1e-5);
    }
    CT_ASSERT_OK(f->on->ops->matmul(f->on, y1, x, &view, NULL, NULL, 1.0f, CT_ACT_NONE, 2, N, K, &f->ws));
    CT_ASSERT_OK(f->off->ops->matmul(f->off, y2, x, &owned, NULL, NULL, 1.0f, CT_ACT_NONE, 2, N, K, &f->ws));
    CHECK_CLOSE(y1, y2, (size_t)2 * N, 1e-6);
    ct_tensor_release(&owned);
    munmap(map, 2 * (size_t)N * K);
    free(w), free(x), free(h), free(y1), free(y2);
}

/* The default policy packs nothing on any CPU, so every CPU keeps today's
 * path exactly until a shape measures faster end to end. */
static void test_auto_policy(void **state) {
    fixture *f = *state;
    ct_backend *be;
    ct_backend_options o = ct_backend_default_options();
    CT_ASSERT_OK(ct_backend_create("cpu", &o, &be));
    const int M = 128;
    const int shapes[][2] = {{256, 128}, {128, 256}};
    for (int s = 0; s < 2; s++) {
        const int N = shapes[s][0], K = shapes[s][1];
        float *w = rnd((size_t)N * K), *x = rnd((size_t)M * K), *y = malloc(sizeof(float) * M * N);
        ct_tensor wt;
        CT_ASSERT_OK(ct_tensor_upload(be, CT_DTYPE_F32, w, CT_DTYPE_F32, 2, (const int64_t[]){N, K}, &wt));
        const int before = packs(be);
        CT_ASSERT_OK(be->ops->matmul(be, y, x, &wt, NULL, NULL, 1.0f, CT_ACT_NONE, M, N, K, &f->ws));
        assert_int_equal(packs(be), before);
        ct_tensor_release(&wt);
        free(w), free(x), free(y);
    }
    ct_backend_free(be);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packed_vs_plain),
        cmocka_unit_test(test_changed_weight),
        cmocka_unit_test(test_file_backed),
        cmocka_unit_test(test_auto_policy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
