/* test_output_text.c — Python text rules, segment timing (§6), cues (§5.1–
 * 5.2), txt/srt/vtt (§5.3–5.4) and the §1.3 worked transcript, against every
 * "Observed:" example of PRODUCT-DETAILS in those sections.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/cues.h"
#include "output/pytext.h"
#include "output/render.h"
#include "output/timing.h"
#include "output/transcript_json.h"
#include "test_output_util.h"
#include "testutil.h"

static void test_python_whitespace(void **st) {
    (void)st;
    const uint32_t space[] = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680,
                              0x2000, 0x2005, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
    const uint32_t not_space[] = {0x00, 0x08, 0x0E, 0x1B, 0x21, 0x7F, 0x84, 0x86, 0x180E, 0x200B, 0x2060, 0xFEFF, 'a'};
    for (size_t i = 0; i < sizeof space / sizeof space[0]; i++) assert_true(ct_py_isspace(space[i]));
    for (size_t i = 0; i < sizeof not_space / sizeof not_space[0]; i++) assert_false(ct_py_isspace(not_space[i]));
    /* split on runs of U+3000, U+00A0 and ASCII; zero-width space is a character */
    const char *s = "\xe3\x80\x80 a\xc2\xa0\xc2\xa0" "b\xe2\x80\x8b" "c\x1f";
    ct_py_field *f;
    size_t n;
    CT_ASSERT_OK(ct_py_split(s, strlen(s), &f, &n));
    assert_int_equal(n, 2);
    assert_int_equal(f[0].len, 1);
    assert_memory_equal(s + f[0].off, "a", 1);
    assert_int_equal(f[1].len, strlen("b\xe2\x80\x8b" "c"));
    free(f);
    char *t;
    CT_ASSERT_OK(ct_py_strip("\xe2\x80\xa8 x y\xc2\x85", &t));
    assert_string_equal(t, "x y");
    free(t);
    assert_int_equal(ct_py_len("مرحبا", strlen("مرحبا")), 5);
}

static void test_proportional_counts_observed(void **st) {
    (void)st;
    /* §6 Observed: 7 tokens over spans of 1.0, 0.5, 1.5 s -> [2,1,4] */
    ct_span a[] = {{0, 1.0}, {2.0, 2.5}, {3.0, 4.5}};
    int c[3];
    ct_timing_proportional_counts(7, a, 3, c);
    assert_int_equal(c[0], 2);
    assert_int_equal(c[1], 1);
    assert_int_equal(c[2], 4);
    /* 5 tokens over three equal spans -> [2,2,1] */
    ct_span b[] = {{0, 1}, {2, 3}, {4, 5}};
    ct_timing_proportional_counts(5, b, 3, c);
    assert_int_equal(c[0], 2);
    assert_int_equal(c[1], 2);
    assert_int_equal(c[2], 1);
    ct_timing_proportional_counts(0, b, 3, c);
    assert_int_equal(c[0] + c[1] + c[2], 0);
}

static void test_uniform_segment_arithmetic(void **st) {
    (void)st;
    ct_word_list l = {0};
    CT_ASSERT_OK(ct_timing_uniform_words(" one two  three four five ", 0.25, 1.95, 3, CT_TIMING_UNIFORM_SEGMENT, &l));
    assert_int_equal(l.n, 5);
    /* start + k·d with d = 1.7 / 5: the 4th word ends at 1.6099999999999999 */
    char out[32];
    size_t n;
    CT_ASSERT_OK(ct_json_format_double(l.v[3].end, out, &n));
    assert_string_equal(out, "1.6099999999999999");
    assert_string_equal(l.v[2].text, "three");
    assert_int_equal(l.v[4].segment_word_index, 4);
    assert_int_equal(l.v[4].segment_index, 3);
    ct_word_list_free(&l);
    /* an inverted segment gives zero-length words at its start */
    CT_ASSERT_OK(ct_timing_uniform_words("a b", 2.0, 1.0, 0, CT_TIMING_UNIFORM_FALLBACK, &l));
    assert_true(l.v[1].start == 2.0 && l.v[1].end == 2.0);
    ct_word_list_free(&l);
}

