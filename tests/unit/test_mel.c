/* test_mel.c — the log-mel frontend and torch's random generator against
 * data made by the reference (transformers 5.17 / torch 2.11):
 *  - mt19937 against the C++ standard's 10000th-value check;
 *  - torch.randn(N) after manual_seed(N), both torch kernels, bit-exact
 *    (tests/fixtures/mel/randn.json);
 *  - window and slaney filterbank (tests/fixtures/mel/frontend.json);
 *  - features of the six fixture clips with and without dither, as one padded
 *    batch and one clip at a time, against reference.safetensors: max |d| <= 1e-4;
 *  - the fast path against the plain reference path, batch invariance, and
 *    the refusals (too long, not finite, T_max too small).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/mel.h"
#include "asr/mel_internal.h"
#include "asr/torch_rng.h"
#include "model/safetensors.h"
#include "fixture_io.h"
#include "testutil.h"

#define NCLIPS 6
static const char *const CLIP_FILES[NCLIPS] = {
    "audio/c0_tones_1s.wav",    "audio/c1_en_us_3s.wav", "audio/c2_de_noise_6s.wav",
    "audio/c3_fr_ar_10s.wav",   "audio/c4_en_gb_30s.wav", "audio/c5_es_en_34s.wav"};

/* ---- helpers ------------------------------------------------------------- */

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t fnv1a64(const float *v, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *p = (const unsigned char *)v; /* little-endian host */
    for (size_t i = 0; i < 4 * n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Tensors of reference.safetensors through the library's reader; data in
 * the mapping may be unaligned, so it is copied out. */
static const ct_st_tensor *st_need(ct_safetensors *st, const char *name, ct_dtype dt) {
    const ct_st_tensor *t = ct_st_find(st, name);
    if (!t) fail_msg("reference.safetensors has no tensor %s", name);
    assert_int_equal(t->dtype, dt);
    return t;
}

static int64_t *st_i64(ct_safetensors *st, const char *name, size_t *n) {
    const ct_st_tensor *t = st_need(st, name, CT_DTYPE_I64);
    int64_t *v = malloc(t->nbytes ? t->nbytes : 1);
    assert_non_null(v);
    memcpy(v, t->data, t->nbytes);
    *n = (size_t)t->numel;
    return v;
}

static float *st_f32(ct_safetensors *st, const char *name, int64_t *rows, int64_t *cols) {
    const ct_st_tensor *t = st_need(st, name, CT_DTYPE_F32);
    assert_int_equal(t->ndim, 2);
    *rows = t->shape[0];
    *cols = t->shape[1];
    float *v = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    assert_non_null(v);
    CT_ASSERT_OK(ct_st_tensor_to_f32(t, v, (size_t)t->numel));
    return v;
}

/* ---- the generator ---------------------------------------------------------- */

static void test_mt19937_standard(void **state) {
    (void)state;
    /* C++ [rand.predef]: the 10000th consecutive invocation of a
     * default-constructed mt19937 (seed 5489) produces 4123659995. */
    ct_mt19937 mt;
    ct_mt19937_seed(&mt, 5489);
    uint32_t v = 0;
    for (int i = 0; i < 10000; i++) v = ct_mt19937_next(&mt);
    assert_int_equal(v, 4123659995u);
    /* manual_seed keeps only the low 32 bits */
    ct_mt19937 a, b;
    ct_mt19937_seed(&a, 7);
    ct_mt19937_seed(&b, 7 + (UINT64_C(1) << 32));
    assert_int_equal(ct_mt19937_next(&a), ct_mt19937_next(&b));
}

static void check_hex_list(const float *v, json_t *list, size_t at, const char *what, size_t n) {
    for (size_t i = 0; i < json_array_size(list); i++) {
        uint32_t want = (uint32_t)strtoul(json_string_value(json_array_get(list, i)), NULL, 16);
        if (bits_of(v[at + i]) != want)
            fail_msg("randn(%zu) %s: element %zu is %08x, torch gives %08x", n, what, at + i,
                     bits_of(v[at + i]), want);
    }
}

static void test_randn_matches_torch(void **state) {
    (void)state;
    json_t *root = ct_test_load_json(CT_FIXTURE("mel/randn.json"));
    const char *kinds[2] = {"torch_avx2", "torch_default"};
    int checked = 0;
    for (int kind = 0; kind < 2; kind++) {
        json_t *cases = json_object_get(json_object_get(root, kinds[kind]), "cases");
        assert_true(json_array_size(cases) >= 10);
        for (size_t c = 0; c < json_array_size(cases); c++) {
            json_t *cs = json_array_get(cases, c);
            size_t n = (size_t)json_integer_value(json_object_get(cs, "n"));
            uint64_t want = strtoull(json_string_value(json_object_get(cs, "fnv1a64")), NULL, 16);
            for (int path = 0; path < 2; path++) {
                if (path == 1 && n > 20000) continue; /* the portable path is slow */
                float *v = malloc(sizeof(float) * n);
                assert_non_null(v);
                if (path == 0)
                    ct_torch_randn(n, n, (ct_randn_kind)kind, v);
                else
                    ct_torch_randn_scalar(n, n, (ct_randn_kind)kind, v);
                json_t *all = json_object_get(cs, "all");
                if (all) {
                    check_hex_list(v, all, 0, "all", n);
                } else {
                    check_hex_list(v, json_object_get(cs, "head"), 0, "head", n);
                    check_hex_list(v, json_object_get(cs, "mid"),
                                   (size_t)json_integer_value(json_object_get(cs, "mid_at")), "mid", n);
                    check_hex_list(v, json_object_get(cs, "tail"), n - 48, "tail", n);
                }
                if (fnv1a64(v, n) != want)
                    fail_msg("randn(%zu) kind %s path %d: hash differs from torch's", n, kinds[kind],
                             path);
                free(v);
                checked++;
            }
        }
    }
    assert_true(checked >= 30);
    json_decref(root);
}

/* ---- window and filterbank -------------------------------------------------------- */

static void test_window_and_filterbank(void **state) {
    (void)state;
    json_t *root = ct_test_load_json(CT_FIXTURE("mel/frontend.json"));
    ct_mel *m;
    CT_ASSERT_OK(ct_mel_create(NULL, &m));
    const float *fb = ct_mel_filterbank(m), *win = ct_mel_window(m);
    int nb = (int)json_integer_value(json_object_get(root, "n_bins"));
    assert_int_equal(nb, 257);
    json_t *rows = json_object_get(root, "filterbank_rows");
    assert_int_equal(json_array_size(rows), 128);
    for (int r = 0; r < 128; r++) {
        json_t *row = json_array_get(rows, (size_t)r);
        int start = (int)json_integer_value(json_object_get(row, "start"));
        json_t *b = json_object_get(row, "bits");
        int len = (int)json_array_size(b);
        for (int k = 0; k < nb; k++) {
            uint32_t want = 0;
            if (k >= start && k < start + len)
                want = (uint32_t)strtoul(json_string_value(json_array_get(b, (size_t)(k - start))), NULL, 16);
            /* +0 and -0 are the same weight; librosa's zeros are +0 */
            uint32_t got = bits_of(fb[r * nb + k]) & (fb[r * nb + k] == 0.0f ? 0u : ~0u);
            if (got != want) fail_msg("filterbank[%d][%d] = %08x, librosa gives %08x", r, k, got, want);
        }
    }
    /* torch evaluates the window's cosine with its vectorised float cos (not
     * always correctly rounded); ours is correctly rounded. One ulp of a
     * cosine in [-1, 1] is at most 2^-24, so w = 0.5 - 0.5 cos may differ by
     * 2^-25 before its final rounding, i.e. by 2^-25 or one ulp of w (10 of
     * the 400 values differ at all). */
    json_t *wb = json_object_get(root, "window_bits");
    assert_int_equal(json_array_size(wb), 400);
    for (int i = 0; i < 512; i++) {
        if (i < 56 || i >= 456) {
            assert_true(win[i] == 0.0f);
            continue;
        }
        uint32_t want = (uint32_t)strtoul(json_string_value(json_array_get(wb, (size_t)(i - 56))), NULL, 16);
        float tw;
        memcpy(&tw, &want, 4);
        double allowed = tw == 0.0f ? 0x1p-25 : fmax(0x1p-25, ldexp(1.0, ilogb(tw) - 23));
        if (fabs((double)win[i] - (double)tw) > allowed)
            fail_msg("window[%d] = %08x, torch gives %08x", i, bits_of(win[i]), want);
    }
    ct_mel_free(m);
    json_decref(root);
}

/* ---- features against the reference ------------------------------------------------ */

typedef struct {
    float *clip[NCLIPS];
    size_t n[NCLIPS];
} clips_t;

static void load_clips(clips_t *c) {
    for (int i = 0; i < NCLIPS; i++) c->clip[i] = ct_test_read_audio(CT_FIXTURE(CLIP_FILES[i]), &c->n[i]);
}

static void free_clips(clips_t *c) {
    for (int i = 0; i < NCLIPS; i++) free(c->clip[i]);
}

/* max |ours - ref| over the L valid frames of one row; rows past L must be 0 */
static double row_diff(const float *ours, int T, const float *ref, int L) {
    double m = ct_max_abs_diff(ours, ref, (size_t)L * 128);
    for (size_t i = (size_t)L * 128; i < (size_t)T * 128; i++)
        if (ours[i] != 0.0f) fail_msg("padded frame value %g at %zu is not 0", ours[i], i);
    return m;
}

/* Issue 2's bound for every valid frame of every clip, dither on and off. */
#define FEATURE_TOL 1e-4

static void test_features_match_reference(void **state) {
    (void)state;
    ct_safetensors *st = NULL;
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("reference.safetensors"), &st));
    clips_t c;
    load_clips(&c);
    size_t cnt;
    int64_t *ns = st_i64(st, "batch.audio_samples", &cnt);
    assert_int_equal(cnt, NCLIPS);
    int64_t *valid = st_i64(st, "batch.feature_frames_valid", &cnt);
    assert_int_equal(cnt, NCLIPS);
    int64_t *fshape = st_i64(st, "batch.features_shape", &cnt);
    assert_int_equal(cnt, 3);
    int T = (int)fshape[1];
    assert_int_equal(fshape[0], NCLIPS);
    assert_int_equal(fshape[2], 128);

    ct_mel *m;
    CT_ASSERT_OK(ct_mel_create(NULL, &m));
    for (int i = 0; i < NCLIPS; i++) {
        assert_int_equal((int64_t)c.n[i], ns[i]);
        assert_int_equal((int64_t)ct_mel_valid_frames(m, c.n[i]), valid[i]);
    }
    assert_int_equal(T, (int)ct_mel_frames(m, c.n[NCLIPS - 1]));

    float *out = malloc(sizeof(float) * NCLIPS * (size_t)T * 128);
    assert_non_null(out);
    int vf[NCLIPS];
    double worst = 0;
    for (int dither = 0; dither < 2; dither++) {
        float *ref[NCLIPS];
        for (int i = 0; i < NCLIPS; i++) {
            char name[64];
            int64_t rows, cols;
            snprintf(name, sizeof name, "features.%s.%d", dither ? "dither" : "nodither", i);
            ref[i] = st_f32(st, name, &rows, &cols);
            assert_int_equal(rows, valid[i]);
            assert_int_equal(cols, 128);
        }
        /* one padded batch */
        CT_ASSERT_OK(ct_mel_compute_batch(m, (const float *const *)c.clip, c.n, NCLIPS, dither, out, T, vf));
        for (int i = 0; i < NCLIPS; i++) {
            assert_int_equal(vf[i], valid[i]);
            double d = row_diff(out + (size_t)i * T * 128, T, ref[i], vf[i]);
            print_message("  dither %d clip %d batch:  max |d| = %.3g\n", dither, i, d);
            if (d > worst) worst = d;
            if (!(d <= FEATURE_TOL))
                fail_msg("dither %d clip %d (batch): max |d| %.3g > %.3g", dither, i, d, FEATURE_TOL);
        }
        /* one clip at a time, each padded only to its own length */
        for (int i = 0; i < NCLIPS; i++) {
            int Ti = (int)ct_mel_frames(m, c.n[i]);
            const float *one = c.clip[i];
            CT_ASSERT_OK(ct_mel_compute_batch(m, &one, &c.n[i], 1, dither, out, Ti, vf));
            double d = row_diff(out, Ti, ref[i], vf[0]);
            print_message("  dither %d clip %d alone:  max |d| = %.3g\n", dither, i, d);
            if (!(d <= FEATURE_TOL))
                fail_msg("dither %d clip %d (alone): max |d| %.3g > %.3g", dither, i, d, FEATURE_TOL);
        }
        for (int i = 0; i < NCLIPS; i++) free(ref[i]);
    }
    print_message("  worst max |d| over all clips: %.3g\n", worst);
    /* the features must actually depend on the dither */
    CT_ASSERT_OK(ct_mel_compute_batch(m, (const float *const *)c.clip, c.n, 1, 0, out, T, vf));
    float *out2 = malloc(sizeof(float) * (size_t)T * 128);
    CT_ASSERT_OK(ct_mel_compute_batch(m, (const float *const *)c.clip, c.n, 1, 1, out2, T, vf));
    assert_true(ct_max_abs_diff(out, out2, (size_t)vf[0] * 128) > 1e-6);
    free(out2);
    free(out);
    free(ns);
    free(valid);
    free(fshape);
    free_clips(&c);
    ct_mel_free(m);
    ct_st_free(st);
}

