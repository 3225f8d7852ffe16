/* test_prep.c — the preparation pool (src/prep) against a sequential loop of
 * ct_audio_decode + ct_vad_segment written out here: items arrive in input
 * order although workers finish out of order (a 70 s file first, short ones
 * after), bad files are errors in place with the sequential message, the
 * samples, probabilities, spans and segments are bit-identical, the decoded
 * PCM the pool holds stays under the cap (a tiny cap serialises, files whose
 * header understates their length are decoded again under the full cap),
 * cancellation and an early stop end the run, and the options follow the
 * product's rules. Audio: tests/fixtures and $CT_TESTDATA (tests/setup).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sndfile.h>

#include "audio/resample.h"
#include "core/fs.h"
#include "prep/prep.h"
#include "testutil.h"
#include "vad/silero.h"

/* ---- the file list: long first, short after, bad ones in between --------- */

static const struct {
    const char *env, *rel;
} k_files[] = {
    {"CT_FIXTURES", "vad/speech_pauses.flac"}, /* 70 s: finishes after the short ones */
    {"CT_FIXTURES", "audio/c0_tones_1s.wav"},
    {"CT_FIXTURES", "audio/c1_en_us_3s.wav"},
    {"CT_TESTDATA", "audio/speech.mp3"},
    {"CT_TESTDATA", "audio/bad/trunc_mid.flac"}, /* corrupt, in the middle */
    {"CT_FIXTURES", "audio/c5_es_en_34s.wav"},
    {"CT_TESTDATA", "audio/no_such_file.wav"}, /* missing */
    {"CT_FIXTURES", "audio/c2_de_noise_6s.wav"},
    {"CT_TESTDATA", "audio/speech_opus.ogg"},
    {"CT_TESTDATA", "audio/lying_short.flac"}, /* STREAMINFO says 1 s, holds ~8 s */
    {"CT_TESTDATA", "audio/bad/random.mp3"},
    {"CT_TESTDATA", "audio/concat_lying.mp3"}, /* Xing says 1 s, ~9 s follow (FFmpeg guesses 9.47 s) */
    {"CT_TESTDATA", "audio/lying_short.flac"}, /* again: two re-decodes may overlap */
    {"CT_FIXTURES", "audio/c3_fr_ar_10s.wav"},
    {"CT_TESTDATA", "audio/speech.m4a"},
    {"CT_FIXTURES", "audio/c4_en_gb_30s.wav"},
};
#define NFILES (sizeof k_files / sizeof k_files[0])

static char *g_paths[NFILES];
static ct_silero *g_silero;

static int setup(void **state) {
    (void)state;
    for (size_t i = 0; i < NFILES; i++) g_paths[i] = strdup(ct_test_path(k_files[i].env, k_files[i].rel));
    return ct_silero_load(CT_TESTDATA("silero/silero_vad.onnx"), &g_silero) == CT_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    for (size_t i = 0; i < NFILES; i++) free(g_paths[i]);
    ct_silero_free(g_silero);
    return 0;
}

/* ---- the sequential reference -------------------------------------------- */

typedef struct {
    ct_status status;
    char error[1024];
    ct_audio *audio;
    ct_vad_result vad;
} seq_result;

static void sequential(const char *path, const ct_prep_options *o, seq_result *r) {
    memset(r, 0, sizeof *r);
    ct_audio_options ao = ct_audio_default_options();
    ao.memory_cap_bytes = o->memory_cap_bytes;
    ao.backend = o->backend;
    ao.resampler = o->resampler; /* no task pool: every block in this thread */
    r->status = ct_audio_decode(path, &ao, &r->audio);
    if (r->status == CT_OK) {
        r->status = ct_vad_segment(r->audio->samples, r->audio->n, &o->vad, g_silero, &r->vad);
        if (r->status != CT_OK) ct_fail_wrap(r->status, "%s: segmentation", path);
    }
    if (r->status != CT_OK) snprintf(r->error, sizeof r->error, "%s", ct_last_error());
}

static void seq_free(seq_result *r) {
    ct_audio_free(r->audio);
    ct_vad_result_free(&r->vad);
}

