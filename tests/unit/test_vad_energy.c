/* test_vad_energy.c — the energy VAD (PRODUCT-DETAILS §7) on synthetic
 * tone/silence signals with the spans worked out by hand, the energy of
 * single windows, fixed windows, and the per-file entry point for both;
 * and against auditok 0.5.2's StreamTokenizer on the 70 s recording
 * (tests/fixtures/vad/auditok_reference.json, tools/reference/
 * make_energy_fixtures.py).
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_io.h"
#include "testutil.h"
#include "vad/energy.h"
#include "vad/fixed.h"

/* Segments of tone (0.5 amplitude, 440 Hz) and digital silence, seconds. */
static float *signal_of(const double *secs, const int *tone, int parts, size_t *n) {
    size_t total = 0;
    for (int i = 0; i < parts; i++) total += (size_t)llround(secs[i] * 16000);
    float *a = calloc(total + 1, sizeof(float));
    size_t at = 0;
    for (int i = 0; i < parts; i++) {
        size_t len = (size_t)llround(secs[i] * 16000);
        for (size_t j = 0; j < len; j++) a[at + j] = tone[i] ? 0.5f * (float)sin(2 * M_PI * 440.0 * (double)j / 16000) : 0.0f;
        at += len;
    }
    *n = total;
    return a;
}

static void test_energy_db(void **state) {
    (void)state;
    /* 0.5·32767 = 16383.5 → binary32 16383.5 → truncated 16383 */
    float half[4] = {0.5f, -0.5f, 0.5f, -0.5f};
    assert_true(fabs(ct_vad_energy_db(half, 4) - 20 * log10(16383.0)) < 1e-12);
    /* clamped to ±1 → 32767 */
    float big[2] = {2.0f, -3.0f};
    assert_true(fabs(ct_vad_energy_db(big, 2) - 20 * log10(32767.0)) < 1e-12);
    /* silence → floor of 1e-10 → −200 dB */
    float zero[3] = {0, 0, 0};
    assert_true(ct_vad_energy_db(zero, 3) == 20 * log10(1e-10));
    /* below one step: 1e-5·32767 = 0.33 → 0 */
    float tiny[2] = {1e-5f, -1e-5f};
    assert_true(ct_vad_energy_db(tiny, 2) == 20 * log10(1e-10));
    /* mixed: q = {3, 4} → mean square 12.5 */
    float mix[2] = {3.5f / 32767, 4.2f / 32767};
    assert_true(fabs(ct_vad_energy_db(mix, 2) - 20 * log10(sqrt(12.5))) < 1e-12);
}

/* §7's example: 1 s silence, 1 s tone, 0.3 s silence, 0.5 s tone, 2 s
 * silence, 0.07 s tone, 0.5 s silence = 85920 samples, 108 windows of 800
 * (the last has 320). Tone windows: 20-39, 46-55, 96-97 (97 holds 320 tone
 * samples, still far above 50 dB).
 * Defaults (min 10 windows, max 600, silence 12): token from 20 keeps the
 * 6-window gap, then windows 56-67 of trailing silence (silence_len 12);
 * at 68 it is delivered: 48 windows → [1.0, 1.0 + 38400/16000 = 3.4].
 * Token from 96: 2 tone + 10 silent windows when the audio ends; 12 > 10
 * silent → delivered: 11·800 + 320 = 9120 samples → [96·0.05 =
 * 4.800000000000001, +0.57 = 5.370000000000001]; validate clamps the end to
 * the duration 5.37. */
static void test_tokenizer_defaults(void **state) {
    (void)state;
    const double secs[] = {1, 1, 0.3, 0.5, 2, 0.07, 0.5};
    const int tone[] = {0, 1, 0, 1, 0, 1, 0};
    size_t n;
    float *a = signal_of(secs, tone, 7, &n);
    assert_int_equal(n, 85920);
    ct_vad_options o = ct_vad_default_options();
    ct_span *s;
    size_t ns;
    CT_ASSERT_OK(ct_vad_energy_spans(a, n, &o, &s, &ns));
    assert_int_equal(ns, 2);
    assert_true(fabs(s[0].start - 1.0) < 1e-12 && fabs(s[0].end - 3.4) < 1e-12);
    assert_true(s[1].start == 4.800000000000001);
    assert_true(s[1].end == 5.370000000000001);
    free(s);
    o.mode = CT_VAD_AUDITOK;
    ct_vad_result r;
    CT_ASSERT_OK(ct_vad_segment(a, n, &o, NULL, &r));
    assert_int_equal(r.n_spans, 2);
    assert_true(r.spans[1].end == 5.37);
    assert_int_equal(r.n_segments, 2);
    assert_null(r.probs);
    ct_vad_result_free(&r);
    free(a);
}