/* ---- fast path against the plain path; batch invariance ------------------------------ */

static void test_fast_matches_plain(void **state) {
    (void)state;
    clips_t c;
    load_clips(&c);
    ct_mel *m;
    CT_ASSERT_OK(ct_mel_create(NULL, &m));
    /* the plain path is slow (a direct DFT per frame): clips 0-3 and a cut of clip 4 */
    size_t lens[5] = {c.n[0], c.n[1], c.n[2], c.n[3], 16000 * 3 + 77};
    for (int i = 0; i < 5; i++) {
        int T = (int)ct_mel_frames(m, lens[i]);
        float *a = malloc(sizeof(float) * (size_t)T * 128), *b = malloc(sizeof(float) * (size_t)T * 128);
        const float *x = c.clip[i];
        for (int dither = 0; dither < 2; dither++) {
            CT_ASSERT_OK(ct_mel_compute_batch(m, &x, &lens[i], 1, dither, a, T, NULL));
            CT_ASSERT_OK(ct_mel_compute_reference(m, x, lens[i], dither, b, T));
            double d = ct_max_abs_diff(a, b, (size_t)T * 128);
            print_message("  fast vs plain, clip %d dither %d: max |d| = %.3g\n", i, dither, d);
            /* both compute the FFT in double: they differ only by the fast
             * path's vector log and float filterbank sums (~1e-6 here) */
            if (d > 2e-5) fail_msg("clip %d dither %d: fast vs plain %.3g > 2e-5", i, dither, d);
        }
        free(a);
        free(b);
    }
    free_clips(&c);
    ct_mel_free(m);
}

