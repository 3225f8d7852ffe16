/* test_audio.c — the decoder against the audio made by
 * tests/setup/audio_formats.sh: every format correlates with the 16 kHz
 * reference WAV (read here by a separate little parser), channels are
 * averaged, both backends agree, each bad input fails with its own status and
 * cause, the memory cap holds before and during decoding, cancellation and
 * the deadline stop a decode, parallel decodes agree with serial ones, and
 * nothing reaches stderr. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sndfile.h>

#include "audio/audio.h"
#include "core/fs.h"
#include "testutil.h"

/* Let ASan builds return NULL for impossible allocations (as libc does)
 * instead of aborting, so the out-of-memory path can be tested. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

#define REF_N 132344 /* samples in speech_ref.wav; checked when it is read */

/* ---- the reference: a 16-bit mono 16 kHz WAV, parsed independently ----- */

static float *g_ref;
static size_t g_ref_n;

static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static int load_ref(void **state) {
    (void)state;
    char *buf;
    size_t len;
    if (ct_fs_read_all(CT_TESTDATA("audio/speech_ref.wav"), 1 << 24, &buf, &len) != CT_OK) return -1;
    const uint8_t *b = (const uint8_t *)buf;
    size_t pos = 12;
    int ok_fmt = 0;
    while (pos + 8 <= len) {
        uint32_t sz = rd32(b + pos + 4);
        if (!memcmp(b + pos, "fmt ", 4))
            ok_fmt = (b[pos + 8] | b[pos + 9] << 8) == 1 && (b[pos + 10] | b[pos + 11] << 8) == 1 &&
                     rd32(b + pos + 12) == 16000 && (b[pos + 22] | b[pos + 23] << 8) == 16;
        if (!memcmp(b + pos, "data", 4) && ok_fmt) {
            g_ref_n = sz / 2;
            g_ref = malloc(g_ref_n * sizeof(float));
            for (size_t i = 0; i < g_ref_n; i++)
                g_ref[i] = (float)(int16_t)(b[pos + 8 + 2 * i] | b[pos + 9 + 2 * i] << 8) / 32768.0f;
            break;
        }
        pos += 8 + sz + (sz & 1);
    }
    free(buf);
    return g_ref && g_ref_n == REF_N ? 0 : -1;
}

static int free_ref(void **state) {
    (void)state;
    free(g_ref);
    return 0;
}

/* Normalised cross-correlation of x against the reference at the best lag
 * in [-maxlag, maxlag] (x[i + lag] ~ ref[i]). The lag is searched on 2 s from
 * the middle, then the correlation is taken over the whole overlap. */
static double aligned_corr(const float *x, size_t nx, int maxlag, int *lag_out) {
    const float *r = g_ref;
    size_t nr = g_ref_n, w0 = nr / 2 - 16000, w1 = nr / 2 + 16000;
    double best = -2;
    int best_lag = 0;
    for (int lag = -maxlag; lag <= maxlag; lag++) {
        double xy = 0, xx = 0, yy = 0;
        for (size_t i = w0; i < w1; i++) {
            long j = (long)i + lag;
            if (j < 0 || (size_t)j >= nx) continue;
            xy += (double)x[j] * r[i];
            xx += (double)x[j] * x[j];
            yy += (double)r[i] * r[i];
        }
        double c = xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : 0;
        if (c > best) best = c, best_lag = lag;
    }
    double xy = 0, xx = 0, yy = 0;
    for (size_t i = 0; i < nr; i++) {
        long j = (long)i + best_lag;
        if (j < 0 || (size_t)j >= nx) continue;
        xy += (double)x[j] * r[i];
        xx += (double)x[j] * x[j];
        yy += (double)r[i] * r[i];
    }
    *lag_out = best_lag;
    return xy / sqrt(xx * yy);
}

static ct_audio *decode_with(const char *rel, ct_audio_backend b) {
    ct_audio_options o = ct_audio_default_options();
    o.backend = b;
    ct_audio *a = NULL;
    CT_ASSERT_OK(ct_audio_decode(CT_TESTDATA(rel), &o, &a));
    assert_non_null(a);
    assert_int_equal(a->sample_rate, 16000);
    assert_true(fabs(a->duration - (double)a->n / 16000) < 1e-9);
    return a;
}