/* Same signal, max_dur 0.8 (16 windows), max_silence 0.3 (6 windows):
 * 20-35 reach 16 → delivered truncated [1.0, 1.8], continuation from 36;
 * 36-39 tone, 40-45 silence (silence_len 6), 46-51 tone → 16 again →
 * [1.8, 2.6], continuation from 52; 52-55 tone, 56-61 silence; at 62
 * silence_len 6 ≥ 6 → delivered (10 windows) [2.6, 3.1]. From 96: 2 tone +
 * 6 silent windows, at 104 delivered but 8 < 10 and not contiguous →
 * dropped. */
static void test_tokenizer_max_duration(void **state) {
    (void)state;
    const double secs[] = {1, 1, 0.3, 0.5, 2, 0.07, 0.5};
    const int tone[] = {0, 1, 0, 1, 0, 1, 0};
    size_t n;
    float *a = signal_of(secs, tone, 7, &n);
    ct_vad_options o = ct_vad_default_options();
    o.max_dur = 0.8;
    o.max_silence = 0.3;
    ct_span *s;
    size_t ns;
    CT_ASSERT_OK(ct_vad_energy_spans(a, n, &o, &s, &ns));
    assert_int_equal(ns, 3);
    const double want[6] = {1.0, 1.8, 1.8, 2.6, 2.6, 3.1};
    for (int i = 0; i < 3; i++) {
        assert_true(fabs(s[i].start - want[2 * i]) < 1e-12);
        assert_true(fabs(s[i].end - want[2 * i + 1]) < 1e-12);
    }
    free(s);
    free(a);
}

/* max_silence 0: the first silent window ends a token and is not part of it
 * (NOISE → SILENCE directly). Tone 0.6 s (12 windows) from 0.5 s, silence,
 * tone 0.2 s (4 windows, below the minimum of 10 and not contiguous). */
static void test_tokenizer_no_silence(void **state) {
    (void)state;
    const double secs[] = {0.5, 0.6, 0.5, 0.2, 0.5};
    const int tone[] = {0, 1, 0, 1, 0};
    size_t n;
    float *a = signal_of(secs, tone, 5, &n);
    ct_vad_options o = ct_vad_default_options();
    o.max_silence = 0;
    ct_span *s;
    size_t ns;
    CT_ASSERT_OK(ct_vad_energy_spans(a, n, &o, &s, &ns));
    assert_int_equal(ns, 1);
    assert_true(fabs(s[0].start - 0.5) < 1e-12 && fabs(s[0].end - 1.1) < 1e-12);
    free(s);
    /* A threshold above the tone's energy (≈ 81 dB): nothing. */
    o.energy_threshold = 90;
    CT_ASSERT_OK(ct_vad_energy_spans(a, n, &o, &s, &ns));
    assert_int_equal(ns, 0);
    free(a);
}