/* ct_mel_dither is the dither of the mel, split off for a mel that takes
 * undithered PCM (the GPU's): the dithered features equal the undithered
 * features of the dithered PCM, for a batch of mixed lengths (each clip's
 * noise seeded by its own length), and the noise is real (the features move
 * by far more than the tolerance). Also in place. */
static void test_dither_split_off(void **state) {
    (void)state;
    clips_t c;
    load_clips(&c);
    ct_mel *m;
    CT_ASSERT_OK(ct_mel_create(NULL, &m));
    const int B = 3;
    size_t lens[3] = {c.n[0], 16000 * 2 + 5, c.n[2]}, nmax = 0;
    const float *x[3] = {c.clip[0], c.clip[1], c.clip[2]}, *xd[3];
    float *d[3];
    for (int b = 0; b < B; b++) {
        if (lens[b] > nmax) nmax = lens[b];
        d[b] = malloc(sizeof(float) * lens[b]);
        CT_ASSERT_OK(ct_mel_dither(m, x[b], lens[b], d[b]));
        xd[b] = d[b];
    }
    int T = (int)ct_mel_frames(m, nmax);
    size_t ne = (size_t)B * T * 128;
    float *want = malloc(sizeof(float) * ne), *got = malloc(sizeof(float) * ne), *plain = malloc(sizeof(float) * ne);
    CT_ASSERT_OK(ct_mel_compute_batch(m, x, lens, B, 1, want, T, NULL));
    CT_ASSERT_OK(ct_mel_compute_batch(m, xd, lens, B, 0, got, T, NULL));
    CT_ASSERT_OK(ct_mel_compute_batch(m, x, lens, B, 0, plain, T, NULL));
    double dd = ct_max_abs_diff(got, want, ne), moved = ct_max_abs_diff(plain, want, ne);
    print_message("  dithered PCM, undithered mel vs dithered mel: max |d| = %.3g (dither moves them by %.3g)\n", dd,
                  moved);
    /* the same two roundings of x + 1e-5·r on both sides: equal bits at the
     * default flags (mel.c has no FMA contraction); 1e-6 leaves room for a
     * -march=native build */
    if (dd > 1e-6) fail_msg("dithered PCM through the undithered mel: %.3g > 1e-6", dd);
    assert_true(moved > 1e-3);
    /* in place gives the same samples */
    float *inplace = malloc(sizeof(float) * lens[1]);
    memcpy(inplace, x[1], sizeof(float) * lens[1]);
    CT_ASSERT_OK(ct_mel_dither(m, inplace, lens[1], inplace));
    assert_memory_equal(inplace, d[1], sizeof(float) * lens[1]);
    free(inplace);
    for (int b = 0; b < B; b++) free(d[b]);
    free(want), free(got), free(plain);
    free_clips(&c);
    ct_mel_free(m);
}

