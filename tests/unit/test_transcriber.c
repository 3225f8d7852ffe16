/* test_transcriber.c — the public transcriber API (include/cohere_transcribe.h)
 * on the tiny product model: results through the accessors equal the
 * original's golden outputs, options are checked with field names, the model
 * loads lazily and once per handle, progress arrives, a cancel from the
 * progress callback rolls back and leaves earlier files published, and a
 * closed handle refuses work. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cohere_transcribe.h"
#include "compute/cpu/cpu_state.h"
#include "pipeline/pipeline_internal.h"
#include "testutil.h"

static ct_transcriber_options base_options(void) {
    ct_transcriber_options o = ct_transcriber_default_options();
    o.model = CT_FIXTURE("tiny-product");
    o.vad_weights = CT_TESTDATA("silero/silero_vad.onnx");
    o.max_new_tokens = 60; /* the tiny decoder has 128 positions */
    o.max_retry_tokens = 114;
    return o;
}

static void test_defaults_and_checks(void **state) {
    (void)state;
    ct_transcriber_options o = ct_transcriber_default_options();
    assert_string_equal(o.language, "ar");
    assert_int_equal(o.max_new_tokens, 445);
    assert_int_equal(o.max_retry_tokens, 896);
    assert_true(o.publish && o.recursive && o.stop_repetition_loops);
    CT_ASSERT_OK(ct_transcriber_options_check(&o));
    o.max_dur = -1;
    ct_transcriber *t = NULL;
    assert_int_not_equal(ct_transcriber_create(&o, &t), CT_OK);
    assert_null(t);
    /* library messages name the field, not a command-line flag */
    CT_ASSERT_ERROR_HAS("max_dur must be finite and positive");
    assert_null(strstr(ct_last_error(), "--"));
    o.cli_option_names = 1;
    assert_int_not_equal(ct_transcriber_options_check(&o), CT_OK);
    CT_ASSERT_ERROR_HAS("--max-dur must be finite and positive");
}

/* The golden transcript of file stem in set, as parsed JSON. */
static json_t *golden_json(const char *set, const char *stem) {
    char rel[256];
    snprintf(rel, sizeof rel, "golden/%s/out/%s.json", set, stem);
    json_error_t e;
    json_t *j = json_load_file(CT_FIXTURE(rel), 0, &e);
    if (!j) fail_msg("%s: %s", rel, e.text);
    return j;
}

typedef struct {
    int files_final, asr_events, batch_events, messages;
    ct_transcriber *cancel_at_batch; /* cancel on the first batch event */
} progress_log;

static void on_progress(const ct_progress *p, void *user) {
    progress_log *l = user;
    if (p->stage == CT_PROGRESS_FILES && p->current == p->total) l->files_final = (int)p->current;
    if (p->stage == CT_PROGRESS_ASR) l->asr_events++;
    if (p->stage == CT_PROGRESS_MESSAGE) l->messages++;
    if (p->stage == CT_PROGRESS_BATCH) {
        l->batch_events++;
        if (l->cancel_at_batch) ct_transcriber_cancel(l->cancel_at_batch);
    }
}