static void assert_spans_equal(const ct_span *a, size_t na, const ct_span *b, size_t nb) {
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        /* exact: the same computation on the same samples */
        if (a[i].start != b[i].start || a[i].end != b[i].end)
            fail_msg("span %zu: [%.17g, %.17g) vs [%.17g, %.17g)", i, a[i].start, a[i].end, b[i].start, b[i].end);
    }
}

/* The item equals the sequential decode + segment bit for bit (or carries
 * the same error). Returns 1 if the file decoded. */
static int assert_item_matches(const ct_prep_item *it, const ct_prep_options *o) {
    seq_result r;
    sequential(it->path, o, &r);
    if (it->status != r.status)
        fail_msg("%s: pool status %s (%s), sequential %s (%s)", it->path, ct_status_str(it->status), it->error,
                 ct_status_str(r.status), r.error);
    int ok = r.status == CT_OK;
    if (ok) {
        assert_string_equal(it->error, "");
        assert_non_null(it->audio);
        assert_int_equal(it->audio->n, r.audio->n);
        assert_true(it->audio->n > 0);
        assert_memory_equal(it->audio->samples, r.audio->samples, r.audio->n * sizeof(float));
        assert_true(it->vad.duration == r.vad.duration);
        assert_int_equal(it->vad.n_probs, r.vad.n_probs);
        if (r.vad.n_probs) assert_memory_equal(it->vad.probs, r.vad.probs, r.vad.n_probs * sizeof(float));
        assert_spans_equal(it->vad.spans, it->vad.n_spans, r.vad.spans, r.vad.n_spans);
        assert_spans_equal(it->vad.segments, it->vad.n_segments, r.vad.segments, r.vad.n_segments);
    } else {
        assert_null(it->audio);
        assert_string_equal(it->error, r.error);
        assert_non_null(strstr(it->error, it->path)); /* the message names the file */
    }
    seq_free(&r);
    return ok;
}

/* Run the pool over paths; check order, equality; return the stats. */
static void run_and_check(const char *const *paths, size_t n, const ct_prep_options *o, ct_prep_stats *st,
                          int *out_of_order, size_t *n_ok, useconds_t consumer_delay) {
    ct_prep *p = NULL;
    CT_ASSERT_OK(ct_prep_create(paths, n, o, &p));
    size_t got = 0, ok = 0;
    size_t ranks[64];
    int returned[64] = {0};
    assert_true(n <= 64);
    *out_of_order = 0;
    for (;;) {
        ct_prep_item *it = NULL;
        CT_ASSERT_OK(ct_prep_next(p, &it));
        if (!it) break;
        if (!o->any_order) assert_int_equal(it->index, got); /* input order */
        assert_true(it->index < n);
        if (returned[it->index]++) fail_msg("file %zu returned twice", it->index);
        for (size_t j = 0; j < it->index; j++) /* any_order: a file passed a lower one */
            if (!returned[j]) *out_of_order = 1;
        assert_string_equal(it->path, paths[it->index]);
        ranks[it->index] = it->finish_rank;
        ok += (size_t)assert_item_matches(it, o);
        ct_prep_item_free(it);
        got++;
        if (consumer_delay) usleep(consumer_delay);
    }
    assert_int_equal(got, n);
    ct_prep_item *again = (ct_prep_item *)1;
    CT_ASSERT_OK(ct_prep_next(p, &again)); /* stays at the end */
    assert_null(again);
    ct_prep_get_stats(p, st);
    assert_int_equal(st->held_bytes, 0); /* everything handed over */
    ct_prep_free(p);
    if (!o->any_order) /* workers finished out of order (items still came in order) */
        for (size_t i = 1; i < n; i++)
            if (ranks[i] < ranks[i - 1]) *out_of_order = 1;
    if (n_ok) *n_ok = ok;
}

static ct_prep_options silero_options(int workers) {
    ct_prep_options o = ct_prep_default_options();
    o.workers = workers;
    o.silero = g_silero;
    return o;
}

/* ---- tests ------------------------------------------------------------------ */

/* Two workers: the 70 s file is still running while the other worker
 * finishes short files, yet items come back 0, 1, 2, ... and equal the
 * sequential loop. Retried a few times until an out-of-order finish is
 * seen (a loaded machine may run the workers one after the other). */