static void test_record_words_merge_and_not(void **st) {
    (void)st;
    ct_file_record r = {0};
    test_add_segment(&r, 0.0, 4.5, "a b c d e f g", 8);
    test_add_segment(&r, 5.0, 6.0, "", 1);
    test_add_segment(&r, 7.0, 8.0, "x y", 3);
    test_add_span(&r, 0.0, 1.0);
    test_add_span(&r, 2.0, 2.5);
    test_add_span(&r, 3.0, 4.5);
    /* merge on: the first segment's tokens go 2/1/4 over its spans; the
     * third segment has no span inside it, so it is uniform_segment */
    CT_ASSERT_OK(ct_timing_build_words(&r, CT_ALIGN_SEGMENT, 1));
    assert_int_equal(r.n_words, 9);
    assert_int_equal(r.words[0].source, CT_TIMING_UNIFORM_SPEECH_SPANS);
    assert_true(r.words[1].start == 0.5 && r.words[1].end == 1.0);
    assert_true(r.words[2].start == 2.0 && r.words[2].end == 2.5);
    assert_true(r.words[3].start == 3.0);
    assert_int_equal(r.words[6].segment_word_index, 6);
    assert_true(r.words[6].end == 4.5);
    assert_int_equal(r.words[7].source, CT_TIMING_UNIFORM_SEGMENT);
    assert_int_equal(r.words[7].segment_index, 2);
    /* merge off: uniform over the segment */
    CT_ASSERT_OK(ct_timing_build_words(&r, CT_ALIGN_SEGMENT, 0));
    assert_int_equal(r.n_words, 9);
    assert_int_equal(r.words[0].source, CT_TIMING_UNIFORM_SEGMENT);
    assert_true(r.words[1].start == 4.5 / 7);
    CT_ASSERT_OK(ct_timing_build_words(&r, CT_ALIGN_NONE, 0));
    assert_int_equal(r.n_words, 0);
    CT_ASSERT_STATUS(ct_timing_build_words(&r, CT_ALIGN_WORD, 0), CT_ERR_INVALID_ARG);
    ct_file_record_clear(&r);
}

static ct_cue_limits limits(double media) {
    ct_cue_limits l = {80, 6.0, 0.6, 0.30, media};
    return l;
}

static void test_cues_observed(void **st) {
    (void)st;
    /* §5.2 Observed: (1.0–1.05 "a."), (1.2–1.25 "b"), (2.0–2.1 "c"), media 2.2 */
    ct_file_record r = {0};
    test_add_word(&r, 1.0, 1.05, "a.");
    test_add_word(&r, 1.2, 1.25, "b");
    test_add_word(&r, 2.0, 2.1, "c");
    ct_cue_limits l = limits(2.2);
    ct_rec_cue *c;
    size_t n;
    CT_ASSERT_OK(ct_cues_build(r.words, r.n_words, &l, &c, &n));
    assert_int_equal(n, 3);
    assert_true(c[0].start == 1.0 && c[0].end == 1.2);
    assert_string_equal(c[0].text, "a.");
    assert_true(c[1].start == 1.2 && c[1].end == 1.5);
    assert_true(c[2].start == 2.0 && c[2].end == 2.2);
    for (size_t i = 0; i < n; i++) free(c[i].text);
    free(c);
    ct_file_record_clear(&r);
}

