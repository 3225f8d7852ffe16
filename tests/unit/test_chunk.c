/* test_chunk.c — the long-audio energy split against transformers:
 * synthetic clips of tests/fixtures/mel/chunks.json (rebuilt here from
 * integers, bit for bit) and the six fixture WAVs concatenated, whose
 * boundaries reference.safetensors holds (split.concat_all.bounds,
 * split.clip5.bounds). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/chunk.h"
#include "model/safetensors.h"
#include "fixture_io.h"
#include "testutil.h"

static float *make_signal(size_t n, uint32_t seed, json_t *segs) {
    float *x = malloc(sizeof(float) * n);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++) {
        uint32_t h = (uint32_t)((uint64_t)i * 2654435761u + seed) >> 8;
        x[i] = (float)h * 0x1p-24f - 0.5f;
    }
    for (size_t s = 0; s < json_array_size(segs); s++) {
        json_t *g = json_array_get(segs, s);
        size_t a = (size_t)json_integer_value(json_array_get(g, 0));
        size_t b = (size_t)json_integer_value(json_array_get(g, 1));
        float amp = (float)json_number_value(json_array_get(g, 2));
        for (size_t i = a; i < b; i++) x[i] = amp * x[i];
    }
    return x;
}

static void check_bounds(const ct_chunk_span *sp, size_t cnt, const int64_t *want, size_t nwant,
                         const char *name) {
    if (cnt != nwant) fail_msg("%s: %zu chunks, reference has %zu", name, cnt, nwant);
    for (size_t k = 0; k < cnt; k++)
        if ((int64_t)sp[k].start != want[2 * k] || (int64_t)sp[k].end != want[2 * k + 1])
            fail_msg("%s: chunk %zu is [%zu, %zu), reference [%lld, %lld)", name, k, sp[k].start,
                     sp[k].end, (long long)want[2 * k], (long long)want[2 * k + 1]);
}

static void test_synthetic_cases(void **state) {
    (void)state;
    json_t *root = ct_test_load_json(CT_FIXTURE("mel/chunks.json"));
    json_t *cases = json_object_get(root, "cases");
    assert_true(json_array_size(cases) >= 8);
    int multi = 0;
    for (size_t c = 0; c < json_array_size(cases); c++) {
        json_t *cs = json_array_get(cases, c);
        const char *name = json_string_value(json_object_get(cs, "name"));
        size_t n = (size_t)json_integer_value(json_object_get(cs, "n"));
        float *x = make_signal(n, (uint32_t)json_integer_value(json_object_get(cs, "seed")),
                               json_object_get(cs, "segments"));
        json_t *b = json_object_get(cs, "bounds");
        size_t nb = json_array_size(b);
        int64_t *want = malloc(sizeof(int64_t) * 2 * nb);
        for (size_t k = 0; k < nb; k++) {
            want[2 * k] = json_integer_value(json_array_get(json_array_get(b, k), 0));
            want[2 * k + 1] = json_integer_value(json_array_get(json_array_get(b, k), 1));
        }
        ct_chunk_span *sp = NULL;
        size_t cnt = 0;
        CT_ASSERT_OK(ct_chunk_split(NULL, x, n, &sp, &cnt));
        check_bounds(sp, cnt, want, nb, name);
        if (cnt > 1) multi++;
        free(sp);
        free(want);
        free(x);
    }
    assert_true(multi >= 5);
    json_decref(root);
}

/* an I64 tensor of reference.safetensors, copied out of the mapping */
static int64_t *read_i64(const char *name, size_t *count) {
    ct_safetensors *st = NULL;
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("reference.safetensors"), &st));
    const ct_st_tensor *t = ct_st_find(st, name);
    if (!t) fail_msg("reference.safetensors has no %s", name);
    assert_int_equal(t->dtype, CT_DTYPE_I64);
    int64_t *v = malloc(t->nbytes);
    memcpy(v, t->data, t->nbytes);
    *count = (size_t)t->numel;
    ct_st_free(st);
    return v;
}

static void test_fixture_clips(void **state) {
    (void)state;
    const char *files[6] = {"audio/c0_tones_1s.wav", "audio/c1_en_us_3s.wav", "audio/c2_de_noise_6s.wav",
                            "audio/c3_fr_ar_10s.wav", "audio/c4_en_gb_30s.wav", "audio/c5_es_en_34s.wav"};
    float *clips[6];
    size_t n[6], total = 0;
    for (int i = 0; i < 6; i++) {
        clips[i] = ct_test_read_audio(CT_FIXTURE(files[i]), &n[i]);
        total += n[i];
    }
    float *cat = malloc(sizeof(float) * total);
    for (size_t i = 0, at = 0; i < 6; at += n[i], i++) memcpy(cat + at, clips[i], sizeof(float) * n[i]);
    size_t cnt, nw;
    ct_chunk_span *sp;
    int64_t *want = read_i64("split.concat_all.bounds", &nw);
    CT_ASSERT_OK(ct_chunk_split(NULL, cat, total, &sp, &cnt));
    check_bounds(sp, cnt, want, nw / 2, "all six clips concatenated");
    assert_true(cnt >= 3);
    free(sp);
    free(want);
    want = read_i64("split.clip5.bounds", &nw);
    CT_ASSERT_OK(ct_chunk_split(NULL, clips[5], n[5], &sp, &cnt));
    check_bounds(sp, cnt, want, nw / 2, "clip 5");
    free(sp);
    free(want);
    free(cat);
    for (int i = 0; i < 6; i++) free(clips[i]);
}

static void test_edges(void **state) {
    (void)state;
    ct_chunk_span *sp = (ct_chunk_span *)1;
    size_t cnt = 9;
    CT_ASSERT_OK(ct_chunk_split(NULL, NULL, 0, &sp, &cnt));
    assert_null(sp);
    assert_int_equal(cnt, 0);
    float x[4] = {0};
    CT_ASSERT_STATUS(ct_chunk_split(NULL, NULL, 4, &sp, &cnt), CT_ERR_INVALID_ARG);
    ct_chunk_options o = ct_chunk_default_options();
    o.energy_window = 0;
    CT_ASSERT_STATUS(ct_chunk_split(&o, x, 4, &sp, &cnt), CT_ERR_INVALID_ARG);
    o = ct_chunk_default_options();
    o.overlap_s = 40.0;
    CT_ASSERT_STATUS(ct_chunk_split(&o, x, 4, &sp, &cnt), CT_ERR_INVALID_ARG);
    /* a search stretch no longer than the window is cut in its middle:
     * max 2 s, overlap 0.05 s (800 samples <= 1600) -> cuts at 32000 - 400 */
    o = ct_chunk_default_options();
    o.max_clip_s = 2.0;
    o.overlap_s = 0.05;
    float *y = calloc(70000, sizeof(float));
    CT_ASSERT_OK(ct_chunk_split(&o, y, 70000, &sp, &cnt));
    assert_int_equal(cnt, 3);
    assert_int_equal(sp[0].end, 31600);  /* (31200 + 32000) / 2 */
    assert_int_equal(sp[1].end, 63200);  /* 31600 + 31600 */
    assert_int_equal(sp[2].end, 70000);
    free(sp);
    free(y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synthetic_cases),
        cmocka_unit_test(test_fixture_clips),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
