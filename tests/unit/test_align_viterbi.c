/* test_align_viterbi.c — CTC forced alignment against torchaudio's
 * forced_align on the random matrices of tests/fixtures/align/viterbi_cases.json
 * (ties, repeats, T = L + R and too-short cases; make_align_cases.py), the
 * doctor's 2×2 smoke, and §9.7's observed toy alignment ("la bi" → la
 * [0.06, 0.10], bi [0.18, 0.32]) through merge, spans and word times. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/viterbi.h"
#include "testutil.h"

static void test_torchaudio_cases(void **state) {
    (void)state;
    json_error_t err;
    json_t *j = json_load_file(CT_FIXTURE("align/viterbi_cases.json"), 0, &err);
    if (!j) fail_msg("viterbi_cases.json: %s", err.text);
    size_t i, n_ok = 0, n_err = 0, n_tight = 0;
    json_t *c;
    json_array_foreach(j, i, c) {
        int T = (int)json_integer_value(json_object_get(c, "T"));
        int C = (int)json_integer_value(json_object_get(c, "C"));
        json_t *tg = json_object_get(c, "targets"), *em = json_object_get(c, "emissions");
        int L = (int)json_array_size(tg);
        int32_t *targets = malloc((size_t)L * sizeof *targets), *path = malloc((size_t)T * sizeof *path);
        float *logp = malloc((size_t)T * C * sizeof *logp);
        int R = 0;
        for (int k = 0; k < L; k++) {
            targets[k] = (int32_t)json_integer_value(json_array_get(tg, (size_t)k));
            if (k && targets[k] == targets[k - 1]) R++;
        }
        assert_int_equal(json_array_size(em), (size_t)T * C);
        for (int k = 0; k < T * C; k++) logp[k] = (float)json_real_value(json_array_get(em, (size_t)k));
        ct_status st = ct_ctc_forced_align(path, logp, T, C, targets, L, 0);
        json_t *want = json_object_get(c, "path");
        if (!want) {
            if (st != CT_ERR_INVALID_ARG)
                fail_msg("case %zu (%s): torchaudio refused, we returned %s", i,
                         json_string_value(json_object_get(c, "note")), ct_status_str(st));
            n_err++;
        } else {
            CT_ASSERT_OK(st);
            for (int t = 0; t < T; t++)
                if (path[t] != (int32_t)json_integer_value(json_array_get(want, (size_t)t)))
                    fail_msg("case %zu (%s): frame %d label %d, torchaudio %d", i,
                             json_string_value(json_object_get(c, "note")), t, path[t],
                             (int)json_integer_value(json_array_get(want, (size_t)t)));
            n_ok++;
            if (T == L + R) n_tight++;
        }
        free(targets);
        free(path);
        free(logp);
    }
    assert_true(n_ok >= 100);
    assert_true(n_err >= 10);
    assert_true(n_tight >= 10);
    json_decref(j);
}

static void test_doctor_smoke(void **state) {
    (void)state;
    const float em[4] = {4, 0, 0, 4};
    const int32_t tg[1] = {1};
    int32_t path[2];
    CT_ASSERT_OK(ct_ctc_forced_align(path, em, 2, 2, tg, 1, 0));
    assert_int_equal(path[0], 0);
    assert_int_equal(path[1], 1);
    CT_ASSERT_STATUS(ct_ctc_forced_align(path, em, 2, 2, (const int32_t[]){0}, 1, 0), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("blank");
}

/* §9.7 observed: 16 frames, words "la bi", path star×3 l a star×4 b i i blank×4. */
static void test_toy_alignment(void **state) {
    (void)state;
    ct_align_vocab v;
    ct_align_vocab_default(&v);
    ct_align_text t;
    CT_ASSERT_OK(ct_align_text_prepare("la bi", CT_ALIGN_LANG_ENG, &v, &t));
    assert_string_equal(t.tokens[0], "l a");
    assert_string_equal(t.tokens[1], "b i");
    const int S = v.star, l = v.letter_id['l'], a = v.letter_id['a'], b = v.letter_id['b'],
              i = v.letter_id['i'];
    const int32_t path[16] = {S, S, S, l, a, S, S, S, S, b, i, i, 0, 0, 0, 0};
    ct_ctc_seg segs[16];
    int n = ct_ctc_merge_repeats(segs, path, 16);
    assert_int_equal(n, 7);
    double rs[2], re[2];
    int ok;
    const char *why;
    CT_ASSERT_OK(ct_ctc_word_times(segs, n, &t, &v, 20.0, rs, re, &ok, &why));
    assert_true(ok);
    assert_true(rs[0] == 3 * 20.0 / 1000 && re[0] == 5 * 20.0 / 1000);
    assert_true(rs[1] == 9 * 20.0 / 1000 && re[1] == 16 * 20.0 / 1000);
    assert_true(fabs(rs[0] - 0.06) < 1e-12 && fabs(re[1] - 0.32) < 1e-12);

    /* The same through Viterbi: emissions that make this path the best one. */
    float em[16 * 32];
    for (int f = 0; f < 16; f++)
        for (int k = 0; k < 32; k++) em[f * 32 + k] = k == path[f] ? 0.0f : -10.0f;
    double rs2[2], re2[2];
    CT_ASSERT_OK(ct_ctc_align_segment(em, 16, 32, &t, &v, 20.0, rs2, re2, &ok, &why));
    assert_true(ok);
    assert_true(rs2[0] == rs[0] && re2[0] == re[0] && rs2[1] == rs[1] && re2[1] == re[1]);

    /* A label out of order is the twin's assertion → fallback. */
    const int32_t bad[16] = {S, S, S, a, l, S, S, S, S, b, i, i, 0, 0, 0, 0};
    n = ct_ctc_merge_repeats(segs, bad, 16);
    CT_ASSERT_OK(ct_ctc_word_times(segs, n, &t, &v, 20.0, rs, re, &ok, &why));
    assert_false(ok);
    assert_non_null(why);
    /* Too few frames for the targets (T < L + R) → fallback, not an error. */
    CT_ASSERT_OK(ct_ctc_align_segment(em, 5, 32, &t, &v, 20.0, rs2, re2, &ok, &why));
    assert_false(ok);
    ct_align_text_free(&t);
}

