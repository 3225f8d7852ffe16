/* test_vad_silero.c — the native Silero network against ONNX Runtime.
 *
 * Reference: tests/fixtures/vad/silero_reference.json, made by
 * tools/reference/make_vad_fixtures.py (silero-vad 6.2.3 + onnxruntime on
 * the committed 70 s recording speech_pauses.flac). The weights are fetched
 * from PyPI by tests/setup/silero.sh into $CT_TESTDATA.
 */
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "core/tasks.h"
#include "fixture_io.h"
#include "testutil.h"
#include "vad/silero.h"
#include "vad/timestamps.h"

static json_t *load_reference(void) { return ct_test_load_json(CT_FIXTURE("vad/silero_reference.json")); }

static ct_silero *load_model(void) {
    ct_silero *s = NULL;
    CT_ASSERT_OK(ct_silero_load(CT_TESTDATA("silero/silero_vad.onnx"), &s));
    return s;
}

/* The file fetched by the setup is the pinned v6.2 release. */
static void test_weights_hash(void **state) {
    (void)state;
    ct_silero *s = load_model();
    assert_string_equal(ct_silero_sha256(s), CT_SILERO_SHA256_V62);
    assert_true(ct_silero_is_v62(s));
    json_t *doc = load_reference();
    assert_string_equal(json_string_value(json_object_get(doc, "model_sha256")), CT_SILERO_SHA256_V62);
    json_decref(doc);
    ct_silero_free(s);
}

/* Frame by frame within 1e-4 of ONNX Runtime over the whole recording. */
static void test_probs_match_onnxruntime(void **state) {
    (void)state;
    ct_silero *s = load_model();
    size_t n;
    float *audio = ct_test_read_audio(CT_FIXTURE("vad/speech_pauses.flac"), &n);
    json_t *doc = load_reference();
    assert_int_equal(json_integer_value(json_object_get(doc, "samples")), n);
    json_t *ref = json_object_get(doc, "probabilities");
    size_t frames = ct_silero_frame_count(n);
    assert_true(n >= 60 * 16000);
    assert_int_equal(json_array_size(ref), frames);
    float *p = malloc(frames * sizeof(float));
    const float *clips[1] = {audio};
    float *outs[1] = {p};
    CT_ASSERT_OK(ct_silero_probs_batch(s, clips, &n, 1, outs));
    double worst = 0;
    size_t worst_at = 0, speech = 0;
    for (size_t i = 0; i < frames; i++) {
        double want = json_real_value(json_array_get(ref, i));
        double d = fabs((double)p[i] - want);
        if (!(d <= worst)) worst = d, worst_at = i;
        if (want >= 0.5) speech++;
    }
    print_message("silero vs onnxruntime: %zu frames (%zu speech), max |diff| %.3g at frame %zu\n", frames,
                  speech, worst, worst_at);
    assert_true(worst <= 1e-4);
    /* The recording must exercise both classes, or the check means little. */
    assert_true(speech > frames / 5 && speech < frames * 4 / 5);
    free(p);
    free(audio);
    json_decref(doc);
    ct_silero_free(s);
}

/* Non-speech at the extremes (full-scale white noise, a loud sine, quiet
 * noise), rebuilt from integers exactly as make_vad_fixtures.py's
 * synthetic() does: within 1e-4 of ONNX Runtime too. */
static void test_synthetic_matches_onnxruntime(void **state) {
    (void)state;
    ct_silero *s = load_model();
    json_t *doc = load_reference();
    json_t *ref = json_object_get(doc, "synthetic_probabilities");
    size_t n = 12 * 16000;
    float *a = malloc(n * sizeof(float));
    int32_t *noise = malloc(64000 * sizeof(int32_t));
    uint32_t x = 2463534242u;
    for (int i = 0; i < 64000; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise[i] = (int32_t)(x & 0xFFFF) - 32768;
        a[i] = (float)(noise[i] / 32768.0);
    }
    for (int t = 0; t < 64000; t++)
        a[64000 + t] = (float)(nearbyint(0.9 * 32767 * sin(2 * M_PI * 440 * t / 16000)) / 32768.0);
    for (int i = 0; i < 64000; i++) a[128000 + i] = (float)(trunc(noise[i] / 256.0) / 32768.0);
    size_t frames = ct_silero_frame_count(n);
    assert_int_equal(json_array_size(ref), frames);
    float *p = malloc(frames * sizeof(float));
    const float *clips[1] = {a};
    CT_ASSERT_OK(ct_silero_probs_batch(s, clips, &n, 1, &p));
    /* These probabilities are all small (non-speech), where the sigmoid
     * squashes differences; so the logits are compared as well. */
    double worst = 0, worst_logit = 0;
    for (size_t i = 0; i < frames; i++) {
        double want = json_real_value(json_array_get(ref, i));
        double d = fabs((double)p[i] - want);
        double dl = fabs(log(p[i] / (1.0 - p[i])) - log(want / (1.0 - want)));
        if (!(d <= worst)) worst = d;
        if (!(dl <= worst_logit)) worst_logit = dl;
    }
    print_message("synthetic vs onnxruntime: %zu frames, max |diff| %.3g, max |logit diff| %.3g\n", frames, worst,
                  worst_logit);
    assert_true(worst <= 1e-4);
    assert_true(worst_logit <= 5e-3); /* measured 4.4e-4; summation order varies by BLAS kernel */
    free(p);
    free(noise);
    free(a);
    json_decref(doc);
    ct_silero_free(s);
}

