/* test_ops_dispatch.c — compute/ops.h on the CPU tables (every build, no
 * device): the typed calls reach the float32 entries unchanged (same bytes
 * as calling the table directly), a buffer in another type is refused with a
 * message naming the backend, the op and the type, same-type convert is a
 * copy, and the CPU backends accept float32 activations only.
 */
#include <stdlib.h>
#include <string.h>

#include "compute/ops.h"
#include "testutil.h"

static void test_same_bytes_as_the_table(void **state) {
    (void)state;
    ct_backend *be;
    CT_ASSERT_OK(ct_backend_create("cpu", NULL, &be));
    assert_int_equal(ct_backend_act_dtype(be), CT_DTYPE_F32);
    assert_int_equal(be->ops->version, CT_BACKEND_VERSION);
    ct_arena ws;
    CT_ASSERT_OK(ct_backend_arena_create(be, 1 << 20, &ws));
    enum { M = 7, N = 12, K = 20 };
    float x[M * K], w[N * K], b[N], r[M * N], y1[M * N], y2[M * N];
    for (int i = 0; i < M * K; i++) x[i] = (float)((i * 37) % 11) - 5.f;
    for (int i = 0; i < N * K; i++) w[i] = (float)((i * 13) % 7) * 0.25f - 0.5f;
    for (int i = 0; i < N; i++) b[i] = (float)i * 0.1f;
    for (int i = 0; i < M * N; i++) r[i] = (float)(i % 5);
    int64_t shape[2] = {N, K};
    ct_tensor wt;
    CT_ASSERT_OK(ct_tensor_upload(be, CT_DTYPE_F32, w, CT_DTYPE_F32, 2, shape, &wt));
    memcpy(y1, r, sizeof r);
    memcpy(y2, r, sizeof r);
    CT_ASSERT_OK(be->ops->matmul(be, y1, x, &wt, b, y1, 0.5f, CT_ACT_NONE, M, N, K, &ws));
    CT_ASSERT_OK(ct_op_matmul(be, ct_buf_f32(y2), ct_buf_f32(x), &wt, b, ct_buf_f32(y2), 0.5f, CT_ACT_NONE, M, N, K,
                              &ws));
    assert_memory_equal(y1, y2, sizeof y1);
    CT_ASSERT_OK(be->ops->layer_norm(be, y1, r, b, b, M, N, 1e-5f));
    CT_ASSERT_OK(ct_op_layer_norm(be, ct_buf_f32(y2), ct_buf_f32(r), b, b, M, N, 1e-5f));
    assert_memory_equal(y1, y2, sizeof y1);
    /* same-type convert is a copy; across types the CPU has none */
    CT_ASSERT_OK(ct_op_convert(be, ct_buf_f32(y2), ct_buf_f32(x), (size_t)M * N));
    assert_memory_equal(y2, x, sizeof(float) * M * N);
    uint16_t h[4];
    CT_ASSERT_STATUS(ct_op_convert(be, ct_buf_make(h, CT_DTYPE_BF16), ct_buf_f32(x), 4), CT_ERR_UNSUPPORTED);
    CT_ASSERT_ERROR_HAS("no conversion F32 -> BF16");
    /* a bf16 activation on a float32-only table: refused, not misread */
    CT_ASSERT_STATUS(ct_op_glu(be, ct_buf_make(h, CT_DTYPE_BF16), ct_buf_f32(x), 1, 2), CT_ERR_UNSUPPORTED);
    CT_ASSERT_ERROR_HAS("backend cpu: glu computes in float32 only (buffer 0 is BF16)");
    CT_ASSERT_STATUS(ct_op_matmul(be, ct_buf_f32(y2), ct_buf_make(h, CT_DTYPE_F16), &wt, NULL, CT_BUF_NONE, 1.f,
                                  CT_ACT_NONE, 1, N, K, &ws),
                     CT_ERR_UNSUPPORTED);
    CT_ASSERT_ERROR_HAS("buffer 1 is F16");
    assert_int_equal(ws.used, 0);
    ct_tensor_release(&wt);
    ct_backend_arena_free(be, &ws);
    ct_backend_free(be);
}

static void test_cpu_refuses_other_activation_types(void **state) {
    (void)state;
    ct_backend_options o = ct_backend_default_options();
    assert_int_equal(o.act_dtype, CT_DTYPE_F32);
    assert_int_equal(o.attn_variant, CT_ATTN_AUTO);
    ct_backend *be;
    const char *names[2] = {"cpu", "cpu-ref"};
    for (int i = 0; i < 2; i++) {
        o.act_dtype = CT_DTYPE_BF16;
        CT_ASSERT_STATUS(ct_backend_create(names[i], &o, &be), CT_ERR_UNSUPPORTED);
        CT_ASSERT_ERROR_HAS("activations are float32 only (asked for BF16)");
    }
}

static void test_buf_helpers(void **state) {
    (void)state;
    uint16_t h[8];
    ct_buf b = ct_buf_make(h, CT_DTYPE_BF16);
    assert_int_equal(ct_buf_bytes(b, 3), 6);
    assert_ptr_equal(ct_buf_at(b, 3).data, h + 3);
    assert_int_equal(ct_buf_at(b, 3).dtype, CT_DTYPE_BF16);
    assert_null(ct_buf_at(CT_BUF_NONE, 5).data); /* an absent buffer stays absent */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_as_the_table),
        cmocka_unit_test(test_cpu_refuses_other_activation_types),
        cmocka_unit_test(test_buf_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