/* ---- every format ------------------------------------------------------- */

typedef struct fmt_case {
    const char *file;
    int exact;         /* lossless at 16 kHz: samples equal the reference bit for bit */
    long n_tol;        /* |n - REF_N| allowed, samples */
    const char *codec; /* as FFmpeg names it */
    int src_rate, src_ch;
} fmt_case;

/* Duration tolerances: PCM and FLAC are exact; resampling 44.1 kHz gives
 * round(n * 16000 / 44100) within 2 samples; MP3 (LAME gapless tag) and Opus
 * (pre-skip + end trim) are trimmed by FFmpeg to the exact length, allowed one
 * MP3 frame (1152); AAC in MP4 keeps the encoder's padding to the last 1024
 * frame, allowed two AAC frames (2048). */
static const fmt_case k_formats[] = {
    {"audio/speech_s16.wav", 1, 0, "pcm_s16le", 16000, 1},
    {"audio/speech_f32.wav", 1, 0, "pcm_f32le", 16000, 1},
    {"audio/speech_44k_stereo.wav", 0, 2, "pcm_s16le", 44100, 2},
    {"audio/speech.flac", 1, 0, "flac", 16000, 1},
    {"audio/speech.mp3", 0, 1152, "mp3", 16000, 1},
    {"audio/speech_opus.ogg", 0, 1152, "opus", 48000, 1},
    {"audio/speech_vorbis.ogg", 0, 1152, "vorbis", 16000, 1},
    {"audio/speech.m4a", 0, 2048, "aac", 16000, 1},
    {"audio/speech.webm", 0, 1152, "opus", 48000, 1},
};

static void check_against_ref(const ct_audio *a, const fmt_case *c) {
    long dn = (long)a->n - (long)REF_N;
    if (labs(dn) > c->n_tol)
        fail_msg("%s: %zu samples, want %d +- %ld", c->file, a->n, REF_N, c->n_tol);
    if (c->exact) {
        assert_int_equal(a->n, REF_N);
        double d = ct_max_abs_diff(a->samples, g_ref, REF_N);
        if (d != 0) fail_msg("%s: lossless decode differs from the reference by %g", c->file, d);
    }
    int lag;
    double corr = aligned_corr(a->samples, a->n, 2048, &lag);
    print_message("  %-28s %-10s n=%zu (%+ld) lag=%d corr=%.5f\n", c->file,
                  ct_audio_backend_name(a->backend), a->n, dn, lag, corr);
    if (!(corr >= 0.99)) fail_msg("%s: correlation %.5f < 0.99 (lag %d)", c->file, corr, lag);
}

static void test_formats_ffmpeg(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof k_formats / sizeof *k_formats; i++) {
        const fmt_case *c = &k_formats[i];
        ct_audio *a = decode_with(c->file, CT_AUDIO_BACKEND_AUTO);
        assert_int_equal(a->backend, CT_AUDIO_BACKEND_FFMPEG);
        assert_string_equal(a->fallback_reason, "");
        assert_string_equal(a->codec, c->codec);
        assert_int_equal(a->source_sample_rate, c->src_rate);
        assert_int_equal(a->source_channels, c->src_ch);
        check_against_ref(a, c);
        ct_audio_free(a);
    }
}

/* libsndfile's formats: WAV, FLAC, Ogg Vorbis/Opus. Lossless ones must equal
 * FFmpeg's output exactly (no resampling involved); the rest correlate. */
static void test_formats_sndfile(void **state) {
    (void)state;
    static const int idx[] = {0, 1, 2, 3, 5, 6};
    for (size_t k = 0; k < sizeof idx / sizeof *idx; k++) {
        fmt_case c = k_formats[idx[k]];
        ct_audio *a = decode_with(c.file, CT_AUDIO_BACKEND_SNDFILE);
        assert_int_equal(a->backend, CT_AUDIO_BACKEND_SNDFILE);
        assert_int_equal(a->source_channels, c.src_ch);
        /* libsndfile decodes Opus at its 16 kHz input rate, not 48 kHz */
        if (c.src_rate != 48000) assert_int_equal(a->source_sample_rate, c.src_rate);
        check_against_ref(a, &c);
        ct_audio_free(a);
    }
}