/* Several files advancing together give each file's own probabilities (as
 * one file alone, and as the direct-loop reference). Lengths chosen to end
 * mid-frame, on a frame boundary, inside the first frame, and empty. */
static void test_batch_equals_single_and_reference(void **state) {
    (void)state;
    ct_silero *s = load_model();
    size_t n;
    float *audio = ct_test_read_audio(CT_FIXTURE("vad/speech_pauses.flac"), &n);
    enum { B = 5 };
    const size_t lens[B] = {48000 + 37, 512 * 150, 300, 0, 16000 * 9};
    const size_t offs[B] = {0, 100000, 5000, 0, 300000};
    const float *clips[B];
    float *batch[B], *single[B], *ref[B];
    for (int b = 0; b < B; b++) {
        clips[b] = audio + offs[b];
        size_t f = ct_silero_frame_count(lens[b]);
        batch[b] = calloc(f + 1, sizeof(float));
        single[b] = calloc(f + 1, sizeof(float));
        ref[b] = calloc(f + 1, sizeof(float));
    }
    omp_set_num_threads(3);
    CT_ASSERT_OK(ct_silero_probs_batch(s, clips, lens, B, batch));
    assert_int_equal(omp_get_max_threads(), 3); /* the caller's setting is restored */
    for (int b = 0; b < B; b++) {
        size_t f = ct_silero_frame_count(lens[b]);
        CT_ASSERT_OK(ct_silero_probs_batch(s, &clips[b], &lens[b], 1, &single[b]));
        CT_ASSERT_OK(ct_silero_probs_ref(s, clips[b], lens[b], ref[b]));
        double d1 = ct_max_abs_diff(batch[b], single[b], f);
        double d2 = ct_max_abs_diff(batch[b], ref[b], f);
        print_message("file %d (%zu frames): batch vs single %.3g, batch vs reference %.3g\n", b, f, d1, d2);
        assert_true(d1 <= 1e-5);
        assert_true(d2 <= 1e-4);
        free(batch[b]);
        free(single[b]);
        free(ref[b]);
    }
    /* A batch larger than a block's rows (one frame per file per block):
     * 600 clips of 2000 samples at different offsets. */
    enum { MANY = 600 };
    const float **mc = malloc(MANY * sizeof *mc);
    size_t *ml = malloc(MANY * sizeof *ml);
    float **mp = malloc(MANY * sizeof *mp);
    for (int b = 0; b < MANY; b++) {
        mc[b] = audio + (size_t)b * 1777;
        ml[b] = 2000 - (size_t)(b % 3);
        mp[b] = malloc(4 * sizeof(float));
    }
    CT_ASSERT_OK(ct_silero_probs_batch(s, mc, ml, MANY, mp));
    for (int b = 0; b < MANY; b += 37) {
        float one[4];
        CT_ASSERT_OK(ct_silero_probs_ref(s, mc[b], ml[b], one));
        assert_true(ct_max_abs_diff(mp[b], one, 4) <= 1e-4);
    }
    for (int b = 0; b < MANY; b++) free(mp[b]);
    free(mp);
    free(ml);
    free(mc);
    /* The doctor's smoke check: 1024 zeros give 2 finite probabilities in
     * [0, 1] (and the same ones as the reference loop). */
    float zeros[1024] = {0}, pz[2] = {-1, -1}, pr[2];
    const float *zc = zeros;
    size_t zn = 1024;
    float *po = pz;
    CT_ASSERT_OK(ct_silero_probs_batch(s, &zc, &zn, 1, &po));
    CT_ASSERT_OK(ct_silero_probs_ref(s, zeros, 1024, pr));
    for (int i = 0; i < 2; i++) assert_true(pz[i] >= 0 && pz[i] <= 1 && fabsf(pz[i] - pr[i]) < 1e-5f);
    /* Segmenting files together gives each file's own result. */
    ct_vad_options o = ct_vad_default_options();
    ct_vad_result res[B], one;
    CT_ASSERT_OK(ct_vad_segment_batch(clips, lens, B, &o, s, res));
    for (int b = 0; b < B; b++) {
        CT_ASSERT_OK(ct_vad_segment(clips[b], lens[b], &o, s, &one));
        assert_int_equal(res[b].n_spans, one.n_spans);
        assert_int_equal(res[b].n_probs, ct_silero_frame_count(lens[b]));
        for (size_t i = 0; i < one.n_spans; i++)
            assert_true(res[b].spans[i].start == one.spans[i].start && res[b].spans[i].end == one.spans[i].end);
        ct_vad_result_free(&one);
        ct_vad_result_free(&res[b]);
    }
    assert_int_equal(ct_silero_frame_count(0), 0);
    assert_int_equal(ct_silero_frame_count(512), 1);
    assert_int_equal(ct_silero_frame_count(513), 2);
    free(audio);
    ct_silero_free(s);
}