static void test_cue_grouping_rules(void **st) {
    (void)st;
    ct_file_record r = {0};
    /* ASCII comma does not end a cue; Arabic comma and question mark do */
    test_add_word(&r, 0.0, 0.5, "one,");
    test_add_word(&r, 0.5, 1.0, "two،");
    test_add_word(&r, 1.0, 1.5, "three");
    test_add_word(&r, 1.5, 2.0, "four؟");
    test_add_word(&r, 2.0, 2.5, "five…");
    ct_cue_limits l = limits(NAN);
    ct_rec_cue *c;
    size_t n;
    CT_ASSERT_OK(ct_cues_build(r.words, r.n_words, &l, &c, &n));
    assert_int_equal(n, 3);
    assert_string_equal(c[0].text, "one, two،");
    assert_string_equal(c[1].text, "three four؟");
    assert_string_equal(c[2].text, "five…");
    for (size_t i = 0; i < n; i++) free(c[i].text);
    free(c);
    ct_file_record_clear(&r);
    /* max_chars counts code points: "ابجد هوز" is 8 of them */
    test_add_word(&r, 0.0, 0.1, "ابجد");
    test_add_word(&r, 0.1, 0.2, "هوز");
    test_add_word(&r, 0.2, 0.3, "حطي");
    l.max_chars = 8;
    CT_ASSERT_OK(ct_cues_build(r.words, r.n_words, &l, &c, &n));
    assert_int_equal(n, 2);
    assert_string_equal(c[0].text, "ابجد هوز");
    /* the first cue is stretched to 0.30 s but stops at the next start */
    assert_true(c[0].end == 0.2);
    assert_true(c[1].end == c[1].start + 0.30);
    for (size_t i = 0; i < n; i++) free(c[i].text);
    free(c);
    ct_file_record_clear(&r);
    /* gap and duration limits: strictly greater closes the group */
    test_add_word(&r, 0.0, 1.0, "a");
    test_add_word(&r, 1.5, 2.0, "b");   /* gap 0.5 = max_gap: stays */
    test_add_word(&r, 2.75, 3.0, "c");  /* gap 0.75: new cue */
    test_add_word(&r, 3.0, 8.875, "d"); /* duration 6.125 from 2.75: new cue */
    l = limits(5.0);
    l.max_gap = 0.5;
    CT_ASSERT_OK(ct_cues_build(r.words, r.n_words, &l, &c, &n));
    assert_int_equal(n, 3);
    assert_string_equal(c[0].text, "a b");
    assert_string_equal(c[1].text, "c");
    /* media end clamps the last cue */
    assert_true(c[2].start == 3.0 && c[2].end == 5.0);
    for (size_t i = 0; i < n; i++) free(c[i].text);
    free(c);
    ct_file_record_clear(&r);
}

static void check_ts(double s, int hours, char marker, const char *want) {
    char out[48];
    ct_render_timestamp(s, hours, marker, out);
    if (strcmp(out, want) != 0) fail_msg("%.17g -> %s, want %s", s, out, want);
}

static void test_timestamps_observed(void **st) {
    (void)st;
    check_ts(0.0005, 0, '.', "00:00.000");
    check_ts(0.0015, 0, '.', "00:00.002");
    check_ts(59.9995, 0, '.', "01:00.000");
    check_ts(-1, 0, '.', "00:00.000");
    check_ts(3661.0005, 1, ',', "01:01:01,000");
    check_ts(1.98, 0, '.', "00:01.980");
    check_ts(3600.5, 0, '.', "01:00:00.500");
    check_ts(360000.0, 1, ',', "100:00:00,000");
}

static void test_render_formats(void **st) {
    (void)st;
    ct_file_record r = {0};
    ct_jbuf b = {0};
    /* zero cues and no segments */
    CT_ASSERT_OK(ct_render_srt(&r, &b));
    assert_int_equal(b.len, 0);
    CT_ASSERT_OK(ct_render_vtt(&r, &b));
    assert_string_equal(b.data, "WEBVTT\n\n");
    ct_jbuf_free(&b);
    CT_ASSERT_OK(ct_render_txt(&r, &b));
    assert_string_equal(b.data, "\n");
    ct_jbuf_free(&b);
    /* §5.4 Observed SRT fragment */
    r.cues = calloc(2, sizeof *r.cues);
    r.n_cues = 2;
    r.cues[0] = (ct_rec_cue){0.5, 1.98, strdup("مرحبا بكم في العالم.")};
    r.cues[1] = (ct_rec_cue){3600.5, 3601.0, strdup("b")};
    CT_ASSERT_OK(ct_render_srt(&r, &b));
    assert_string_equal(b.data, "1\n00:00:00,500 --> 00:00:01,980\nمرحبا بكم في العالم.\n\n"
                                "2\n01:00:00,500 --> 01:00:01,000\nb\n\n");
    ct_jbuf_free(&b);
    CT_ASSERT_OK(ct_render_vtt(&r, &b));
    assert_string_equal(b.data, "WEBVTT\n\n00:00.500 --> 00:01.980\nمرحبا بكم في العالم.\n\n"
                                "01:00:00.500 --> 01:00:01.000\nb\n\n");
    ct_jbuf_free(&b);
    test_add_segment(&r, 0, 1, " first ", 3);
    test_add_segment(&r, 1, 2, "", 1);
    test_add_segment(&r, 2, 3, "second\xe3\x80\x80", 2);
    CT_ASSERT_OK(ct_render_txt(&r, &b));
    assert_string_equal(b.data, "first\nsecond\n");
    ct_jbuf_free(&b);
    ct_file_record_clear(&r);
}