static void test_order_and_sequential_equality(void **state) {
    (void)state;
    ct_prep_options o = silero_options(2);
    int seen = 0;
    for (int attempt = 0; attempt < 4 && !seen; attempt++) {
        ct_prep_stats st;
        size_t ok;
        run_and_check((const char *const *)g_paths, NFILES, &o, &st, &seen, &ok, 0);
        assert_int_equal(ok, NFILES - 3); /* trunc_mid.flac, missing, random.mp3 */
        assert_int_equal(st.workers, 2);
        assert_int_equal(st.lookahead, 6);
        assert_true(st.peak_files <= 6);
        assert_true(st.peak_held_bytes <= o.memory_cap_bytes);
        assert_true(st.peak_held_bytes > 0);
    }
    if (!seen) fail_msg("workers never finished out of order in 4 runs");
}

/* any_order: the short files behind the 70 s one come back before it
 * (retried until seen, as above), every file exactly once and equal to the
 * sequential loop; also under a cap that forces re-decodes of the files
 * whose headers understate their length (each file still returned once).
 * Not forced here: the rewind after such a re-decode skipping a later file
 * the consumer already took; that needs the consumer to win a race with
 * the rewinding worker (prep.c, `skip`), which these runs rarely do. */
static void test_any_order(void **state) {
    (void)state;
    ct_prep_options o = silero_options(2);
    o.any_order = 1;
    int passed = 0;
    for (int attempt = 0; attempt < 4 && !passed; attempt++) {
        ct_prep_stats st;
        size_t ok;
        run_and_check((const char *const *)g_paths, NFILES, &o, &st, &passed, &ok, 0);
        assert_int_equal(ok, NFILES - 3);
        assert_true(st.peak_files <= 6);
    }
    if (!passed) fail_msg("no file came back before a lower-numbered one in 4 runs");
    o.lookahead = 8;
    o.memory_cap_bytes = 4700000;
    for (int attempt = 0; attempt < 2; attempt++) {
        ct_prep_stats st;
        size_t ok;
        int ooo;
        run_and_check((const char *const *)g_paths, NFILES, &o, &st, &ooo, &ok, attempt ? 20000 : 0);
        assert_int_equal(ok, NFILES - 3);
        assert_true(st.peak_held_bytes <= o.memory_cap_bytes);
        assert_true(st.redecodes >= 2);
    }
}

/* The other modes and one worker; --vad-threads 1 with three workers. */
static void test_modes_and_vad_threads(void **state) {
    (void)state;
    int ooo;
    ct_prep_stats st;
    ct_prep_options o = silero_options(1);
    run_and_check((const char *const *)g_paths, NFILES, &o, &st, &ooo, NULL, 0);
    assert_false(ooo); /* one worker finishes in order */
    o = silero_options(3);
    o.vad_threads = 1;
    run_and_check((const char *const *)g_paths, NFILES, &o, &st, &ooo, NULL, 0);
    o = ct_prep_default_options();
    o.workers = 2;
    o.vad.mode = CT_VAD_AUDITOK;
    run_and_check((const char *const *)g_paths, NFILES, &o, &st, &ooo, NULL, 0);
    o.vad.mode = CT_VAD_NONE;
    o.lookahead = 1; /* the smallest look-ahead still completes */
    run_and_check((const char *const *)g_paths, NFILES, &o, &st, &ooo, NULL, 0);
    assert_int_equal(st.peak_files, 1);
}

/* One long file split over helpers (docs/PREP.md "Splitting a file"): a
 * 280 s recording at 22.05 kHz stereo goes through the libsndfile backend,
 * whose FIR blocks (2.048 s) and Silero gate blocks (16.384 s) run on three
 * split helpers, and comes out bit-identical to the sequential decode +
 * segment: samples, probabilities, spans, segments. The speech crosses both
 * kinds of block boundary (checked below, so that the test means it). */