/* Constant channels: the mono value is their plain mean (FFmpeg's default
 * 5.1 downmix would give a different number). */
static void test_channel_average(void **state) {
    (void)state;
    static const struct { const char *file; float mean; } cases[] = {
        {"audio/const_51.wav", 0.35f}, {"audio/const_stereo.wav", 0.2f}};
    for (int b = CT_AUDIO_BACKEND_FFMPEG; b <= CT_AUDIO_BACKEND_SNDFILE; b++)
        for (size_t i = 0; i < 2; i++) {
            ct_audio *a = decode_with(cases[i].file, (ct_audio_backend)b);
            assert_int_equal(a->n, 16000);
            for (size_t j = 0; j < a->n; j++)
                if (fabsf(a->samples[j] - cases[i].mean) > 1e-6f)
                    fail_msg("%s (%s): sample %zu = %.7f, want %.7f", cases[i].file,
                             ct_audio_backend_name((ct_audio_backend)b), j, a->samples[j],
                             cases[i].mean);
            ct_audio_free(a);
        }
}

/* 1 s of 44.1 kHz stereo MP3 followed by the 16 kHz mono speech MP3 (no
 * gapless tags): the decoder's output format changes twice mid-stream. The
 * speech part must come out intact after the tone. */
static void test_format_change_mid_stream(void **state) {
    (void)state;
    ct_audio *a = decode_with("audio/concat_rates.mp3", CT_AUDIO_BACKEND_FFMPEG);
    /* tone + speech, plus up to two MP3 frames of untrimmed encoder delay
     * and padding per part */
    long dn = (long)a->n - (16000 + REF_N);
    if (labs(dn) > 4 * 1152) fail_msg("concat_rates.mp3: %zu samples (%+ld)", a->n, dn);
    int lag;
    double corr = aligned_corr(a->samples + 16000, a->n - 16000, 4096, &lag);
    print_message("  concat_rates.mp3 n=%zu (%+ld) speech lag=%d corr=%.5f\n", a->n, dn, lag, corr);
    if (!(corr >= 0.99)) fail_msg("concat_rates.mp3: speech correlation %.5f < 0.99", corr);
    /* the tone: 440 Hz at 16 kHz, amplitude well above silence */
    double e = 0;
    for (size_t i = 2000; i < 14000; i++) e += (double)a->samples[i] * a->samples[i];
    assert_true(e / 12000 > 1e-3);
    ct_audio_free(a);
}

static void expect_fail(const char *path, const ct_audio_options *o, ct_status want,
                        const char *cause);

/* AUTO falls back to libsndfile only when FFmpeg cannot open the file: a
 * MATLAB v5 file (libsndfile writes it here; FFmpeg has no demuxer for it). */
static void test_auto_fallback(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/tone.mat", dir);
    short x[16000];
    for (int i = 0; i < 16000; i++) x[i] = (short)lrint(8000 * sin(i * 0.17));
    SF_INFO si = {.samplerate = 16000, .channels = 1, .format = SF_FORMAT_MAT5 | SF_FORMAT_PCM_16};
    SNDFILE *f = sf_open(path, SFM_WRITE, &si);
    assert_non_null(f);
    assert_int_equal(sf_write_short(f, x, 16000), 16000);
    sf_close(f);

    ct_audio_options o = ct_audio_default_options();
    o.backend = CT_AUDIO_BACKEND_FFMPEG;
    expect_fail(path, &o, CT_ERR_FORMAT, "FFmpeg cannot open it");
    ct_audio *a;
    CT_ASSERT_OK(ct_audio_decode(path, NULL, &a));
    assert_int_equal(a->backend, CT_AUDIO_BACKEND_SNDFILE);
    assert_true(!strncmp(a->fallback_reason, "FFmpeg cannot open it", 21));
    assert_int_equal(a->n, 16000);
    for (int i = 0; i < 16000; i++) assert_true(a->samples[i] == x[i] / 32768.0f);
    ct_audio_free(a);
    ct_test_rmtree(dir);
}

/* Correlation of x[i + lag] with ref[i] over ref[r0, r1), best lag in
 * [lag0, lag1]. */