static void test_energy_errors(void **state) {
    (void)state;
    float a[10] = {0};
    ct_span *s;
    size_t ns;
    ct_vad_options o = ct_vad_default_options();
    o.max_dur = 0.3; /* 6 windows < min 10 */
    CT_ASSERT_STATUS(ct_vad_energy_spans(a, 10, &o, &s, &ns), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("max_duration must cover min_duration");
    o = ct_vad_default_options();
    o.max_silence = 30;
    CT_ASSERT_STATUS(ct_vad_energy_spans(a, 10, &o, &s, &ns), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("max_silence must cover fewer analysis windows than max_duration");
    o = ct_vad_default_options();
    o.energy_threshold = NAN;
    CT_ASSERT_STATUS(ct_vad_energy_spans(a, 10, &o, &s, &ns), CT_ERR_INVALID_ARG);
    o = ct_vad_default_options();
    o.min_dur = 0;
    CT_ASSERT_STATUS(ct_vad_energy_spans(a, 10, &o, &s, &ns), CT_ERR_INVALID_ARG);
    o = ct_vad_default_options();
    CT_ASSERT_OK(ct_vad_energy_spans(a, 0, &o, &s, &ns));
    assert_int_equal(ns, 0);
}

/* Fixed windows: 65 s + 5 samples with max_dur 30 → 480000-sample windows
 * [0,30], [30,60], [60, 1040005/16000]. */
static void test_fixed_windows(void **state) {
    (void)state;
    ct_span *s;
    size_t ns;
    CT_ASSERT_OK(ct_vad_fixed_spans(16000 * 65 + 5, 30.0, &s, &ns));
    assert_int_equal(ns, 3);
    assert_true(s[0].start == 0 && s[0].end == 30 && s[1].start == 30 && s[1].end == 60);
    assert_true(s[2].start == 60 && s[2].end == 1040005.0 / 16000);
    free(s);
    /* exactly two windows: no empty third */
    CT_ASSERT_OK(ct_vad_fixed_spans(16000 * 60, 30.0, &s, &ns));
    assert_int_equal(ns, 2);
    free(s);
    /* round half to even: 16004.5 → 16004-sample windows, 16001.5 → 16002
     * (durations whose product with 16000 is exactly the half) */
    double md = 16004.5 / 16000.0, md2 = 16001.5 / 16000.0;
    assert_true(md * 16000 == 16004.5 && md2 * 16000 == 16001.5);
    CT_ASSERT_OK(ct_vad_fixed_spans(32009, md, &s, &ns));
    assert_int_equal(ns, 3);
    assert_true(s[0].end == 16004.0 / 16000 && s[1].end == 32008.0 / 16000 && s[2].end == 32009.0 / 16000);
    free(s);
    CT_ASSERT_OK(ct_vad_fixed_spans(32004, md2, &s, &ns));
    assert_int_equal(ns, 2);
    assert_true(s[0].end == 16002.0 / 16000);
    free(s);
    CT_ASSERT_OK(ct_vad_fixed_spans(0, 30.0, &s, &ns));
    assert_int_equal(ns, 0);
    assert_null(s);
    CT_ASSERT_STATUS(ct_vad_fixed_spans(100, 0.5, &s, &ns), CT_ERR_INVALID_ARG);
    CT_ASSERT_STATUS(ct_vad_fixed_spans(100, 40, &s, &ns), CT_ERR_INVALID_ARG);
    /* through the entry point */
    ct_vad_options o = ct_vad_default_options();
    o.mode = CT_VAD_NONE;
    o.max_dur = 10;
    float *a = calloc(16000 * 25, sizeof(float));
    ct_vad_result r;
    CT_ASSERT_OK(ct_vad_segment(a, 16000 * 25, &o, NULL, &r));
    assert_int_equal(r.n_segments, 3);
    assert_true(r.segments[2].start == 20 && r.segments[2].end == 25);
    ct_vad_result_free(&r);
    free(a);
}

/* Exactly auditok's spans (same double arithmetic for the times). */
static void test_matches_auditok(void **state) {
    (void)state;
    size_t n;
    float *a = ct_test_read_audio(CT_FIXTURE("vad/speech_pauses.flac"), &n);
    json_t *doc = ct_test_load_json(CT_FIXTURE("vad/auditok_reference.json"));
    assert_int_equal(json_integer_value(json_object_get(doc, "samples")), n);
    json_t *runs = json_object_get(doc, "runs");
    assert_true(json_array_size(runs) >= 3);
    for (size_t r = 0; r < json_array_size(runs); r++) {
        json_t *run = json_array_get(runs, r), *pr = json_object_get(run, "params");
        const char *name = json_string_value(json_object_get(run, "name"));
        ct_vad_options o = ct_vad_default_options();
        o.energy_threshold = json_number_value(json_object_get(pr, "energy_threshold"));
        o.min_dur = json_number_value(json_object_get(pr, "min_dur"));
        o.max_dur = json_number_value(json_object_get(pr, "max_dur"));
        o.max_silence = json_number_value(json_object_get(pr, "max_silence"));
        json_t *want = json_object_get(run, "spans");
        ct_span *s;
        size_t ns;
        CT_ASSERT_OK(ct_vad_energy_spans(a, n, &o, &s, &ns));
        if (ns != json_array_size(want)) fail_msg("%s: %zu spans, auditok %zu", name, ns, json_array_size(want));
        for (size_t i = 0; i < ns; i++) {
            json_t *w = json_array_get(want, i);
            double ws = json_number_value(json_array_get(w, 0)), we = json_number_value(json_array_get(w, 1));
            if (s[i].start != ws || s[i].end != we)
                fail_msg("%s span %zu: [%.17g, %.17g], auditok [%.17g, %.17g]", name, i, s[i].start, s[i].end, ws, we);
        }
        print_message("%s: %zu spans equal auditok's\n", name, ns);
        free(s);
    }
    json_decref(doc);
    free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_db),
        cmocka_unit_test(test_tokenizer_defaults),
        cmocka_unit_test(test_tokenizer_max_duration),
        cmocka_unit_test(test_tokenizer_no_silence),
        cmocka_unit_test(test_energy_errors),
        cmocka_unit_test(test_fixed_windows),
        cmocka_unit_test(test_matches_auditok),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