static void test_split_long_file(void **state) {
    (void)state;
    ct_audio *a = NULL;
    ct_audio_options ao = ct_audio_default_options();
    CT_ASSERT_OK(ct_audio_decode(ct_test_path("CT_FIXTURES", "vad/speech_pauses.flac"), &ao, &a));
    /* four copies, the 2nd to 4th shifted by 0.3 s of silence each */
    size_t gap = 4800, n16 = 4 * a->n + 3 * gap;
    float *x = calloc(n16, sizeof(float));
    for (int k = 0; k < 4; k++) memcpy(x + (size_t)k * (a->n + gap), a->samples, a->n * sizeof(float));
    ct_audio_free(a);
    ct_resampler *up;
    CT_ASSERT_OK(ct_resampler_new(16000, 22050, &up));
    int64_t n22 = ct_resampler_out_len(up, (int64_t)n16);
    size_t pad = (size_t)up->taps + 2;
    float *xp = calloc(n16 + 2 * pad, sizeof(float)), *y = malloc((size_t)n22 * sizeof(float));
    memcpy(xp + pad, x, n16 * sizeof(float));
    ct_resampler_run(up, xp, -(int64_t)pad, n16 + 2 * pad, 0, n22, y);
    ct_resampler_free(up);
    free(xp);
    free(x);
    float *st = malloc((size_t)n22 * 2 * sizeof(float));
    for (int64_t i = 0; i < n22; i++) st[2 * i] = y[i], st[2 * i + 1] = 0.5f * y[i];
    free(y);
    char path[4096];
    snprintf(path, sizeof path, "%s", ct_test_join(ct_test_tmpdir(), "long_22k_stereo.wav"));
    SF_INFO si = {.samplerate = 22050, .channels = 2, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &si);
    assert_non_null(sf);
    assert_int_equal(sf_writef_float(sf, st, n22), n22);
    sf_close(sf);
    free(st);

    const char *paths[3] = {path, g_paths[1], path};
    ct_prep_options o = silero_options(2);
    o.backend = CT_AUDIO_BACKEND_SNDFILE;
    o.split_threads = 3;
    int ooo;
    ct_prep_stats pst;
    size_t ok;
    run_and_check(paths, 3, &o, &pst, &ooo, &ok, 0);
    assert_int_equal(ok, 3);
    assert_int_equal(pst.split_threads, 3);
    /* with helpers every file's VAD followed its decode (the stream), and
     * the results above are still the sequential path's, bit for bit */
    assert_int_equal(pst.vad_streamed, 3);

    /* the file is what the test claims: resampled, long, speech across
     * block boundaries */
    seq_result r;
    sequential(path, &o, &r);
    assert_int_equal(r.status, CT_OK);
    assert_int_equal(r.audio->source_sample_rate, 22050);
    assert_true(r.audio->duration > 275);
    assert_true(r.vad.n_spans >= 8);
    int cross_fir = 0, cross_vad = 0;
    for (size_t i = 0; i < r.vad.n_spans; i++) {
        double s0 = r.vad.spans[i].start, s1 = r.vad.spans[i].end;
        if (floor(s1 * 16000 / 32768) > floor(s0 * 16000 / 32768)) cross_fir++;
        if (floor(s1 * 16000 / (512.0 * 512)) > floor(s0 * 16000 / (512.0 * 512))) cross_vad++;
    }
    if (cross_fir < 4 || cross_vad < 2)
        fail_msg("speech crosses %d resampler and %d Silero block boundaries", cross_fir, cross_vad);
    seq_free(&r);
}


/* A cap just above the largest file (70.37 s = 4.50 MB): files cannot all be
 * held at once, a slow consumer lets the pool fill up, and the bytes held
 * never exceed the cap. lying_short.flac (twice in the list), whose
 * STREAMINFO claims 1 s, is decoded again under the whole cap (concat_lying.mp3's length FFmpeg
 * estimates from the bitrate, correctly). A cap below the largest file makes
 * that file a CT_ERR_LIMIT error in place. */