/* Every kernel (AVX-512, AVX2, baseline: those this CPU runs) does the same
 * float/double operations per lane, so all give identical bits. */
static void test_kernels_agree(void **state) {
    (void)state;
    clips_t c;
    load_clips(&c);
    ct_mel *m;
    CT_ASSERT_OK(ct_mel_create(NULL, &m));
    int T = (int)ct_mel_frames(m, c.n[3]);
    float *want = malloc(sizeof(float) * (size_t)T * 128), *got = malloc(sizeof(float) * (size_t)T * 128);
    const float *x = c.clip[3];
    ct_mel__set_isa(-1);
    int top = ct_mel__isa();
    CT_ASSERT_OK(ct_mel_compute_batch(m, &x, &c.n[3], 1, 1, want, T, NULL));
    for (int isa = 0; isa < top; isa++) {
        ct_mel__set_isa(isa);
        assert_int_equal(ct_mel__isa(), isa);
        CT_ASSERT_OK(ct_mel_compute_batch(m, &x, &c.n[3], 1, 1, got, T, NULL));
        assert_memory_equal(got, want, sizeof(float) * (size_t)T * 128);
    }
    print_message("  kernels 0..%d agree bit for bit\n", top);
    ct_mel__set_isa(-1);
    free(want);
    free(got);
    free_clips(&c);
    ct_mel_free(m);
}