/* The stream (ct_silero_stream, the VAD that follows a decoder) gives the
 * probabilities of ct_silero_probs_tasks over the whole file, bit for bit,
 * for any cutting of the samples into feeds: lengths around the 512-frame
 * blocks (262,144 samples) and the 64-sample context, with helpers and
 * without, and a file of more blocks than the stream holds at once (17 >
 * 16, so a feed waits for the recurrence). A stream freed before its end
 * drains the pool; a wrong length at the end is an error. */
static void test_stream_equals_tasks(void **state) {
    (void)state;
    ct_silero *s = load_model();
    size_t na;
    float *audio = ct_test_read_audio(CT_FIXTURE("vad/speech_pauses.flac"), &na);
    const size_t B = 512 * 512;
    const size_t lens[] = {1, 511, 512, 513, B - 1, B, B + 1, B + 64, B + 65, 2 * B + 7777, 17 * B + 12345};
    const size_t cuts[] = {1, 63, 4096, 100003, B, 3 * B};
    ct_tasks *pool = NULL;
    CT_ASSERT_OK(ct_tasks_create(3, &pool));
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        size_t n = lens[li];
        float *x = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) /* the recording, repeated with a sign flip per copy */
            x[i] = audio[i % na] * ((i / na) % 2 ? -0.7f : 1.0f);
        size_t nf = ct_silero_frame_count(n);
        float *want = malloc((nf + 1) * sizeof(float));
        CT_ASSERT_OK(ct_silero_probs_tasks(s, x, n, pool, want));
        for (int withpool = 0; withpool < 2; withpool++) {
            for (size_t ci = 0; ci < sizeof cuts / sizeof *cuts; ci++) {
                if (n > 3 * B && cuts[ci] < 4096) continue; /* the long file: coarse cuts only */
                ct_silero_stream *st = NULL;
                CT_ASSERT_OK(ct_silero_stream_open(s, withpool ? pool : NULL, &st));
                /* cuts of varying size around cuts[ci] */
                for (size_t at = 0, k = 0; at < n; k++) {
                    size_t c = cuts[ci] + (k % 3) * (cuts[ci] / 2 + 1);
                    if (c > n - at) c = n - at;
                    CT_ASSERT_OK(ct_silero_stream_feed(st, x + at, c));
                    at += c;
                }
                float *got = NULL;
                CT_ASSERT_OK(ct_silero_stream_finish(st, n, &got));
                ct_silero_stream_free(st);
                if (nf && memcmp(got, want, nf * sizeof(float)) != 0)
                    fail_msg("n %zu, feeds of ~%zu, pool %d: the stream differs from the whole file", n, cuts[ci],
                             withpool);
                free(got);
            }
        }
        free(want);
        free(x);
    }
    /* freed before the end, with blocks in the pool */
    ct_silero_stream *st = NULL;
    CT_ASSERT_OK(ct_silero_stream_open(s, pool, &st));
    for (int k = 0; k < 5; k++) CT_ASSERT_OK(ct_silero_stream_feed(st, audio, B < na ? B : na));
    ct_silero_stream_free(st);
    /* the end must be the samples fed */
    CT_ASSERT_OK(ct_silero_stream_open(s, pool, &st));
    CT_ASSERT_OK(ct_silero_stream_feed(st, audio, 1000));
    float *p = NULL;
    assert_int_equal(ct_silero_stream_finish(st, 1001, &p), CT_ERR_INTERNAL);
    assert_null(p);
    ct_silero_stream_free(st);
    ct_tasks_free(pool);
    free(audio);
    ct_silero_free(s);
}