/* §9.7 steps 2–8 against the twin's preprocess_text / forced_align /
 * get_spans / postprocess_results on random emissions (segment_cases.json):
 * word times exactly, and the same segments falling back. */
static void test_segment_cases(void **state) {
    (void)state;
    json_error_t err;
    json_t *j = json_load_file(CT_FIXTURE("align/segment_cases.json"), 0, &err);
    if (!j) fail_msg("segment_cases.json: %s", err.text);
    ct_align_vocab v;
    ct_align_vocab_default(&v);
    size_t i, n_ok = 0, n_fb = 0;
    json_t *c;
    json_array_foreach(j, i, c) {
        const char *text = json_string_value(json_object_get(c, "text"));
        const char *lang = json_string_value(json_object_get(c, "lang"));
        int T = (int)json_integer_value(json_object_get(c, "T"));
        json_t *h = json_object_get(c, "hundredths");
        float *em = calloc((size_t)T * 32, sizeof *em);
        for (int f = 0; f < T; f++)
            for (int k = 0; k < 31; k++)
                em[f * 32 + k] = (float)((double)json_integer_value(json_array_get(h, (size_t)(f * 31 + k))) / 100.0);
        ct_align_text t;
        CT_ASSERT_OK(ct_align_text_prepare(text, ct_align_lang_from_code(lang), &v, &t));
        double *rs = calloc(t.n_words + 1, sizeof *rs), *re = calloc(t.n_words + 1, sizeof *re);
        int ok;
        const char *why;
        CT_ASSERT_OK(ct_ctc_align_segment(em, T, 32, &t, &v, 20.0, rs, re, &ok, &why));
        json_t *words = json_object_get(c, "words");
        if (!words) {
            if (ok) fail_msg("case %zu '%s': the twin fell back (%s), we aligned", i, text,
                             json_string_value(json_object_get(c, "error")));
            n_fb++;
        } else {
            if (!ok) fail_msg("case %zu '%s': we fell back (%s), the twin aligned", i, text, why);
            assert_int_equal(json_array_size(words), t.n_words);
            for (size_t w = 0; w < t.n_words; w++) {
                double ws = json_real_value(json_array_get(json_array_get(words, w), 0));
                double we = json_real_value(json_array_get(json_array_get(words, w), 1));
                if (rs[w] != ws || re[w] != we)
                    fail_msg("case %zu '%s' word %zu: [%.17g, %.17g], twin [%.17g, %.17g]", i, text, w, rs[w],
                             re[w], ws, we);
            }
            n_ok++;
        }
        free(rs);
        free(re);
        free(em);
        ct_align_text_free(&t);
    }
    assert_true(n_ok >= 50);
    assert_true(n_fb >= 5);
    json_decref(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torchaudio_cases),
        cmocka_unit_test(test_doctor_smoke),
        cmocka_unit_test(test_toy_alignment),
        cmocka_unit_test(test_segment_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