static void test_results_equal_golden(void **state) {
    (void)state;
    ct_transcriber_options o = base_options();
    o.publish = 0; /* results only: nothing is written */
    /* the original's precision: auto is bf16 on CPUs with native bf16 */
    o.dtype = CT_PRECISION_FP32;
    ct_transcriber *t;
    CT_ASSERT_OK(ct_transcriber_create(&o, &t));
    progress_log log = {0};
    ct_transcriber_set_progress(t, on_progress, &log);
    const char *paths[] = {CT_FIXTURE("audio/c1_en_us_3s.wav"), CT_FIXTURE("audio/c3_fr_ar_10s.wav")};
    ct_run *run = NULL;
    CT_ASSERT_OK(ct_transcriber_run(t, paths, 2, &run));
    assert_int_equal(ct_run_file_count(run), 2);
    const char *stems[] = {"c1_en_us_3s", "c3_fr_ar_10s"};
    for (size_t i = 0; i < 2; i++) {
        const ct_file_result *f = ct_run_file(run, i);
        assert_int_equal(ct_file_get_status(f), CT_FILE_COMPLETED);
        assert_int_equal(ct_file_output_count(f), 0);
        json_t *g = golden_json("default", stems[i]);
        assert_true(ct_file_duration(f) == json_real_value(json_object_get(json_object_get(g, "source"),
                                                                            "duration_seconds")));
        /* the non-empty segments, in order, with their times and texts */
        json_t *segs = json_object_get(g, "segments");
        size_t k = 0;
        for (size_t s = 0; s < ct_file_segment_count(f); s++) {
            ct_segment sg = ct_file_segment(f, s);
            if (!sg.text[0]) continue;
            json_t *gs = json_array_get(segs, k++);
            assert_non_null(gs);
            assert_int_equal(sg.index, json_integer_value(json_object_get(gs, "segment_index")));
            assert_true(sg.start == json_real_value(json_object_get(gs, "start")));
            assert_true(sg.end == json_real_value(json_object_get(gs, "end")));
            assert_string_equal(sg.text, json_string_value(json_object_get(gs, "text")));
        }
        assert_int_equal(k, json_array_size(segs));
        /* words and cues, field by field */
        json_t *words = json_object_get(g, "words"), *cues = json_object_get(g, "cues");
        assert_int_equal(ct_file_word_count(f), json_array_size(words));
        for (size_t w = 0; w < ct_file_word_count(f); w++) {
            ct_word wd = ct_file_word(f, w);
            json_t *gw = json_array_get(words, w);
            assert_string_equal(wd.text, json_string_value(json_object_get(gw, "text")));
            assert_true(wd.start == json_real_value(json_object_get(gw, "start")));
            assert_true(wd.end == json_real_value(json_object_get(gw, "end")));
            assert_string_equal(ct_timing_source_name(wd.source),
                                json_string_value(json_object_get(gw, "timing_source")));
        }
        assert_int_equal(ct_file_cue_count(f), json_array_size(cues));
        for (size_t c = 0; c < ct_file_cue_count(f); c++) {
            ct_cue cu = ct_file_cue(f, c);
            json_t *gc = json_array_get(cues, c);
            assert_string_equal(cu.text, json_string_value(json_object_get(gc, "text")));
            assert_true(cu.start == json_real_value(json_object_get(gc, "start")));
            assert_true(cu.end == json_real_value(json_object_get(gc, "end")));
        }
        /* the text: the txt lines without the final newline */
        char rel[256];
        snprintf(rel, sizeof rel, "golden/default/out/%s.txt", stems[i]);
        FILE *fp = fopen(CT_FIXTURE(rel), "rb");
        assert_non_null(fp);
        char buf[8192];
        size_t n = fread(buf, 1, sizeof buf - 1, fp);
        fclose(fp);
        buf[n] = 0;
        if (n && buf[n - 1] == '\n') buf[n - 1] = 0;
        assert_string_equal(ct_file_text(f), buf);
        ct_provenance pv = ct_file_provenance(f);
        assert_string_equal(pv.device, "cpu");
        assert_string_equal(pv.dtype, "fp32");
        assert_string_equal(pv.decode_backend, "ffmpeg");
        json_decref(g);
    }
    ct_run_stats st;
    ct_run_get_stats(run, &st);
    assert_int_equal(st.files_completed, 2);
    assert_true(st.model_loaded && st.batches > 0 && st.generated_tokens > 0);
    assert_true(st.audio_seconds > 12.8 && st.audio_seconds < 12.9);
    assert_int_equal(log.files_final, 2);
    assert_int_equal(log.asr_events, 4); /* 0/S and S/S per file */
    assert_true(log.batch_events >= 1 && log.messages == 1);
    ct_run_free(run);
    /* the handle keeps its model: a second run loads nothing */
    CT_ASSERT_OK(ct_transcriber_run(t, paths, 1, &run));
    ct_run_get_stats(run, &st);
    assert_true(st.seconds_asr_load == 0.0);
    assert_int_equal(st.files_completed, 1);
    ct_run_free(run);
    /* closed: refused, with the handle's own message */
    ct_transcriber_close(t);
    CT_ASSERT_STATUS(ct_transcriber_run(t, paths, 1, &run), CT_ERR_MISUSE);
    assert_null(run);
    assert_non_null(strstr(ct_transcriber_errmsg(t), "closed"));
    ct_transcriber_free(t);
}