static void test_memory_cap(void **state) {
    (void)state;
    int ooo;
    ct_prep_stats st;
    ct_prep_options o = silero_options(2);
    o.lookahead = 8;
    /* unbounded (4 GiB) first: how much the pool holds when memory is no limit */
    run_and_check((const char *const *)g_paths, NFILES, &o, &st, &ooo, NULL, 20000);
    uint64_t free_peak = st.peak_held_bytes;
    o.memory_cap_bytes = 4700000;
    assert_true(free_peak > o.memory_cap_bytes); /* else the cap below would bind nothing */
    size_t ok;
    run_and_check((const char *const *)g_paths, NFILES, &o, &st, &ooo, &ok, 20000);
    assert_int_equal(ok, NFILES - 3);
    assert_true(st.peak_held_bytes <= o.memory_cap_bytes);
    assert_true(st.peak_held_bytes >= 70 * 16000 * 4); /* the 70 s file was held */
    assert_true(st.redecodes >= 2);                    /* lying_short.flac twice */

    o.memory_cap_bytes = 3000000; /* 46.9 s: the 70 s file is over it */
    run_and_check((const char *const *)g_paths, NFILES, &o, &st, &ooo, &ok, 0);
    assert_int_equal(ok, NFILES - 4);
    assert_true(st.peak_held_bytes <= o.memory_cap_bytes);
    ct_prep *p = NULL;
    CT_ASSERT_OK(ct_prep_create((const char *const *)g_paths, 1, &o, &p));
    ct_prep_item *it = NULL;
    CT_ASSERT_OK(ct_prep_next(p, &it));
    assert_non_null(it);
    assert_int_equal(it->status, CT_ERR_LIMIT);
    assert_non_null(strstr(it->error, "--audio-memory-gb"));
    ct_prep_item_free(it);
    ct_prep_free(p);

    /* a cap of one byte-ish: every file is over it, the pool still ends */
    o.memory_cap_bytes = 64;
    run_and_check((const char *const *)g_paths, NFILES, &o, &st, &ooo, &ok, 0);
    assert_int_equal(ok, 0);
    assert_true(st.peak_held_bytes <= 64);
}

/* Many files; the consumer takes two and cancels (from another thread):
 * ct_prep_next reports CT_ERR_ABORTED, free joins promptly. Then a consumer
 * that just stops after one file. Leaks: run under ASan / Valgrind. */
typedef struct {
    ct_prep *p;
} cancel_arg;

static void *cancel_thread(void *arg) {
    ct_prep_cancel(((cancel_arg *)arg)->p);
    return NULL;
}

static void test_cancel_and_early_stop(void **state) {
    (void)state;
    enum { N = 40 };
    const char *paths[N];
    /* 34 s and 70 s files; CT_TEST_LIGHT (Valgrind): 1 s and 3 s files */
    int light = getenv("CT_TEST_LIGHT") != NULL;
    for (int i = 0; i < N; i++) paths[i] = g_paths[light ? 1 + i % 2 : (i % 2 ? 5 : 0)];
    ct_prep_options o = silero_options(2);
    ct_prep *p = NULL;
    CT_ASSERT_OK(ct_prep_create(paths, N, &o, &p));
    for (int i = 0; i < 2; i++) {
        ct_prep_item *it = NULL;
        CT_ASSERT_OK(ct_prep_next(p, &it));
        assert_non_null(it);
        assert_int_equal(it->status, CT_OK);
        ct_prep_item_free(it);
    }
    pthread_t t;
    cancel_arg a = {p};
    assert_int_equal(pthread_create(&t, NULL, cancel_thread, &a), 0);
    pthread_join(t, NULL);
    ct_prep_item *it = (ct_prep_item *)1;
    CT_ASSERT_STATUS(ct_prep_next(p, &it), CT_ERR_ABORTED);
    assert_null(it);
    /* liveness, not speed: workers finish at most the file they are on
     * (CT_TEST_TIME_SCALE stretches the bound under Valgrind) */
    const char *scale = getenv("CT_TEST_TIME_SCALE");
    double bound = 10.0 * (scale && atof(scale) > 1 ? atof(scale) : 1.0);
    double t0 = ct_now();
    ct_prep_free(p);
    assert_true(ct_now() - t0 < bound);

    /* early stop without cancel: ct_prep_free cancels the 39 files left */
    CT_ASSERT_OK(ct_prep_create(paths, N, &o, &p));
    CT_ASSERT_OK(ct_prep_next(p, &it));
    assert_non_null(it);
    ct_prep_item_free(it);
    t0 = ct_now();
    ct_prep_free(p);
    assert_true(ct_now() - t0 < bound);

    /* stop before anything is consumed, and cancel twice: still aborted */
    CT_ASSERT_OK(ct_prep_create(paths, N, &o, &p));
    ct_prep_cancel(p);
    ct_prep_cancel(p);
    it = (ct_prep_item *)1;
    CT_ASSERT_STATUS(ct_prep_next(p, &it), CT_ERR_ABORTED);
    assert_null(it);
    ct_prep_free(p);
    ct_prep_free(NULL);
}