/* The normalisation sums in the reference's order over the batch's padded
 * length (mel_norm.c), so a row depends on the batch only through the
 * longest clip: with the same longest clip (in any order, with any extra
 * T_max padding) it is bit-identical; alone it differs by rounding only. */
static void test_batch_invariance(void **state) {
    (void)state;
    clips_t c;
    load_clips(&c);
    ct_mel *m;
    CT_ASSERT_OK(ct_mel_create(NULL, &m));
    int order[NCLIPS] = {3, 0, 5, 1, 4, 2};
    const float *x[NCLIPS];
    size_t n[NCLIPS];
    for (int i = 0; i < NCLIPS; i++) {
        x[i] = c.clip[order[i]];
        n[i] = c.n[order[i]];
    }
    int T = (int)ct_mel_frames(m, c.n[5]) + 9;
    float *all = malloc(sizeof(float) * NCLIPS * (size_t)T * 128);
    float *two = malloc(sizeof(float) * 2 * (size_t)T * 128);
    float *one = malloc(sizeof(float) * (size_t)T * 128);
    int vf[NCLIPS], v2[2], v1;
    CT_ASSERT_OK(ct_mel_compute_batch(m, x, n, NCLIPS, 1, all, T, vf));
    double worst = 0;
    for (int i = 0; i < NCLIPS; i++) {
        const float *pair[2] = {c.clip[5], x[i]};
        size_t pn[2] = {c.n[5], n[i]};
        int T2 = (int)ct_mel_frames(m, c.n[5]);
        CT_ASSERT_OK(ct_mel_compute_batch(m, pair, pn, 2, 1, two, T2, v2));
        assert_int_equal(v2[1], vf[i]);
        assert_memory_equal(two + (size_t)T2 * 128, all + (size_t)i * T * 128, sizeof(float) * (size_t)vf[i] * 128);
        for (size_t k = (size_t)vf[i] * 128; k < (size_t)T * 128; k++)
            assert_true(all[(size_t)i * T * 128 + k] == 0.0f);
        int Ti = (int)ct_mel_frames(m, n[i]);
        CT_ASSERT_OK(ct_mel_compute_batch(m, &x[i], &n[i], 1, 1, one, Ti, &v1));
        assert_int_equal(v1, vf[i]);
        double d = ct_max_abs_diff(one, all + (size_t)i * T * 128, (size_t)v1 * 128);
        if (d > worst) worst = d;
    }
    print_message("  alone vs in the batch: max |d| = %.3g\n", worst);
    assert_true(worst < 1e-5);
    free(all);
    free(two);
    free(one);
    free_clips(&c);
    ct_mel_free(m);
}

