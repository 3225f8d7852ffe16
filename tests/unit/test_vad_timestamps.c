/* test_vad_timestamps.c — the Silero timestamp state machine on synthetic
 * probability sequences, every branch, with the expected spans worked out
 * by hand below (frame i starts at sample 512·i; "h" = 0.9 speech, "l" =
 * 0.1 silence, "m" = 0.4 between the thresholds). The hand results were
 * also checked once against silero-vad 6.2.3's
 * get_speech_timestamps_from_probs. Then seconds, merge and validate.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vad/timestamps.h"

static float *seq(const char *s, size_t *n) {
    *n = strlen(s);
    float *p = malloc((*n + 1) * sizeof(float));
    for (size_t i = 0; i < *n; i++) p[i] = s[i] == 'h' ? 0.9f : s[i] == 'm' ? 0.4f : 0.1f;
    return p;
}

/* min speech 64 ms (1024 samples), min silence 64 ms (1024), no padding,
 * max speech 30 s (never reached). */
static ct_vad_options small_opts(void) {
    ct_vad_options o = ct_vad_default_options();
    o.min_dur = 0.064;
    o.min_silence_ms = 64;
    o.speech_pad_ms = 0;
    return o;
}

static void expect_spans(const float *p, size_t np, size_t n, const ct_vad_options *o, const int64_t *want,
                         size_t nwant) {
    ct_sample_span *s = NULL;
    size_t ns = 0;
    CT_ASSERT_OK(ct_vad_silero_spans(p, np, n, o, &s, &ns));
    if (ns != nwant) fail_msg("%zu spans, want %zu", ns, nwant);
    for (size_t i = 0; i < ns; i++) {
        if (s[i].start != want[2 * i] || s[i].end != want[2 * i + 1])
            fail_msg("span %zu is [%lld, %lld], want [%lld, %lld]", i, (long long)s[i].start, (long long)s[i].end,
                     (long long)want[2 * i], (long long)want[2 * i + 1]);
    }
    free(s);
}

static void expect_seq(const char *str, size_t n, const ct_vad_options *o, const int64_t *want, size_t nwant) {
    size_t np;
    float *p = seq(str, &np);
    expect_spans(p, np, n, o, want, nwant);
    free(p);
}

/* Start, hysteresis, a short silence that does not end speech, an end after
 * min silence, a span dropped for being short, and the end of audio. */
static void test_start_end_min_speech(void **state) {
    (void)state;
    ct_vad_options o = small_opts();
    /* frame: 0 l; 1 h start=512; 3 m: between thresholds, nothing; 5 l
     * temp_end=2560; 6 l silence 512 < 1024 continue; 7 h: silence 1024 is
     * not > 1568, no possible end, temp_end reset; 8 l temp_end=4096;
     * 10 l: silence 1024 ≥ 1024 → end 4096, length 3584 > 1024 → [512,4096];
     * 11 h start 5632; 12 l temp_end 6144; 14: end, length 512 ≤ 1024 →
     * dropped; 15 h start 7680; end of audio at 8704: 8704−7680 = 1024 is
     * not > 1024 → dropped. */
    const int64_t w1[] = {512, 4096};
    expect_seq("lhhmhllhlllhlllhh", 17 * 512, &o, w1, 1);
    /* One more speech frame and N = 9215 (last frame partial): 9215−7680 =
     * 1535 > 1024, so the open speech ends at N. */
    const int64_t w2[] = {512, 4096, 7680, 9215};
    expect_seq("lhhmhllhlllhlllhhh", 18 * 512 - 1, &o, w2, 2);
    /* Nothing above threshold: no spans. */
    expect_seq("llmmll", 6 * 512, &o, NULL, 0);
}

/* Padding 64 ms = 1024 samples; gaps below 2048 are split in half. */
static void test_padding(void **state) {
    (void)state;
    ct_vad_options o = small_opts();
    o.speech_pad_ms = 64;
    /* Raw: [512,2048] (frames 1-3, ended at frame 6), [3584,5120] (frames
     * 7-9), [8704,10240] (frames 17-19, open at the end, 1536 > 1024).
     * First start: max(0, 512−1024) = 0. Gap 3584−2048 = 1536 < 2048 →
     * end 2048+768 = 2816, next start 3584−768 = 2816. Gap 8704−5120 =
     * 3584 ≥ 2048 → end 5120+1024 = 6144, next start 8704−1024 = 7680.
     * Last end: min(10240, 11264) = 10240. */
    const int64_t w[] = {0, 2816, 2816, 6144, 7680, 10240};
    expect_seq("lhhhlllhhhlllllllhhh", 20 * 512, &o, w, 3);
}