/* --dtype auto on the CPU: bf16 where the CPU multiplies bf16 natively, else
 * fp32 (the original's choice everywhere); the provenance says which ran. */
static void test_auto_dtype_follows_the_cpu(void **state) {
    (void)state;
    ct_transcriber_options o = base_options();
    o.publish = 0;
    assert_int_equal(o.dtype, CT_PRECISION_AUTO);
    ct_transcriber *t;
    CT_ASSERT_OK(ct_transcriber_create(&o, &t));
    const char *paths[] = {CT_FIXTURE("audio/c1_en_us_3s.wav")};
    ct_run *run = NULL;
    CT_ASSERT_OK(ct_transcriber_run(t, paths, 1, &run));
    const ct_file_result *f = ct_run_file(run, 0);
    assert_int_equal(ct_file_get_status(f), CT_FILE_COMPLETED);
    const char *why;
    assert_string_equal(ct_file_provenance(f).dtype, ct_cpu_auto_dtype(&why) == CT_DTYPE_BF16 ? "bf16" : "fp32");
    ct_run_free(run);
    ct_transcriber_free(t);
}

static void test_lazy_model_and_input_errors(void **state) {
    (void)state;
    ct_transcriber_options o = base_options();
    o.model = "/nonexistent/model-dir"; /* a path that does not exist: refused at create */
    ct_transcriber *t = NULL;
    CT_ASSERT_STATUS(ct_transcriber_create(&o, &t), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("/nonexistent/model-dir");
    const char *dir = ct_test_tmpdir(); /* a folder without a model: found only when loading */
    o.model = dir;
    o.publish = 0;
    CT_ASSERT_OK(ct_transcriber_create(&o, &t)); /* nothing loads at create */
    const char *missing[] = {"/nonexistent/audio.wav"};
    ct_run *run = NULL;
    CT_ASSERT_STATUS(ct_transcriber_run(t, missing, 1, &run), CT_ERR_NOT_FOUND);
    assert_non_null(strstr(ct_transcriber_errmsg(t), "Input does not exist: /nonexistent/audio.wav"));
    ct_run_free(run);
    /* a real input reaches the model, which is missing: a run failure naming it */
    const char *paths[] = {CT_FIXTURE("audio/c1_en_us_3s.wav")};
    assert_int_not_equal(ct_transcriber_run(t, paths, 1, &run), CT_OK);
    if (!strstr(ct_transcriber_errmsg(t), dir)) fail_msg("message '%s' lacks %s", ct_transcriber_errmsg(t), dir);
    ct_run_free(run);
    ct_transcriber_free(t);
    ct_test_rmtree(dir);
}

static int has_temporaries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        n += strstr(e->d_name, ".tmp") || strstr(e->d_name, ".bak") || strstr(e->d_name, ".jnl");
    closedir(d);
    return n;
}

static void test_cancel_rolls_back(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char in[512], a[600], b[600], c[600], p[700];
    snprintf(in, sizeof in, "%s/in", dir);
    mkdir(in, 0777);
    /* a short file first (published by the first group), then longer ones */
    snprintf(a, sizeof a, "%s/a.wav", in);
    snprintf(b, sizeof b, "%s/b.wav", in);
    snprintf(c, sizeof c, "%s/c.wav", in);
    ct_transcriber_options o = base_options();
    o.batch_size = 1; /* groups of 1, 2, 4 segments: several groups */
    o.vad = CT_VAD_MODE_NONE;
    o.max_dur = 30;
    symlink(CT_FIXTURE("audio/c1_en_us_3s.wav"), a);
    symlink(CT_FIXTURE("audio/c2_de_noise_6s.wav"), b);
    symlink(CT_FIXTURE("audio/c3_fr_ar_10s.wav"), c);
    snprintf(p, sizeof p, "%s/out", dir);
    o.output_dir = p;
    ct_transcriber *t;
    CT_ASSERT_OK(ct_transcriber_create(&o, &t));
    progress_log log = {0};
    log.cancel_at_batch = t;
    ct_transcriber_set_progress(t, on_progress, &log);
    const char *paths[] = {in};
    ct_run *run = NULL;
    CT_ASSERT_STATUS(ct_transcriber_run(t, paths, 1, &run), CT_ERR_ABORTED);
    assert_non_null(run);
    /* nothing half-written, no temporaries, and no set for a cancelled file */
    char txt[800];
    int published = 0;
    const char *stems[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        snprintf(txt, sizeof txt, "%s/%s.txt", p, stems[i]);
        published += access(txt, F_OK) == 0;
    }
    assert_true(published < 3);
    assert_int_equal(has_temporaries(p), 0);
    ct_run_free(run);
    ct_transcriber_free(t);
    ct_test_rmtree(dir);
}