static double range_corr(const float *x, size_t nx, size_t r0, size_t r1, int lag0, int lag1) {
    double best = -2;
    for (int lag = lag0; lag <= lag1; lag++) {
        double xy = 0, xx = 0, yy = 0;
        for (size_t i = r0; i < r1; i++) {
            long j = (long)i + lag;
            if (j < 0 || (size_t)j >= nx) continue;
            xy += (double)x[j] * g_ref[i];
            xx += (double)x[j] * x[j];
            yy += (double)g_ref[i] * g_ref[i];
        }
        double c = xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : 0;
        if (c > best) best = c;
    }
    return best;
}

/* A damaged AAC packet is skipped (below the 1 % threshold): its 1024
 * samples are dropped, not replaced by silence, so the audio before it
 * matches the reference at lag 0 and the audio after it one frame early. */
static void test_one_damaged_packet(void **state) {
    (void)state;
    ct_audio *clean = decode_with("audio/speech.m4a", CT_AUDIO_BACKEND_FFMPEG);
    ct_audio *a = decode_with("audio/corrupt_one.m4a", CT_AUDIO_BACKEND_FFMPEG);
    long lost = (long)clean->n - (long)a->n;
    if (lost != 1024 && lost != 2048)
        fail_msg("corrupt_one.m4a: %zu samples, the clean file %zu: want 1 or 2 frames fewer",
                 a->n, clean->n);
    double before = range_corr(a->samples, a->n, 0, 60000, 0, 0);
    double after = range_corr(a->samples, a->n, 72000, REF_N - 4000, (int)-lost, (int)-lost);
    print_message("  corrupt_one.m4a n=%zu (-%ld) corr before %.5f, after %.5f\n", a->n, lost,
                  before, after);
    assert_true(before >= 0.99);
    assert_true(after >= 0.99);
    ct_audio_free(a);
    ct_audio_free(clean);
}

/* ---- bad inputs ----------------------------------------------------------- */

typedef struct bad_case {
    const char *file;
    ct_status want;
    const char *cause; /* substring of the message (which also names the file) */
} bad_case;

static const bad_case k_bad[] = {
    {"audio/bad/empty.wav", CT_ERR_FORMAT, "empty"},
    {"audio/bad/empty.mp3", CT_ERR_FORMAT, "empty"},
    {"audio/bad/trunc_header.wav", CT_ERR_FORMAT, "truncated"},
    {"audio/bad/trunc_mid.wav", CT_ERR_FORMAT, "truncated: the WAV header declares 8.271 s"},
    {"audio/bad/trunc_header.flac", CT_ERR_FORMAT, "not a readable audio file"},
    {"audio/bad/trunc_mid.flac", CT_ERR_FORMAT, "truncated (its last packet is cut off): the container declares 8.271 s"},
    {"audio/bad/trunc_mid.mp3", CT_ERR_FORMAT, "truncated or damaged: the container declares 8.352 s"},
    {"audio/bad/trunc_mid.m4a", CT_ERR_FORMAT, "moov atom not found"},
    {"audio/bad/trunc_mid_opus.ogg", CT_ERR_FORMAT, "truncated: the last Ogg page"},
    {"audio/bad/trunc_mid.webm", CT_ERR_FORMAT, "the container declares 8.279 s"},
    {"audio/bad/corrupt_mid.m4a", CT_ERR_FORMAT, "corrupt aac audio: "},
    {"audio/bad/corrupt_mid.mp3", CT_ERR_FORMAT, "corrupt mp3 audio: "},
    {"audio/bad/random.wav", CT_ERR_FORMAT, "not a readable audio file"},
    {"audio/bad/random.mp3", CT_ERR_FORMAT, "not a readable audio file"},
    {"audio/bad/random.flac", CT_ERR_FORMAT, "no audio samples"},
    {"audio/bad/random.ogg", CT_ERR_FORMAT, "not a readable audio file"},
    {"audio/bad/random.m4a", CT_ERR_FORMAT, "not a readable audio file"},
    {"audio/bad/random.opus", CT_ERR_FORMAT, "not a readable audio file"},
    {"audio/bad/text.mp3", CT_ERR_FORMAT, "not a readable audio file"},
    {"audio/bad/lying_hours.wav", CT_ERR_FORMAT, "declares 536870.9 s (149.1 h) of audio but the file holds 1.000 s"},
    {"audio/bad/lying_2h.wav", CT_ERR_FORMAT, "declares 7200.0 s (2.0 h)"},
    {"audio/bad/nan.wav", CT_ERR_FORMAT, "NaN sample (at 0.500 s)"},
    {"audio/bad/inf.wav", CT_ERR_FORMAT, "infinite sample (at 0.500 s)"},
    {"audio/bad/video_only.mp4", CT_ERR_FORMAT, "no audio stream"},
};