static void test_options(void **state) {
    (void)state;
    assert_int_equal(ct_prep_auto_workers(1), 1);
    assert_int_equal(ct_prep_auto_workers(2), 1);
    assert_int_equal(ct_prep_auto_workers(4), 3);
    assert_int_equal(ct_prep_auto_workers(64), 8);
    ct_prep_options o = ct_prep_default_options();
    assert_int_equal(o.vad_batch_size, 16);
    assert_int_equal(o.vad_block_frames, 512);
    assert_int_equal(o.memory_cap_bytes, (uint64_t)4 << 30);
    CT_ASSERT_OK(ct_prep_check_options(&o));
    o.vad_batch_size = 0;
    CT_ASSERT_STATUS(ct_prep_check_options(&o), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("--vad-batch-size and --vad-block-frames must be positive");
    o.vad_batch_size = 64;
    o.vad_block_frames = 1024;
    CT_ASSERT_STATUS(ct_prep_check_options(&o), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("must not exceed 32768 frames");
    o = ct_prep_default_options();
    o.memory_cap_bytes = 0;
    CT_ASSERT_STATUS(ct_prep_check_options(&o), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("--audio-memory-gb");
    o = ct_prep_default_options();
    o.vad.mode = CT_VAD_AUDITOK;
    o.vad_threads = 2;
    CT_ASSERT_STATUS(ct_prep_check_options(&o), CT_ERR_INVALID_ARG);
    o = ct_prep_default_options();
    o.vad.max_dur = 40;
    CT_ASSERT_STATUS(ct_prep_check_options(&o), CT_ERR_INVALID_ARG);

    /* Silero without weights; weights from a path (loaded by the pool) */
    ct_prep *p = NULL;
    o = ct_prep_default_options();
    CT_ASSERT_STATUS(ct_prep_create((const char *const *)g_paths, 2, &o, &p), CT_ERR_INVALID_ARG);
    assert_null(p);
    o.silero_path = "/nonexistent/silero_vad.onnx";
    assert_int_not_equal(ct_prep_create((const char *const *)g_paths, 2, &o, &p), CT_OK);
    assert_null(p);
    char wpath[4096];
    snprintf(wpath, sizeof wpath, "%s", CT_TESTDATA("silero/silero_vad.onnx"));
    o.silero_path = wpath;
    o.workers = 2;
    int ooo;
    ct_prep_stats st;
    run_and_check((const char *const *)g_paths, 3, &o, &st, &ooo, NULL, 0);

    /* empty list */
    CT_ASSERT_OK(ct_prep_create(NULL, 0, &o, &p));
    ct_prep_item *it = (ct_prep_item *)1;
    CT_ASSERT_OK(ct_prep_next(p, &it));
    assert_null(it);
    ct_prep_free(p);

    /* the sequential entry point */
    o = silero_options(1);
    CT_ASSERT_OK(ct_prep_file(g_paths[1], 7, &o, g_silero, &it));
    assert_int_equal(it->index, 7);
    assert_int_equal(assert_item_matches(it, &o), 1);
    ct_prep_item_free(it);
    CT_ASSERT_OK(ct_prep_file(g_paths[4], 0, &o, g_silero, &it));
    assert_int_equal(assert_item_matches(it, &o), 0);
    ct_prep_item_free(it);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_sequential_equality),
        cmocka_unit_test(test_any_order),
        cmocka_unit_test(test_modes_and_vad_threads),
        cmocka_unit_test(test_split_long_file),
        cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_cancel_and_early_stop),
        cmocka_unit_test(test_options),
    };
    /* CT_TEST_FILTER=test_cancel* runs a subset (e.g. under Valgrind). */
    const char *filter = getenv("CT_TEST_FILTER");
    if (filter && *filter) cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, setup, teardown);
}
