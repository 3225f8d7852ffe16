/* test_align_file.c — one file's word alignment against the Python twin's
 * align_words (tests/fixtures/align/file_words.json, made by
 * make_aligner_fixtures.py on clip A's emissions): word times exactly, texts,
 * segment indices, timing sources and the fallback count, from the twin's own
 * emissions and through the C model end to end; plus the uniform timing rule. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "model/safetensors.h"
#include "testutil.h"

static float *pcm_clip(size_t n, uint32_t seed) {
    float *x = malloc(n * sizeof *x);
    uint32_t state = seed;
    for (size_t i = 0; i < n; i++) {
        state = state * 1664525u + 1013904223u;
        long long noise = (long long)(state >> 16) - 32768;
        long long env = (long long)((i / 800) % 16);
        long long a = noise * env, q = a / 16;
        if (a % 16 != 0 && a < 0) q--;
        x[i] = (float)((double)q / 32768.0);
    }
    return x;
}

/* The JSON's timing_source names (ct_timing_source_name belongs to the output module). */
static const char *source_name(ct_timing_source s) {
    return s == CT_TIMING_CTC ? "ctc" : s == CT_TIMING_UNIFORM_FALLBACK ? "uniform_fallback" : "other";
}

static void compare(json_t *c, const ct_rec_word *w, size_t n, int fallback) {
    json_t *want = json_object_get(c, "words");
    assert_int_equal(fallback, (int)json_integer_value(json_object_get(c, "fallback")));
    assert_int_equal(n, json_array_size(want));
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(want, i);
        double ws = json_real_value(json_array_get(e, 0)), we = json_real_value(json_array_get(e, 1));
        const char *src = json_string_value(json_array_get(e, 5));
        if (w[i].start != ws || w[i].end != we || strcmp(w[i].text, json_string_value(json_array_get(e, 2))) ||
            w[i].segment_index != (int)json_integer_value(json_array_get(e, 3)) ||
            w[i].segment_word_index != (int)json_integer_value(json_array_get(e, 4)) ||
            strcmp(source_name(w[i].source), src))
            fail_msg("word %zu: [%.17g, %.17g] '%s' seg %d/%d %s; twin [%.17g, %.17g] '%s' seg %d/%d %s", i, w[i].start,
                     w[i].end, w[i].text, w[i].segment_index, w[i].segment_word_index,
                     source_name(w[i].source), ws, we, json_string_value(json_array_get(e, 2)),
                     (int)json_integer_value(json_array_get(e, 3)), (int)json_integer_value(json_array_get(e, 4)), src);
    }
}

static ct_align_segment *segments(json_t *c, size_t *n) {
    json_t *a = json_object_get(c, "segments");
    *n = json_array_size(a);
    ct_align_segment *s = calloc(*n, sizeof *s);
    for (size_t i = 0; i < *n; i++) {
        json_t *e = json_array_get(a, i);
        s[i].start = json_number_value(json_array_get(e, 0));
        s[i].end = json_number_value(json_array_get(e, 1));
        s[i].text = json_string_value(json_array_get(e, 2));
    }
    return s;
}

static void test_from_twin_emissions(void **state) {
    (void)state;
    json_error_t err;
    json_t *j = json_load_file(CT_FIXTURE("align/file_words.json"), 0, &err);
    if (!j) fail_msg("file_words.json: %s", err.text);
    ct_safetensors *st;
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("align/emissions.safetensors"), &st));
    const ct_st_tensor *a = ct_st_find(st, "a");
    float *em = malloc((size_t)a->numel * sizeof *em);
    CT_ASSERT_OK(ct_st_tensor_to_f32(a, em, (size_t)a->numel));
    /* the tiny aligner's vocab.json (its letters are not in §9.5's order) */
    ct_align_vocab v;
    CT_ASSERT_OK(ct_align_vocab_load(CT_FIXTURE("align/tiny-w2v2"), 31, &v));
    size_t i;
    json_t *c;
    int total_ctc = 0;
    json_array_foreach(j, i, c) {
        size_t ns;
        ct_align_segment *segs = segments(c, &ns);
        ct_rec_word *w;
        size_t n;
        int fb;
        CT_ASSERT_OK(ct_align_words(em, 125, 32, 20.0, &v,
                                    ct_align_lang_from_code(json_string_value(json_object_get(c, "language"))), segs,
                                    ns, &w, &n, &fb));
        compare(c, w, n, fb);
        for (size_t k = 0; k < n; k++) total_ctc += w[k].source == CT_TIMING_CTC;
        ct_align_words_free(w, n);
        free(segs);
    }
    assert_true(total_ctc >= 10);
    free(em);
    ct_st_free(st);
    json_decref(j);
}