static void expect_fail(const char *path, const ct_audio_options *o, ct_status want,
                        const char *cause) {
    ct_audio *a = (ct_audio *)1;
    ct_status s = ct_audio_decode(path, o, &a);
    if (s != want)
        fail_msg("%s: got %s, want %s: %s", path, ct_status_str(s), ct_status_str(want),
                 ct_last_error());
    assert_null(a);
    if (strncmp(ct_last_error(), path, strlen(path)) != 0)
        fail_msg("%s: message does not start with the file: %s", path, ct_last_error());
    if (cause && !strstr(ct_last_error(), cause))
        fail_msg("%s: message lacks '%s': %s", path, cause, ct_last_error());
}

static void test_bad_inputs(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof k_bad / sizeof *k_bad; i++)
        expect_fail(CT_TESTDATA(k_bad[i].file), NULL, k_bad[i].want, k_bad[i].cause);
    expect_fail(CT_TESTDATA("audio/no-such-file.wav"), NULL, CT_ERR_NOT_FOUND, "No such file");
    expect_fail(CT_TESTDATA("audio"), NULL, CT_ERR_IO, "not a regular file (directory)");
}

/* The same corpus through libsndfile alone: a clear error each (its causes
 * are worded differently; the file must still be named). */
static void test_bad_inputs_sndfile(void **state) {
    (void)state;
    ct_audio_options o = ct_audio_default_options();
    o.backend = CT_AUDIO_BACKEND_SNDFILE;
    for (size_t i = 0; i < sizeof k_bad / sizeof *k_bad; i++) {
        const char *f = k_bad[i].file;
        /* real MPEG audio is refused (libmpg123 would print) */
        ct_status want = strstr(f, "_mid.mp3") ? CT_ERR_UNSUPPORTED : CT_ERR_FORMAT;
        /* WAV/Ogg truncation, NaN/Inf and empty are found outside libsndfile */
        const char *cause = strstr(f, "nan") || strstr(f, "inf") || strstr(f, "empty") ||
                                    strstr(f, "lying") || strstr(f, "_opus.ogg")
                                ? k_bad[i].cause
                                : NULL;
        expect_fail(CT_TESTDATA(f), &o, want, cause);
    }
}