/* The normalisation's eight-columns-at-a-time path against the plain
 * one-column path: identical bits for every length class of torch's sum
 * (fewer than 8 frames, no full cascade chunk, several chunks). */
static void test_normalize_fast_matches_plain(void **state) {
    (void)state;
    size_t Ls[6] = {2, 6, 17, 100, 1111, 3407};
    int nms[2] = {128, 13};
    ct_mt19937 mt;
    ct_mt19937_seed(&mt, 99);
    for (int a = 0; a < 6; a++) {
        for (int b = 0; b < 2; b++) {
            size_t L = Ls[a], T = L + 1 + (size_t)(a * 37), nm = (size_t)nms[b];
            float *x = malloc(sizeof(float) * L * nm), *y = malloc(sizeof(float) * L * nm);
            for (size_t i = 0; i < L * nm; i++)
                x[i] = (float)(ct_mt19937_next(&mt) >> 8) * 0x1p-20f - 8.0f;
            memcpy(y, x, sizeof(float) * L * nm);
            assert_int_equal(ct_mel__normalize(x, L, T, (int)nm), 0);
            assert_int_equal(ct_mel__normalize_plain(y, L, T, (int)nm), 0);
            assert_memory_equal(x, y, sizeof(float) * L * nm);
            /* and it normalises: column 0 has mean ~0 */
            double mu = 0;
            for (size_t t = 0; t < L; t++) mu += x[t * nm];
            assert_true(fabs(mu / (double)L) < 1e-4);
            free(x);
            free(y);
        }
    }
}

