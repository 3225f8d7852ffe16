/* test_mel_device.c — the backend mel op (asr/mel_device.c over the cuda
 * table's mel) against the CPU mel (ct_mel_compute_batch, no dither) on
 * white noise of several lengths in one padded batch: valid frames within
 * float32 rounding (another summation order), frames past them zero,
 * valid counts equal; bad clips refused as the CPU mel refuses them. On
 * the CPU tables there is no mel op: ct_mel_device_create gives NULL. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/mel_device.h"
#include "testutil.h"

enum { B = 4 };

static void test_cpu_has_no_mel_op(void **state) {
    (void)state;
    ct_backend *be;
    CT_ASSERT_OK(ct_backend_create("cpu-ref", NULL, &be));
    ct_mel_options mo = ct_mel_default_options();
    ct_mel *mel;
    CT_ASSERT_OK(ct_mel_create(&mo, &mel));
    ct_mel_device *md = (ct_mel_device *)1;
    CT_ASSERT_OK(ct_mel_device_create(mel, &mo, be, &md));
    assert_null(md);
    ct_mel_free(mel);
    ct_backend_free(be);
}

/* the clip checks the device path makes (in parallel) report the first bad clip */
static void test_clip_checks(void **state) {
    (void)state;
    ct_mel_options mo = ct_mel_default_options();
    ct_mel *mel;
    CT_ASSERT_OK(ct_mel_create(&mo, &mel));
    float *a = calloc(16000, sizeof(float)), *b = calloc(16000, sizeof(float));
    const float *clips[4] = {a, b, a, b};
    size_t n[4] = {16000, 16000, 16000, 16000};
    CT_ASSERT_OK(ct_mel_check_clips(mel, clips, n, 4));
    b[7] = NAN;
    assert_int_equal(ct_mel_check_clips(mel, clips, n, 4), CT_ERR_INVALID_ARG);
    assert_non_null(strstr(ct_last_error(), "clip 1"));
    b[7] = 0.f;
    n[3] = ct_mel_max_samples(mel) + 1;
    assert_int_equal(ct_mel_check_clips(mel, clips, n, 4), CT_ERR_LIMIT);
    clips[2] = NULL;
    assert_int_equal(ct_mel_check_clips(mel, clips, n, 4), CT_ERR_INVALID_ARG);
    assert_non_null(strstr(ct_last_error(), "clip 2"));
    free(a);
    free(b);
    ct_mel_free(mel);
}

static void test_cuda_mel_matches_cpu(void **state) {
    (void)state;
    ct_backend *be;
    CT_ASSERT_OK(ct_backend_create("cuda", NULL, &be));
    ct_mel_options mo = ct_mel_default_options();
    ct_mel *mel;
    CT_ASSERT_OK(ct_mel_create(&mo, &mel));
    ct_mel_device *md;
    CT_ASSERT_OK(ct_mel_device_create(mel, &mo, be, &md));
    assert_non_null(md);
    const size_t n[B] = {16000 * 3 + 37, 320, 5003, 16000 * 2};
    float *clips[B];
    unsigned s = 12345;
    for (int b = 0; b < B; b++) {
        clips[b] = malloc(sizeof(float) * n[b]);
        for (size_t i = 0; i < n[b]; i++) {
            s = s * 1664525u + 1013904223u;
            clips[b][i] = (float)((s >> 8) / 8388608.0 - 1.0) * 0.3f;
        }
    }
    const int M = mo.n_mels, T = (int)ct_mel_frames(mel, n[0]);
    float *want = malloc(sizeof(float) * B * T * M), *got = malloc(sizeof(float) * B * T * M);
    int vw[B], vg[B];
    CT_ASSERT_OK(ct_mel_compute_batch(mel, (const float *const *)clips, n, B, 0, want, T, vw));
    ct_arena act, ws;
    CT_ASSERT_OK(ct_backend_arena_create(be, sizeof(float) * B * T * M + 4096, &act));
    CT_ASSERT_OK(ct_backend_arena_create(be, ct_mel_device_ws_bytes(B, T, n[0]), &ws));
    float *feats = ct_arena_alloc(&act, sizeof(float) * B * T * M);
    assert_non_null(feats);
    CT_ASSERT_OK(be->ops->zero(be, feats, sizeof(float) * B * T * M));
    for (int i = 0; i < B * T * M; i++) got[i] = NAN; /* every element must come back written */
    CT_ASSERT_OK(ct_mel_device_compute(md, (const float *const *)clips, n, B, T, feats, vg, &ws));
    CT_ASSERT_OK(be->ops->to_host(be, got, feats, sizeof(float) * B * T * M));
    for (int b = 0; b < B; b++) {
        assert_int_equal(vg[b], vw[b]);
        size_t off = (size_t)b * T * M, nv = (size_t)vw[b] * M;
        double e = ct_rel_l2(got + off, want + off, nv);
        printf("mel clip %d (%zu samples): rel L2 %.3g vs the CPU mel\n", b, n[b], e);
        if (!(e <= 1e-4)) fail_msg("clip %d: device mel departs from the CPU mel (rel L2 %.3g)", b, e);
        for (size_t i = nv; i < (size_t)T * M; i++)
            if (got[off + i] != 0.f || want[off + i] != 0.f) fail_msg("clip %d: padding frame value %g", b, got[off + i]);
    }
    /* a NaN sample is refused as the CPU mel refuses it */
    clips[2][100] = NAN;
    assert_int_equal(ct_mel_device_compute(md, (const float *const *)clips, n, B, T, feats, vg, &ws),
                     CT_ERR_INVALID_ARG);
    for (int b = 0; b < B; b++) free(clips[b]);
    free(want);
    free(got);
    ct_backend_arena_free(be, &act);
    ct_backend_arena_free(be, &ws);
    ct_mel_device_free(md);
    ct_mel_free(mel);
    ct_backend_free(be);
}

int main(void) {
    const struct CMUnitTest cpu[] = {cmocka_unit_test(test_cpu_has_no_mel_op), cmocka_unit_test(test_clip_checks)};
    int r = cmocka_run_group_tests_name("cpu", cpu, NULL, NULL);
    int no_gpu;
    if (!ct_test_have_gpu("test_mel_device on cuda", &no_gpu)) return r ? r : no_gpu;
    const struct CMUnitTest gpu[] = {cmocka_unit_test(test_cuda_mel_matches_cpu)};
    return r | cmocka_run_group_tests_name("cuda", gpu, NULL, NULL);
}