static void test_probe(void **state) {
    (void)state;
    ct_audio_info inf;
    CT_ASSERT_OK(ct_audio_probe(CT_TESTDATA("audio/speech.flac"), &inf));
    assert_true(fabs(inf.duration - REF_N / 16000.0) < 1e-6);
    assert_int_equal(inf.duration_estimated, 0);
    assert_int_equal(inf.sample_rate, 16000);
    assert_int_equal(inf.channels, 1);
    assert_string_equal(inf.codec, "flac");
    assert_string_equal(inf.container, "flac");
    assert_int_equal(inf.backend, CT_AUDIO_BACKEND_FFMPEG);
    CT_ASSERT_OK(ct_audio_probe(CT_TESTDATA("audio/speech_44k_stereo.wav"), &inf));
    assert_int_equal(inf.sample_rate, 44100);
    assert_int_equal(inf.channels, 2);
    assert_true(fabs(inf.duration - REF_N / 16000.0) < 1e-4);
    CT_ASSERT_OK(ct_audio_probe(CT_TESTDATA("audio/speech.m4a"), &inf));
    assert_string_equal(inf.codec, "aac");
    assert_true(fabs(inf.duration - 8.272) < 1e-3);
    CT_ASSERT_STATUS(ct_audio_probe(CT_TESTDATA("audio/bad/video_only.mp4"), &inf), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("no audio stream");
    CT_ASSERT_STATUS(ct_audio_probe(CT_TESTDATA("audio/bad/random.wav"), &inf), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("random.wav: not a readable audio file");
    CT_ASSERT_STATUS(ct_audio_probe(CT_TESTDATA("audio/none.wav"), &inf), CT_ERR_NOT_FOUND);
}

/* ---- the memory cap ------------------------------------------------------- */

static void test_memory_cap(void **state) {
    (void)state;
    ct_audio_options o = ct_audio_default_options();
    ct_audio *a = NULL;
    const char *wav = CT_TESTDATA("audio/speech_s16.wav");
    for (int b = CT_AUDIO_BACKEND_FFMPEG; b <= CT_AUDIO_BACKEND_SNDFILE; b++) {
        o.backend = (ct_audio_backend)b;
        /* exactly enough */
        o.memory_cap_bytes = REF_N * sizeof(float);
        CT_ASSERT_OK(ct_audio_decode(wav, &o, &a));
        assert_int_equal(a->n, REF_N);
        ct_audio_free(a);
        /* one sample short: refused up front, from the header's duration */
        o.memory_cap_bytes = REF_N * sizeof(float) - sizeof(float);
        expect_fail(wav, &o, CT_ERR_LIMIT, "the container declares 8.3 s");
        CT_ASSERT_ERROR_HAS("over the audio memory cap of 0.5 MiB");
        o.memory_cap_bytes = 100000;
        expect_fail(wav, &o, CT_ERR_LIMIT, "decoded audio would need 0.5 MiB");
    }
    /* A header that understates the length: STREAMINFO says 1 s, the frames
     * hold 8.3 s. The up-front check passes; the append check stops it. */
    o.backend = CT_AUDIO_BACKEND_FFMPEG;
    o.memory_cap_bytes = 3 * 16000 * sizeof(float);
    expect_fail(CT_TESTDATA("audio/lying_short.flac"), &o, CT_ERR_LIMIT,
                "decoding reached more than");
    /* ...and without the cap it decodes all of it */
    o.memory_cap_bytes = (uint64_t)4 << 30;
    CT_ASSERT_OK(ct_audio_decode(CT_TESTDATA("audio/lying_short.flac"), &o, &a));
    assert_int_equal(a->n, REF_N);
    ct_audio_free(a);
    /* STREAMINFO claiming 2^36-1 samples (49.7 days at 16 kHz): refused up
     * front under the default cap; with an absurd cap the up-front
     * reservation itself fails and reports out-of-memory instead of
     * crashing (only checkable where the kernel refuses a 275 GB request,
     * i.e. not with vm.overcommit_memory = 1). */
    char *buf;
    size_t len;
    CT_ASSERT_OK(ct_fs_read_all(CT_TESTDATA("audio/speech.flac"), 1 << 24, &buf, &len));
    uint64_t w = 0;
    for (int i = 0; i < 8; i++) w = w << 8 | (uint8_t)buf[18 + i];
    w |= ((uint64_t)1 << 36) - 1;
    for (int i = 7; i >= 0; i--, w >>= 8) buf[18 + i] = (char)(w & 0xFF);
    o = ct_audio_default_options();
    CT_ASSERT_STATUS(ct_audio_decode_memory(buf, len, "huge.flac", &o, &a), CT_ERR_LIMIT);
    CT_ASSERT_ERROR_HAS("huge.flac: decoded audio would need 262144.0 MiB (the container declares 4294967.3 s");
    CT_ASSERT_ERROR_HAS("cap of 4096.0 MiB (4 GiB, --audio-memory-gb)");
    char *oc = NULL;
    size_t oclen;
    if (ct_fs_read_all("/proc/sys/vm/overcommit_memory", 16, &oc, &oclen) == CT_OK && oc[0] != '1') {
        o.memory_cap_bytes = (uint64_t)1 << 50;
        CT_ASSERT_STATUS(ct_audio_decode_memory(buf, len, "huge.flac", &o, &a), CT_ERR_OOM);
        CT_ASSERT_ERROR_HAS("huge.flac: out of memory growing the decoded buffer");
    } else {
        print_message("  overcommit_memory=1: the allocation-failure check is skipped\n");
    }
    free(oc);
    free(buf);
    /* Default: 4 GiB. */
    assert_true(ct_audio_default_options().memory_cap_bytes == ((uint64_t)4 << 30));
    o.memory_cap_bytes = 0;
    expect_fail(wav, &o, CT_ERR_INVALID_ARG, "cap must be positive");
}

/* ---- cancellation and deadline ------------------------------------------- */

static int cancel_after(void *user) {
    int *calls = user;
    return ++*calls > 20;
}

static void test_cancel_and_deadline(void **state) {
    (void)state;
    const char *f = CT_TESTDATA("audio/speech.flac");
    for (int b = CT_AUDIO_BACKEND_AUTO; b <= CT_AUDIO_BACKEND_SNDFILE; b++) {
        ct_audio_options o = ct_audio_default_options();
        o.backend = (ct_audio_backend)b;
        atomic_int flag = 1;
        o.cancel_flag = &flag;
        expect_fail(f, &o, CT_ERR_ABORTED, "decoding cancelled");
        atomic_store(&flag, 0);
        ct_audio *a;
        CT_ASSERT_OK(ct_audio_decode(f, &o, &a)); /* flag down: decodes */
        ct_audio_free(a);

        /* a callback that says stop part-way through the stream */
        int calls = 0;
        o.cancel_flag = NULL;
        o.cancel_fn = cancel_after;
        o.cancel_user = &calls;
        expect_fail(f, &o, CT_ERR_ABORTED, "decoding cancelled");
        assert_true(calls > 20);

        o.cancel_fn = NULL;
        o.deadline_seconds = 1e-9;
        expect_fail(f, &o, CT_ERR_ABORTED, "exceeded its deadline of 1e-09 s");
        o.deadline_seconds = 600;
        CT_ASSERT_OK(ct_audio_decode(f, &o, &a));
        ct_audio_free(a);
    }
}

/* ---- from memory, threads, options, logging ------------------------------ */

static void test_decode_memory(void **state) {
    (void)state;
    char *buf;
    size_t len;
    CT_ASSERT_OK(ct_fs_read_all(CT_TESTDATA("audio/speech_vorbis.ogg"), 1 << 24, &buf, &len));
    for (int b = CT_AUDIO_BACKEND_FFMPEG; b <= CT_AUDIO_BACKEND_SNDFILE; b++) {
        ct_audio_options o = ct_audio_default_options();
        o.backend = (ct_audio_backend)b;
        ct_audio *m, *f;
        CT_ASSERT_OK(ct_audio_decode_memory(buf, len, "mem.ogg", &o, &m));
        CT_ASSERT_OK(ct_audio_decode(CT_TESTDATA("audio/speech_vorbis.ogg"), &o, &f));
        assert_int_equal(m->n, f->n);
        assert_memory_equal(m->samples, f->samples, f->n * sizeof(float));
        ct_audio_free(m);
        ct_audio_free(f);
        CT_ASSERT_STATUS(ct_audio_decode_memory(buf, 100, "cut.ogg", &o, &m), CT_ERR_FORMAT);
        CT_ASSERT_ERROR_HAS("cut.ogg: ");
    }
    free(buf);
}

typedef struct job {
    const char *path;
    ct_audio *a;
    ct_status s;
} job;

static void *run_job(void *p) {
    job *j = p;
    j->s = ct_audio_decode(j->path, NULL, &j->a);
    return NULL;
}

static void test_parallel(void **state) {
    (void)state;
    static const char *files[] = {"audio/speech.mp3", "audio/speech.m4a", "audio/speech_opus.ogg",
                                  "audio/speech.flac", "audio/speech_44k_stereo.wav",
                                  "audio/speech.webm"};
    enum { N = 6, ROUNDS = 2 };
    char paths[N][4096];
    job jobs[ROUNDS * N];
    pthread_t th[ROUNDS * N];
    for (int i = 0; i < N; i++) snprintf(paths[i], sizeof paths[i], "%s", CT_TESTDATA(files[i]));
    for (int i = 0; i < ROUNDS * N; i++) {
        jobs[i] = (job){.path = paths[i % N]};
        assert_int_equal(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
    }
    for (int i = 0; i < ROUNDS * N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        ct_audio *serial;
        CT_ASSERT_OK(ct_audio_decode(paths[i], NULL, &serial));
        for (int r = 0; r < ROUNDS; r++) {
            job *j = &jobs[r * N + i];
            if (j->s != CT_OK) fail_msg("%s in a thread: %s", j->path, ct_status_str(j->s));
            assert_int_equal(j->a->n, serial->n);
            assert_memory_equal(j->a->samples, serial->samples, serial->n * sizeof(float));
            ct_audio_free(j->a);
        }
        ct_audio_free(serial);
    }
}

static void test_options(void **state) {
    (void)state;
    ct_audio_backend b;
    CT_ASSERT_OK(ct_audio_backend_parse("torchcodec", &b));
    assert_int_equal(b, CT_AUDIO_BACKEND_FFMPEG);
    CT_ASSERT_OK(ct_audio_backend_parse("librosa", &b));
    assert_int_equal(b, CT_AUDIO_BACKEND_AUTO);
    CT_ASSERT_OK(ct_audio_backend_parse("sndfile", &b));
    assert_int_equal(b, CT_AUDIO_BACKEND_SNDFILE);
    CT_ASSERT_STATUS(ct_audio_backend_parse("gstreamer", &b), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("'gstreamer'");
    assert_string_equal(ct_audio_backend_name(CT_AUDIO_BACKEND_SNDFILE), "libsndfile");
    assert_string_equal(ct_audio_backend_name(CT_AUDIO_BACKEND_FFMPEG), "ffmpeg");
    ct_audio_free(NULL);
    char buf[256];
    assert_non_null(strstr(ct_audio_ffmpeg_describe(buf, sizeof buf), "libavcodec 59."));
    assert_non_null(strstr(ct_audio_sndfile_describe(buf, sizeof buf), "libsndfile-1."));
    assert_non_null(strstr(buf, "libsamplerate-0."));
}

static int g_ffmpeg_lines;
static void count_log(ct_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == CT_LOG_DEBUG && !strncmp(msg, "ffmpeg: ", 8)) g_ffmpeg_lines++;
}

/* FFmpeg's own messages reach our log sink at debug level, and nothing at
 * all is written to stderr (fd 2 is redirected to a file meanwhile). */
static void test_quiet(void **state) {
    (void)state;
    char path[4096];
    const char *dir = ct_test_tmpdir();
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    dup2(fileno(f), 2);
    ct_log_set(count_log, NULL);
    ct_log_set_level(CT_LOG_DEBUG);
    for (size_t i = 0; i < sizeof k_bad / sizeof *k_bad; i++) {
        ct_audio *a;
        ct_audio_decode(CT_TESTDATA(k_bad[i].file), NULL, &a);
    }
    ct_audio *a;
    ct_status s = ct_audio_decode(CT_TESTDATA("audio/concat_lying.mp3"), NULL, &a);
    ct_audio_free(a);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    ct_log_set(NULL, NULL);
    ct_log_set_level(CT_LOG_WARN);
    CT_ASSERT_STATUS(s, CT_OK);
    char *text;
    size_t len;
    CT_ASSERT_OK(ct_fs_read_all(path, 1 << 20, &text, &len));
    if (len) fail_msg("decoding wrote to stderr: %s", text);
    free(text);
    ct_test_rmtree(dir);
    assert_true(g_ffmpeg_lines > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats_ffmpeg),     cmocka_unit_test(test_formats_sndfile),
        cmocka_unit_test(test_channel_average),    cmocka_unit_test(test_format_change_mid_stream),
        cmocka_unit_test(test_one_damaged_packet), cmocka_unit_test(test_auto_fallback),      cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_bad_inputs_sndfile), cmocka_unit_test(test_probe),
        cmocka_unit_test(test_memory_cap),         cmocka_unit_test(test_cancel_and_deadline),
        cmocka_unit_test(test_decode_memory),      cmocka_unit_test(test_parallel),
        cmocka_unit_test(test_options),            cmocka_unit_test(test_quiet),
    };
    return cmocka_run_group_tests(tests, load_ref, free_ref);
}