/* Max speech: min silence 200 ms (3200), max_dur 0.64 s → max speech
 * 10240 − 512 = 9728 samples; silences > 1568 (98 ms) are possible ends. */
static void test_split_at_widest_silence(void **state) {
    (void)state;
    ct_vad_options o = small_opts();
    o.min_silence_ms = 200;
    o.max_dur = 0.64;
    /* 0 start 0; 2-5 l: temp_end 1024; 6 h: silence 2048 > 1568 → possible
     * end (1024, 2048); 8-12 l: temp_end 4096; 13 h: silence 2560 → (4096,
     * 2560). 20: 10240 − 0 > 9728 → split at the widest, (4096, 2560):
     * push [0,4096], next start 4096+2560 = 6656 (< 4096+10240 → stays in
     * speech from 6656). 23-29 l: temp_end 11776; 30: silence 3584 ≥ 3200
     * → end, 11776−6656 = 5120 > 1024 → [6656,11776]. */
    const int64_t w[] = {0, 4096, 6656, 11776};
    char s[64];
    snprintf(s, sizeof s, "hh%s%s%s%s%s", "llll", "hh", "lllll", "hhhhhhhhhh", "lllllllll");
    expect_seq(s, 32 * 512, &o, w, 2);
}

static void test_split_tie_then_hard_split(void **state) {
    (void)state;
    ct_vad_options o = small_opts();
    o.min_silence_ms = 200;
    o.max_dur = 0.64;
    /* Two equal silences (1024, 2048) and (4096, 2048): the first wins →
     * [0,1024] (forced splits skip the min-speech check), speech continues
     * from 1024+2048 = 3072. No possible ends are left, so at 13312 (13312
     * − 3072 > 9728) the hard split pushes [3072,13312] and leaves speech;
     * frame 27 restarts it at 13824, open at the end (15360 − 13824 = 1536
     * > 1024) → [13824,15360]. */
    const int64_t w[] = {0, 1024, 3072, 13312, 13824, 15360};
    expect_seq("hhllllhhllllhhhhhhhhhhhhhhhhhh", 30 * 512, &o, w, 3);
    /* Continuous speech: hard split at frame 20 (10240 > 9728), frame 20
     * itself is skipped, restart at 21 = 10752 → [0,10240], [10752,12800]. */
    const int64_t w2[] = {0, 10240, 10752, 12800};
    expect_seq("hhhhhhhhhhhhhhhhhhhhhhhhh", 25 * 512, &o, w2, 2);
}

/* use_max_poss_sil_at_max_speech off (not the product's setting): the last
 * silence > 98 ms becomes prev_end, and the split uses it. */
static void test_split_at_last_silence_mode(void **state) {
    (void)state;
    ct_vad_options o = small_opts();
    o.min_silence_ms = 200;
    o.max_dur = 0.64;
    o.use_max_poss_sil_at_max_speech = 0;
    /* 2 l temp_end 1024; 6: silence 2048 > 1568 → prev_end 1024; 7 h:
     * next_start (0) < prev_end → next_start 3584. 20: too long, prev_end
     * set → [0,1024]; next_start 3584 ≥ 1024 → speech goes on from 3584,
     * open at the end: [3584,12800]. */
    const int64_t w[] = {0, 1024, 3584, 12800};
    expect_seq("hhlllllhhhhhhhhhhhhhhhhhh", 25 * 512, &o, w, 2);
    /* Split while still in silence: 14 l temp_end 7168; 18: silence 2048 →
     * prev_end 7168; 20: too long → [0,7168]; next_start 0 < 7168 → speech
     * ends; the trailing silence adds nothing. */
    const int64_t w2[] = {0, 7168};
    expect_seq("hhhhhhhhhhhhhhllllllllll", 24 * 512, &o, w2, 1);
}

/* Threshold edges: p == threshold is speech; p == neg_threshold is not
 * silence (both compared as binary32); neg_threshold is floored at 0.01. */