static void test_output_formats(void **st) {
    (void)st;
    ct_transcriber_options o = test_default_options();
    ct_format f[CT_FORMAT_COUNT];
    assert_int_equal(ct_output_formats(&o, f), 3);
    assert_true(f[0] == CT_FORMAT_TXT && f[1] == CT_FORMAT_SRT && f[2] == CT_FORMAT_VTT);
    o.text_only = 1;
    assert_int_equal(ct_output_formats(&o, f), 1);
    assert_true(f[0] == CT_FORMAT_TXT);
    o.formats[0] = CT_FORMAT_JSON, o.formats[1] = CT_FORMAT_TXT, o.formats[2] = CT_FORMAT_JSON;
    o.n_formats = 3;
    assert_int_equal(ct_output_formats(&o, f), 2);
    assert_true(f[0] == CT_FORMAT_JSON && f[1] == CT_FORMAT_TXT);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *d = malloc((size_t)n + 1);
    assert_int_equal(fread(d, 1, (size_t)n, f), (size_t)n);
    d[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return d;
}

/* §1.3: the worked example, rebuilt from a record through timing, cues and
 * the writer, byte for byte (the abbreviated artifacts map included). */
static void test_worked_example(void **st) {
    (void)st;
    ct_transcriber_options o = test_default_options();
    ct_file_record r = {0};
    r.source_path = strdup("/data/a.wav");
    r.duration = 3.2;
    r.decode_backend = strdup("ffmpeg");
    r.vad_engine_actual = strdup("onnx");
    r.vad_provider = strdup("CPUExecutionProvider");
    test_add_span(&r, 0.25, 2.0);
    test_add_span(&r, 2.5, 3.0);
    test_add_segment(&r, 0.25, 2.0, "مرحبا بكم.", 7);
    test_add_segment(&r, 2.5, 3.0, "", 1);
    CT_ASSERT_OK(ct_timing_build_words(&r, ct_timing_mode(&o), o.vad_merge));
    CT_ASSERT_OK(ct_cues_build_record(&r, &o));
    ct_artifact art[2] = {{(char *)"lib/cohere/transcribe/api.rb", "<sha256>"}, {(char *)"...", "..."}};
    ct_artifacts arts = {art, 2};
    ct_output_context ctx = {"0.1.0", &arts, CT_DEFAULT_MODEL_ID, CT_DEFAULT_MODEL_REVISION, NULL, NULL};
    ct_jbuf b = {0};
    CT_ASSERT_OK(ct_render_format(&r, CT_FORMAT_JSON, &o, &ctx, &b));
    size_t n;
    char *want = slurp(CT_FIXTURE("output/worked_example.json"), &n);
    if (b.len != n || memcmp(b.data, want, n) != 0) {
        size_t i = 0;
        while (i < n && i < b.len && b.data[i] == want[i]) i++;
        fail_msg("transcript differs at byte %zu:\n%s", i, b.data + (i > 40 ? i - 40 : 0));
    }
    free(want);
    ct_jbuf_free(&b);
    /* text-only: no words, no cues, timing none */
    o.text_only = 1;
    CT_ASSERT_OK(ct_timing_build_words(&r, ct_timing_mode(&o), 0));
    CT_ASSERT_OK(ct_cues_build_record(&r, &o));
    json_t *doc;
    CT_ASSERT_OK(ct_transcript_json_tree(&r, &o, &ctx, &doc));
    assert_string_equal(json_string_value(json_object_get(doc, "timing")), "none");
    assert_int_equal(json_array_size(json_object_get(doc, "words")), 0);
    assert_int_equal(json_array_size(json_object_get(doc, "cues")), 0);
    json_decref(doc);
    ct_file_record_clear(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_whitespace),
        cmocka_unit_test(test_proportional_counts_observed),
        cmocka_unit_test(test_uniform_segment_arithmetic),
        cmocka_unit_test(test_record_words_merge_and_not),
        cmocka_unit_test(test_cues_observed),
        cmocka_unit_test(test_cue_grouping_rules),
        cmocka_unit_test(test_timestamps_observed),
        cmocka_unit_test(test_render_formats),
        cmocka_unit_test(test_output_formats),
        cmocka_unit_test(test_worked_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