static void test_end_to_end(void **state) {
    (void)state;
    json_error_t err;
    json_t *j = json_load_file(CT_FIXTURE("align/file_words.json"), 0, &err);
    if (!j) fail_msg("file_words.json: %s", err.text);
    ct_backend *be;
    CT_ASSERT_OK(ct_backend_create("cpu", NULL, &be));
    ct_aligner *al;
    CT_ASSERT_OK(ct_aligner_open(CT_FIXTURE("align/tiny-w2v2"), be, NULL, &al));
    assert_int_equal(ct_aligner_vocab(al)->star, 31);
    assert_int_equal(ct_aligner_vocab(al)->blank, 0);
    float *pcm = pcm_clip(40000, 1);
    size_t i;
    json_t *c;
    json_array_foreach(j, i, c) {
        size_t ns;
        ct_align_segment *segs = segments(c, &ns);
        ct_align_options o = ct_align_default_options();
        o.language = json_string_value(json_object_get(c, "language"));
        o.batch_size = 1;
        ct_rec_word *w;
        size_t n;
        int fb;
        CT_ASSERT_OK(ct_align_file(al, pcm, 40000, segs, ns, &o, &w, &n, &fb));
        compare(c, w, n, fb);
        ct_align_words_free(w, n);
        free(segs);
    }
    /* empty audio is the twin's ValueError: the file fails */
    ct_rec_word *w;
    size_t n;
    int fb;
    ct_align_segment one = {0, 1, "x"};
    CT_ASSERT_STATUS(ct_align_file(al, pcm, 0, &one, 1, NULL, &w, &n, &fb), CT_ERR_INVALID_ARG);
    free(pcm);
    ct_aligner_free(al);
    ct_backend_free(be);
    json_decref(j);
}

/* PRODUCT-DETAILS §6: token k over [start + k·d, start + (k+1)·d], d = max(0, end − start)/N. */
static void test_uniform(void **state) {
    (void)state;
    ct_rec_word *w = NULL;
    size_t n = 0, cap = 0;
    CT_ASSERT_OK(ct_align_uniform("  a bb\tc ", 1.0, 1.9, 4, CT_TIMING_UNIFORM_FALLBACK, &w, &n, &cap));
    assert_int_equal(n, 3);
    const double d = (1.9 - 1.0) / 3;
    for (int k = 0; k < 3; k++) {
        assert_true(w[k].start == 1.0 + k * d && w[k].end == 1.0 + (k + 1) * d);
        assert_int_equal(w[k].segment_index, 4);
        assert_int_equal(w[k].segment_word_index, k);
    }
    assert_string_equal(w[1].text, "bb");
    CT_ASSERT_OK(ct_align_uniform("z", 2.0, 1.0, 5, CT_TIMING_UNIFORM_FALLBACK, &w, &n, &cap));
    assert_true(w[3].start == 2.0 && w[3].end == 2.0);
    ct_align_words_free(w, n);
}

static void test_smoke(void **state) {
    (void)state;
    CT_ASSERT_OK(ct_align_smoke());
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smoke),
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_from_twin_emissions),
        cmocka_unit_test(test_end_to_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