/* Results only, fp32, and exactly one engine call per segment (batch size
 * 1, benchmark mode: no truncation retries), so progress events count
 * segments. */
static ct_transcriber_options one_call_per_segment(void) {
    ct_transcriber_options o = base_options();
    o.publish = 0;
    o.dtype = CT_PRECISION_FP32;
    o.batch_size = 1;
    o.adaptive_batch = 0;
    o.benchmark_tokens_per_second = 3.3;
    return o;
}

typedef struct {
    char seq[64]; /* B: an engine call; A: a file's ASR finished */
    size_t n;
} event_seq;

static void on_event(const ct_progress *p, void *user) {
    event_seq *e = user;
    char c = p->stage == CT_PROGRESS_BATCH                               ? 'B'
             : p->stage == CT_PROGRESS_ASR && p->current == p->total ? 'A'
                                                                       : 0;
    if (c && e->n + 1 < sizeof e->seq) e->seq[e->n++] = c;
}

/* Groups ramp up (ct_pipe_group_segments): the first closes at one batch of
 * segments, so the device starts, and the first file's results arrive, as
 * soon as one batch is prepared; then two batches, then four. With one
 * segment per file and batch size 1 the groups are [a], [b c], [d]: each
 * group's engine calls (B), then its files (A). Under a fixed four-batch
 * rule all four files would form one group (BBBBAAAA). */
static void test_groups_ramp_up(void **state) {
    (void)state;
    assert_int_equal(ct_pipe_group_segments(24, 0), 24);
    assert_int_equal(ct_pipe_group_segments(24, 1), 48);
    assert_int_equal(ct_pipe_group_segments(24, 2), 96);
    assert_int_equal(ct_pipe_group_segments(24, 9), 96);
    assert_int_equal(ct_pipe_group_segments(0, 0), 1);
    ct_transcriber_options o = one_call_per_segment();
    o.vad = CT_VAD_MODE_NONE;
    o.max_dur = 30;
    ct_transcriber *t;
    CT_ASSERT_OK(ct_transcriber_create(&o, &t));
    event_seq e = {0};
    ct_transcriber_set_progress(t, on_event, &e);
    const char *paths[] = {CT_FIXTURE("audio/c1_en_us_3s.wav"), CT_FIXTURE("audio/c2_de_noise_6s.wav"),
                           CT_FIXTURE("audio/c3_fr_ar_10s.wav"), CT_FIXTURE("audio/c0_tones_1s.wav")};
    ct_run *run = NULL;
    CT_ASSERT_OK(ct_transcriber_run(t, paths, 4, &run));
    ct_run_stats st;
    ct_run_get_stats(run, &st);
    assert_int_equal(st.files_completed, 4);
    assert_string_equal(e.seq, "BABBAABA");
    ct_run_free(run);
    ct_transcriber_free(t);
}

typedef struct {
    const char *asr_paths[8]; /* files whose ASR was reported, in report order */
    int n_asr, batches_before_first; /* engine calls before the first file was reported */
} order_log;

static void on_order(const ct_progress *p, void *user) {
    order_log *l = user;
    if (p->stage == CT_PROGRESS_BATCH && !l->n_asr) l->batches_before_first++;
    if (p->stage == CT_PROGRESS_ASR && p->current == p->total && l->n_asr < 8) l->asr_paths[l->n_asr++] = p->path;
}

/* file_order ready (the default on cuda) on the CPU: the model takes files
 * as the pool prepares them, so short files go through ASR while the first
 * (34 s, several Silero segments, two workers) is still being prepared;
 * files are still finished and reported in input order, with the texts of
 * an input-order run (batch size 1: every segment decodes alone, so the
 * order cannot change a row). Retried until a run shows files decoded
 * before the first was reported (a loaded machine may prepare in order). */