static void test_threshold_edges(void **state) {
    (void)state;
    ct_vad_options o = small_opts();
    o.min_dur = 0.016; /* 256 samples */
    /* 1 start 512; 2 temp_end 1024; 3 (0.4) nothing; 4: silence 1024 →
     * [512,1024] (512 > 256); 6 (0.5) starts at 3072; 7 (0.35 = neg) does
     * not end it; open at the end: [3072,4096]. */
    const float p[] = {0.4f, 0.9f, 0.1f, 0.4f, 0.1f, 0.4f, 0.5f, 0.35f};
    const int64_t w[] = {512, 1024, 3072, 4096};
    expect_spans(p, 8, 8 * 512, &o, w, 2);
    /* threshold 0.1 → neg max(−0.05, 0.01) = 0.01: 0.02 is not silence,
     * 0.005 is. min silence 32 ms (512): 4 temp_end 2048, 5 ends it →
     * [0,2048]; 6 restarts → [3072,3584]. Without the floor nothing would
     * ever be silence. */
    o.threshold = 0.1;
    o.min_silence_ms = 32;
    const float p2[] = {0.5f, 0.5f, 0.02f, 0.02f, 0.005f, 0.005f, 0.5f};
    const int64_t w2[] = {0, 2048, 3072, 3584};
    expect_spans(p2, 7, 7 * 512, &o, w2, 2);
}

/* PRODUCT-DETAILS §8.5's observed example: 10 s, 0.9 inside (1.0, 3.0),
 * (3.2, 5.0), (7.0, 7.1) s, else 0.05, product defaults. Speech frames
 * 32-93 and 101-156; the 0.2 s gap (3072+512 samples) is shorter than 300
 * ms; 219-221 is shorter than 500 ms. Pad 960: [15424, 81344]. With max_dur
 * 3 s (max speech 45568) the split comes at 62464, at the one possible end
 * (48128, 3584): [16384,48128] and [51712,80384], padded to [15424,49088]
 * and [50752,81344]. */
static void test_observed_example(void **state) {
    (void)state;
    float p[313];
    for (int i = 0; i < 313; i++) {
        double t = 512.0 * i / 16000;
        p[i] = ((t > 1.0 && t < 3.0) || (t > 3.2 && t < 5.0) || (t > 7.0 && t < 7.1)) ? 0.9f : 0.05f;
    }
    ct_vad_options o = ct_vad_default_options();
    const int64_t w[] = {15424, 81344};
    expect_spans(p, 313, 160000, &o, w, 1);
    ct_vad_result r;
    CT_ASSERT_OK(ct_vad_segment_probs(p, 313, 160000, &o, &r));
    assert_int_equal(r.n_spans, 1);
    assert_true(r.spans[0].start == 0.964 && r.spans[0].end == 5.084);
    assert_int_equal(r.n_segments, 1);
    assert_true(r.duration == 10.0);
    ct_vad_result_free(&r);
    o.max_dur = 3.0;
    const int64_t w2[] = {15424, 49088, 50752, 81344};
    expect_spans(p, 313, 160000, &o, w2, 2);
    /* merging would give 5.084 − 0.964 > 3 s: the segments stay apart */
    o.merge = 1;
    CT_ASSERT_OK(ct_vad_segment_probs(p, 313, 160000, &o, &r));
    assert_int_equal(r.n_segments, 2);
    ct_vad_result_free(&r);
}