/* All-zero clips without dither: every valid value is the reference's
 * float32 rounding of its own mean/variance (about -0.16 or -0.28, not 0),
 * alone and in padded batches (tests/fixtures/mel/silence.json). Bit-exact
 * but for one thing: torch's float sqrt goes through MKL (vsSqrt), which is
 * not always correctly rounded (here: one case, one ulp of the std, one ulp
 * of the result), so a value may differ by an ulp or two. */
static void test_silence_matches_reference(void **state) {
    (void)state;
    json_t *root = ct_test_load_json(CT_FIXTURE("mel/silence.json"));
    json_t *cases = json_object_get(root, "cases");
    assert_true(json_array_size(cases) >= 6);
    ct_mel *m;
    CT_ASSERT_OK(ct_mel_create(NULL, &m));
    for (size_t ci = 0; ci < json_array_size(cases); ci++) {
        json_t *cs = json_array_get(cases, ci);
        json_t *ns = json_object_get(cs, "samples");
        int B = (int)json_array_size(ns);
        int T = (int)json_integer_value(json_object_get(cs, "T"));
        const float *clips[4];
        size_t lens[4];
        float *zero = calloc(480000, sizeof(float));
        assert_true(B <= 4);
        for (int b = 0; b < B; b++) {
            clips[b] = zero;
            lens[b] = (size_t)json_integer_value(json_array_get(ns, (size_t)b));
        }
        float *out = malloc(sizeof(float) * (size_t)B * (size_t)T * 128);
        int vf[4];
        CT_ASSERT_OK(ct_mel_compute_batch(m, clips, lens, B, 0, out, T, vf));
        for (int b = 0; b < B; b++) {
            uint32_t want = (uint32_t)strtoul(
                json_string_value(json_array_get(json_object_get(cs, "value_bits"), (size_t)b)), NULL, 16);
            float wf;
            memcpy(&wf, &want, 4);
            assert_true(fabsf(wf) > 0.1f); /* the artefact is real, not 0 */
            for (size_t k = 0; k < (size_t)vf[b] * 128; k++) {
                float got = out[(size_t)b * T * 128 + k];
                int64_t ulps = (int64_t)bits_of(got) - (int64_t)want;
                if (ulps < -2 || ulps > 2)
                    fail_msg("silence case %zu clip %d value %zu: %08x, reference %08x", ci, b, k,
                             bits_of(got), want);
            }
        }
        free(out);
        free(zero);
    }
    ct_mel_free(m);
    json_decref(root);
}

/* ---- refusals and edge cases ------------------------------------------------------------- */