/* get_speech_timestamps' spans for every parameter set in the fixture. */
static void test_spans_match_package(void **state) {
    (void)state;
    json_t *doc = load_reference();
    json_t *jp = json_object_get(doc, "probabilities");
    size_t frames = json_array_size(jp);
    size_t n = (size_t)json_integer_value(json_object_get(doc, "samples"));
    ct_silero *s = load_model();
    float *audio = ct_test_read_audio(CT_FIXTURE("vad/speech_pauses.flac"), &n);
    float *probs = malloc(frames * sizeof(float));
    const float *clips[1] = {audio};
    CT_ASSERT_OK(ct_silero_probs_batch(s, clips, &n, 1, &probs));
    json_t *runs = json_object_get(doc, "runs");
    assert_true(json_array_size(runs) >= 3);
    for (size_t r = 0; r < json_array_size(runs); r++) {
        json_t *run = json_array_get(runs, r);
        json_t *pr = json_object_get(run, "params");
        ct_vad_options o = ct_vad_default_options();
        o.threshold = json_number_value(json_object_get(pr, "threshold"));
        o.min_dur = json_number_value(json_object_get(pr, "min_speech_duration_ms")) / 1000.0;
        o.max_dur = json_number_value(json_object_get(pr, "max_speech_duration_s"));
        o.min_silence_ms = json_number_value(json_object_get(pr, "min_silence_duration_ms"));
        o.speech_pad_ms = json_number_value(json_object_get(pr, "speech_pad_ms"));
        json_t *ump = json_object_get(pr, "use_max_poss_sil_at_max_speech");
        o.use_max_poss_sil_at_max_speech = ump ? json_is_true(ump) : 1;
        json_t *want = json_object_get(run, "spans_samples");
        /* With our probabilities and with ONNX Runtime's: both must give the
         * package's spans. */
        for (int src = 0; src < 2; src++) {
            float *pp = probs;
            float *rp = NULL;
            if (src == 1) {
                rp = malloc(frames * sizeof(float));
                for (size_t i = 0; i < frames; i++) rp[i] = (float)json_real_value(json_array_get(jp, i));
                pp = rp;
            }
            ct_sample_span *spans = NULL;
            size_t ns = 0;
            CT_ASSERT_OK(ct_vad_silero_spans(pp, frames, n, &o, &spans, &ns));
            const char *name = json_string_value(json_object_get(run, "name"));
            if (ns != json_array_size(want))
                fail_msg("%s (%s probabilities): %zu spans, package has %zu", name, src ? "onnxruntime" : "native",
                         ns, json_array_size(want));
            for (size_t i = 0; i < ns; i++) {
                json_t *w = json_array_get(want, i);
                long long ws = json_integer_value(json_array_get(w, 0)), we = json_integer_value(json_array_get(w, 1));
                if (spans[i].start != ws || spans[i].end != we)
                    fail_msg("%s span %zu: [%lld, %lld], package [%lld, %lld]", name, i, (long long)spans[i].start,
                             (long long)spans[i].end, ws, we);
            }
            print_message("%s (%s): %zu spans equal\n", name, src ? "onnxruntime" : "native", ns);
            free(spans);
            free(rp);
        }
    }
    free(probs);
    free(audio);
    ct_silero_free(s);
    json_decref(doc);
}

static void test_bad_weights(void **state) {
    (void)state;
    ct_silero *s = (ct_silero *)1;
    CT_ASSERT_STATUS(ct_silero_load("/nonexistent/silero_vad.onnx", &s), CT_ERR_NOT_FOUND);
    assert_null(s);
    /* A truncated copy of the real file fails as malformed, naming the file. */
    char *buf;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(CT_TESTDATA("silero/silero_vad.onnx"), 64 << 20, &buf, &n));
    const char *dir = ct_test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/cut.onnx", dir);
    ct_test_write_file(path, buf, n / 2);
    CT_ASSERT_STATUS(ct_silero_load(path, &s), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("cut.onnx");
    /* A valid protobuf without the network's tensors. */
    const unsigned char empty_graph[] = {0x3a, 0x02, 0x12, 0x00}; /* graph { name: "" } */
    ct_test_write_file(path, empty_graph, sizeof empty_graph);
    CT_ASSERT_STATUS(ct_silero_load(path, &s), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("16 kHz");
    free(buf);
    ct_test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights_hash),
        cmocka_unit_test(test_probs_match_onnxruntime),
        cmocka_unit_test(test_synthetic_matches_onnxruntime),
        cmocka_unit_test(test_batch_equals_single_and_reference),
        cmocka_unit_test(test_stream_equals_tasks),
        cmocka_unit_test(test_spans_match_package),
        cmocka_unit_test(test_bad_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