static void test_ready_order_publishes_in_input_order(void **state) {
    (void)state;
    const char *paths[] = {CT_FIXTURE("audio/c5_es_en_34s.wav"), CT_FIXTURE("audio/c0_tones_1s.wav"),
                           CT_FIXTURE("audio/c1_en_us_3s.wav"), CT_FIXTURE("audio/c2_de_noise_6s.wav"),
                           CT_FIXTURE("audio/c3_fr_ar_10s.wav")};
    enum { N = 5 };
    ct_transcriber_options o = one_call_per_segment();
    o.preprocess_workers = 2;
    o.file_order = CT_FILE_ORDER_INPUT;
    ct_transcriber *t;
    CT_ASSERT_OK(ct_transcriber_create(&o, &t));
    ct_run *ref = NULL;
    CT_ASSERT_OK(ct_transcriber_run(t, paths, N, &ref));
    ct_transcriber_free(t);
    int segs0 = (int)ct_file_segment_count(ct_run_file(ref, 0));
    assert_true(segs0 >= 2);
    int passed = 0;
    for (int attempt = 0; attempt < 5 && !passed; attempt++) {
        o.file_order = CT_FILE_ORDER_READY;
        CT_ASSERT_OK(ct_transcriber_create(&o, &t));
        order_log l = {0};
        ct_transcriber_set_progress(t, on_order, &l);
        ct_run *run = NULL;
        CT_ASSERT_OK(ct_transcriber_run(t, paths, N, &run));
        assert_int_equal(l.n_asr, N);
        for (int i = 0; i < N; i++) assert_string_equal(l.asr_paths[i], paths[i]);
        for (size_t i = 0; i < N; i++) {
            const ct_file_result *a = ct_run_file(run, i), *b = ct_run_file(ref, i);
            assert_int_equal(ct_file_get_status(a), CT_FILE_COMPLETED);
            assert_int_equal(ct_file_segment_count(a), ct_file_segment_count(b));
            for (size_t k = 0; k < ct_file_segment_count(a); k++)
                assert_string_equal(ct_file_segment(a, k).text, ct_file_segment(b, k).text);
        }
        passed = l.batches_before_first > segs0;
        ct_run_free(run);
        ct_transcriber_free(t);
    }
    ct_run_free(ref);
    if (!passed) fail_msg("no run decoded a later file before the first was reported");
}

/* The engine's arenas are sized for the batch it is given: bf16 weights (the
 * CPU widens them per 64-row tile in the workspace) at 10 rows ran out of
 * workspace in the decoder's first step (an undercount of its activations)
 * and every such batch was split as if memory were short. */
static void test_bf16_batches_fit_their_arenas(void **state) {
    (void)state;
    ct_transcriber_options o = base_options();
    o.publish = 0;
    o.dtype = CT_PRECISION_BF16;
    o.vad = CT_VAD_MODE_NONE;
    o.max_dur = 8;
    o.batch_size = 10;
    ct_transcriber *t;
    CT_ASSERT_OK(ct_transcriber_create(&o, &t));
    const char *paths[] = {CT_FIXTURE("audio/c4_en_gb_30s.wav"), CT_FIXTURE("audio/c5_es_en_34s.wav"),
                           CT_FIXTURE("audio/c3_fr_ar_10s.wav")};
    ct_run *run = NULL;
    CT_ASSERT_OK(ct_transcriber_run(t, paths, 3, &run));
    ct_run_stats st;
    ct_run_get_stats(run, &st);
    assert_int_equal(st.files_completed, 3);
    assert_true(st.batches >= 1);
    assert_int_equal(st.oom_retries, 0);
    ct_run_free(run);
    ct_transcriber_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_checks),
        cmocka_unit_test(test_results_equal_golden),
        cmocka_unit_test(test_auto_dtype_follows_the_cpu),
        cmocka_unit_test(test_lazy_model_and_input_errors),
        cmocka_unit_test(test_cancel_rolls_back),
        cmocka_unit_test(test_bf16_batches_fit_their_arenas),
        cmocka_unit_test(test_groups_ramp_up),
        cmocka_unit_test(test_ready_order_publishes_in_input_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