static void test_limits_and_bad_input(void **state) {
    (void)state;
    ct_mel *m;
    CT_ASSERT_OK(ct_mel_create(NULL, &m));
    size_t max = ct_mel_max_samples(m);
    assert_int_equal(max, 560000);
    float *x = calloc(max + 1, sizeof(float));
    for (size_t i = 0; i <= max; i++) x[i] = (float)sin(0.01 * (double)i);
    size_t n = max + 1;
    const float *p = x;
    int T = (int)ct_mel_frames(m, n);
    float *out = malloc(sizeof(float) * (size_t)T * 128);
    CT_ASSERT_STATUS(ct_mel_compute_batch(m, &p, &n, 1, 0, out, T, NULL), CT_ERR_LIMIT);
    CT_ASSERT_ERROR_HAS("35.0 s");
    n = max; /* exactly 35 s is accepted */
    CT_ASSERT_OK(ct_mel_compute_batch(m, &p, &n, 1, 1, out, T, NULL));
    CT_ASSERT_STATUS(ct_mel_compute_batch(m, &p, &n, 1, 0, out, (int)ct_mel_frames(m, n) - 1, NULL),
                     CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("T_max");
    n = 1000;
    x[500] = NAN;
    CT_ASSERT_STATUS(ct_mel_compute_batch(m, &p, &n, 1, 0, out, T, NULL), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("not finite");
    x[500] = INFINITY;
    CT_ASSERT_STATUS(ct_mel_compute_batch(m, &p, &n, 1, 0, out, T, NULL), CT_ERR_INVALID_ARG);
    x[500] = 0x1p50f;
    CT_ASSERT_STATUS(ct_mel_compute_batch(m, &p, &n, 1, 0, out, T, NULL), CT_ERR_INVALID_ARG);
    x[500] = -0x1p49f; /* large but safe: the features stay finite */
    CT_ASSERT_OK(ct_mel_compute_batch(m, &p, &n, 1, 0, out, T, NULL));
    for (size_t k = 0; k < (size_t)ct_mel_valid_frames(m, n) * 128; k++) assert_true(isfinite(out[k]));
    x[500] = 0.5f;
    const float *none = NULL;
    CT_ASSERT_STATUS(ct_mel_compute_batch(m, &none, &n, 1, 0, out, T, NULL), CT_ERR_INVALID_ARG);
    CT_ASSERT_STATUS(ct_mel_compute_batch(m, &p, &n, 0, 0, out, T, NULL), CT_ERR_INVALID_ARG);
    /* fewer than 2 valid frames: the reference divides 0 by 0 (NaN); we
     * write zeros and report the valid count */
    size_t shorts[3] = {0, 200, 319};
    for (int i = 0; i < 3; i++) {
        int v = -1;
        for (int k = 0; k < 3 * 128; k++) out[k] = 1.0f;
        CT_ASSERT_OK(ct_mel_compute_batch(m, &p, &shorts[i], 1, 1, out, 3, &v));
        assert_int_equal(v, (int)(shorts[i] / 160));
        for (int k = 0; k < 3 * 128; k++) assert_true(out[k] == 0.0f);
    }
    /* 320 samples: 2 valid frames, normalised to -+1/(1+eps)-ish values */
    size_t two = 320;
    int v = 0;
    CT_ASSERT_OK(ct_mel_compute_batch(m, &p, &two, 1, 1, out, 3, &v));
    assert_int_equal(v, 2);
    for (int k = 0; k < 128; k++) assert_true(fabsf(out[k]) < 0.71f && isfinite(out[k]));
    /* bad options */
    ct_mel_options o = ct_mel_default_options();
    ct_mel *bad = NULL;
    o.n_fft = 500;
    CT_ASSERT_STATUS(ct_mel_create(&o, &bad), CT_ERR_INVALID_ARG);
    o = ct_mel_default_options();
    o.win_length = 600;
    CT_ASSERT_STATUS(ct_mel_create(&o, &bad), CT_ERR_INVALID_ARG);
    assert_null(bad);
    ct_mel_free(NULL);
    free(x);
    free(out);
    ct_mel_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mt19937_standard),
        cmocka_unit_test(test_randn_matches_torch),
        cmocka_unit_test(test_window_and_filterbank),
        cmocka_unit_test(test_features_match_reference),
        cmocka_unit_test(test_fast_matches_plain),
        cmocka_unit_test(test_kernels_agree),
        cmocka_unit_test(test_dither_split_off),
        cmocka_unit_test(test_batch_invariance),
        cmocka_unit_test(test_silence_matches_reference),
        cmocka_unit_test(test_normalize_fast_matches_plain),
        cmocka_unit_test(test_limits_and_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