static void test_bad_probabilities(void **state) {
    (void)state;
    ct_vad_options o = ct_vad_default_options();
    ct_sample_span *s;
    size_t ns;
    float p[3] = {0.1f, NAN, 0.2f};
    CT_ASSERT_STATUS(ct_vad_silero_spans(p, 3, 1500, &o, &s, &ns), CT_ERR_INVALID_ARG);
    p[1] = 1.5f;
    CT_ASSERT_STATUS(ct_vad_silero_spans(p, 3, 1500, &o, &s, &ns), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("outside [0, 1]");
    p[1] = 0.5f;
    CT_ASSERT_STATUS(ct_vad_silero_spans(p, 3, 2000, &o, &s, &ns), CT_ERR_INVALID_ARG); /* 4 frames */
    CT_ASSERT_OK(ct_vad_silero_spans(p, 0, 0, &o, &s, &ns));
    assert_int_equal(ns, 0);
}

/* Seconds (§8.5), merge and validate (§7). */
static void test_seconds_merge_validate(void **state) {
    (void)state;
    /* to seconds: clamped to [0, N/16000], empty rows dropped */
    ct_sample_span ss[3] = {{-5, 8000}, {9000, 9000}, {15000, 17000}};
    ct_span sec[3];
    size_t k = ct_vad_samples_to_seconds(sec, ss, 3, 16000);
    assert_int_equal(k, 2);
    assert_true(sec[0].start == 0.0 && sec[0].end == 0.5);
    assert_true(sec[1].start == 15000.0 / 16000 && sec[1].end == 1.0);

    /* merge, max 2.5: [0,1]+[1.5,2] → [0,2] (2 ≤ 2.5); [2.2,5] would make
     * 5 s; [6,7] from 2.2 would be 4.8 s. Then exactly 2.5 joins (1e-9). */
    ct_span m[4] = {{0, 1}, {1.5, 2}, {2.2, 5}, {6, 7}}, out[4];
    k = ct_vad_merge(out, m, 4, 2.5);
    assert_int_equal(k, 3);
    assert_true(out[0].start == 0 && out[0].end == 2 && out[1].start == 2.2 && out[2].end == 7);
    ct_span m2[2] = {{0, 1}, {2, 2.5}};
    assert_int_equal(ct_vad_merge(out, m2, 2, 2.5), 1);
    assert_true(out[0].end == 2.5);
    assert_int_equal(ct_vad_merge(out, m2, 0, 2.5), 0);

    /* validate: clamp within tolerance (2 samples), drop empty rows, raise a
     * start slightly below the previous end */
    const double tol = 2.0 / 16000;
    ct_span v[4] = {{-tol / 2, 1.0}, {1.0 - tol / 2, 2.0}, {2.5, 2.5}, {3.0, 10.0 + tol / 2}};
    size_t n = 4;
    CT_ASSERT_OK(ct_vad_validate(v, &n, 10.0, 30.0));
    assert_int_equal(n, 3);
    assert_true(v[0].start == 0.0 && v[1].start == 1.0 && v[2].start == 3.0 && v[2].end == 10.0);
    /* each failure */
    ct_span e1[1] = {{-0.01, 1}};
    n = 1;
    CT_ASSERT_STATUS(ct_vad_validate(e1, &n, 10, 30), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("Segment 0 lies outside the audio: -0.010000..1.000000 for 10.000000s");
    ct_span e2[2] = {{0, 2}, {1, 3}};
    n = 2;
    CT_ASSERT_STATUS(ct_vad_validate(e2, &n, 10, 30), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("Segment 1 overlaps or is out of order");
    ct_span e3[1] = {{0, 5}};
    n = 1;
    CT_ASSERT_STATUS(ct_vad_validate(e3, &n, 10, 4), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("exceeding the 4s single-row limit");
    ct_span e4[1] = {{2, 1}};
    n = 1;
    CT_ASSERT_STATUS(ct_vad_validate(e4, &n, 10, 30), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("inverted");
    ct_span e5[1] = {{NAN, 1}};
    n = 1;
    CT_ASSERT_STATUS(ct_vad_validate(e5, &n, 10, 30), CT_ERR_INVALID_ARG);
    /* never more than 35 s, whatever the caller's limit */
    ct_span e6[1] = {{0, 36}};
    n = 1;
    CT_ASSERT_STATUS(ct_vad_validate(e6, &n, 100, 100), CT_ERR_INVALID_ARG);
}

static void test_options(void **state) {
    (void)state;
    ct_vad_options o = ct_vad_default_options();
    assert_true(o.mode == CT_VAD_SILERO && o.threshold == 0.5 && o.min_silence_ms == 300 &&
                o.speech_pad_ms == 60 && o.min_dur == 0.5 && o.max_dur == 30.0 && o.max_silence == 0.6 &&
                o.energy_threshold == 50.0 && !o.merge);
    CT_ASSERT_OK(ct_vad_check_options(&o));
    o.max_dur = 36;
    CT_ASSERT_STATUS(ct_vad_check_options(&o), CT_ERR_INVALID_ARG);
    o = ct_vad_default_options();
    o.min_dur = 31;
    CT_ASSERT_STATUS(ct_vad_check_options(&o), CT_ERR_INVALID_ARG);
    o = ct_vad_default_options();
    o.threshold = 1.5;
    CT_ASSERT_STATUS(ct_vad_check_options(&o), CT_ERR_INVALID_ARG);
    o = ct_vad_default_options();
    o.mode = CT_VAD_AUDITOK;
    o.max_silence = 30;
    CT_ASSERT_STATUS(ct_vad_check_options(&o), CT_ERR_INVALID_ARG);
    o = ct_vad_default_options();
    o.mode = CT_VAD_NONE;
    o.min_dur = 0;
    o.max_dur = 0.9;
    CT_ASSERT_STATUS(ct_vad_check_options(&o), CT_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_end_min_speech),
        cmocka_unit_test(test_padding),
        cmocka_unit_test(test_split_at_widest_silence),
        cmocka_unit_test(test_split_tie_then_hard_split),
        cmocka_unit_test(test_split_at_last_silence_mode),
        cmocka_unit_test(test_threshold_edges),
        cmocka_unit_test(test_observed_example),
        cmocka_unit_test(test_bad_probabilities),
        cmocka_unit_test(test_seconds_merge_validate),
        cmocka_unit_test(test_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
