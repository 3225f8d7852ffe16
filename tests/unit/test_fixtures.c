/* test_fixtures.c — the committed reference fixtures agree with each other:
 * WAV lengths vs the batch, frame counts vs the frontend/subsampling formulas,
 * tensor shapes, greedy tokens = argmax of the stored logits, stop reasons,
 * the prompt vs the tokenizer, and the tokenizer/config copies in both model
 * layouts. It checks the fixtures, not an engine (tests of the engine compare
 * against them). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "model/safetensors.h"
#include "model/tokenizer.h"
#include "testutil.h"

#define HINT "HINT: fixtures out of date? Regenerate with tools/reference/make_fixtures.py (tests/fixtures/README.md)"
#define NCLIPS 6

static const char *const CLIPS[NCLIPS] = {"c0_tones_1s", "c1_en_us_3s", "c2_de_noise_6s",
                                          "c3_fr_ar_10s", "c4_en_gb_30s", "c5_es_en_34s"};

/* Samples of a plain 16 kHz mono s16 WAV with a 44-byte header. */
static int64_t wav_samples(const char *path) {
    char *buf;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(path, 1 << 26, &buf, &n));
    assert_true(n >= 44);
    assert_memory_equal(buf, "RIFF", 4);
    assert_memory_equal(buf + 8, "WAVEfmt ", 8);
    assert_memory_equal(buf + 36, "data", 4);
    const uint8_t *u = (const uint8_t *)buf;
    assert_int_equal(u[20] | u[21] << 8, 1);                                      /* PCM */
    assert_int_equal(u[22] | u[23] << 8, 1);                                      /* mono */
    assert_int_equal(u[24] | u[25] << 8 | u[26] << 16 | (uint32_t)u[27] << 24, 16000);
    assert_int_equal(u[34] | u[35] << 8, 16);                                     /* bits */
    uint32_t data = u[40] | u[41] << 8 | u[42] << 16 | (uint32_t)u[43] << 24;
    assert_int_equal(data, n - 44);
    free(buf);
    return (int64_t)(data / 2);
}

static const ct_st_tensor *need(const ct_safetensors *st, const char *name, ct_dtype dt, int ndim) {
    const ct_st_tensor *t = ct_st_find(st, name);
    if (!t) fail_msg("reference.safetensors lacks %s\n" HINT, name);
    if (t->dtype != dt || t->ndim != ndim) fail_msg("%s: unexpected dtype/rank\n" HINT, name);
    return t;
}

static int64_t i64_at(const ct_st_tensor *t, int64_t i) {
    int64_t v;
    memcpy(&v, (const char *)t->data + i * 8, 8);
    return v;
}

static int32_t i32_at(const ct_st_tensor *t, int64_t i) {
    int32_t v;
    memcpy(&v, (const char *)t->data + i * 4, 4);
    return v;
}

static void test_reference_consistent(void **state) {
    (void)state;
    ct_safetensors *st = NULL;
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("reference.safetensors"), &st));
    assert_string_equal(ct_st_metadata(st, "transformers"), "5.17.0");
    int max_new = atoi(ct_st_metadata(st, "max_new_tokens"));
    assert_true(max_new > 0);
    ct_tokenizer *tok = NULL;
    CT_ASSERT_OK(ct_tokenizer_load(CT_FIXTURE("tokenizer.json"), &tok));
    int32_t eos = ct_tokenizer_id(tok, "<|endoftext|>");
    int V = ct_tokenizer_vocab_size(tok);

    const ct_st_tensor *ns = need(st, "batch.audio_samples", CT_DTYPE_I64, 1);
    const ct_st_tensor *nf = need(st, "batch.feature_frames_valid", CT_DTYPE_I64, 1);
    const ct_st_tensor *ne = need(st, "batch.encoder_frames_valid", CT_DTYPE_I64, 1);
    const ct_st_tensor *stop = need(st, "stop_eos", CT_DTYPE_I32, 1);
    assert_int_equal(ns->shape[0], NCLIPS);
    int64_t nmax = 0;
    int n_eos = 0, n_budget = 0;
    char name[128];
    for (int i = 0; i < NCLIPS; i++) {
        snprintf(name, sizeof name, "audio/%s.wav", CLIPS[i]);
        int64_t n = wav_samples(CT_FIXTURE(name));
        assert_int_equal(i64_at(ns, i), n);
        if (n > nmax) nmax = n;
        int64_t L = n / 160, E = L;
        assert_int_equal(i64_at(nf, i), L);
        for (int k = 0; k < 3; k++) E = (E - 1) / 2 + 1;
        assert_int_equal(i64_at(ne, i), E);
        const char *feat[2] = {"features.nodither.%d", "features.dither.%d"};
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, feat[k], i);
            const ct_st_tensor *f = need(st, name, CT_DTYPE_F32, 2);
            assert_int_equal(f->shape[0], L);
            assert_int_equal(f->shape[1], 128);
        }
        const char *enc[2] = {"encoder.%d", "encoder_proj.%d"};
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, enc[k], i);
            const ct_st_tensor *e = need(st, name, CT_DTYPE_F32, 2);
            assert_int_equal(e->shape[0], E);
            assert_int_equal(e->shape[1], 64);
        }
        snprintf(name, sizeof name, "tokens.%d", i);
        const ct_st_tensor *tk = need(st, name, CT_DTYPE_I32, 1);
        snprintf(name, sizeof name, "logits.%d", i);
        const ct_st_tensor *lg = need(st, name, CT_DTYPE_F32, 2);
        int64_t nt = tk->shape[0];
        assert_int_equal(lg->shape[0], nt);
        assert_int_equal(lg->shape[1], V);
        float *row = malloc((size_t)(nt * V) * sizeof *row);
        CT_ASSERT_OK(ct_st_tensor_to_f32(lg, row, (size_t)(nt * V)));
        for (int64_t s = 0; s < nt; s++) {
            int best = 0;
            for (int v = 1; v < V; v++)
                if (row[s * V + v] > row[s * V + best]) best = v; /* ties: lowest id, as torch.argmax */
            if (best != i32_at(tk, s)) fail_msg("clip %d step %lld: argmax %d, token %d", i, (long long)s, best, i32_at(tk, s));
        }
        free(row);
        int ended = nt > 0 && i32_at(tk, nt - 1) == eos;
        assert_int_equal(i32_at(stop, i), ended);
        if (ended) {
            n_eos++;
            assert_true(nt < max_new); /* stops early, not at the budget */
        } else {
            n_budget++;
            assert_int_equal(nt, max_new);
        }
        for (int64_t s = 0; s + 1 < nt; s++) assert_int_not_equal(i32_at(tk, s), eos);
    }
    assert_true(n_eos >= 1 && n_budget >= 1);
    const ct_st_tensor *shape = need(st, "batch.features_shape", CT_DTYPE_I64, 1);
    assert_int_equal(i64_at(shape, 0), NCLIPS);
    assert_int_equal(i64_at(shape, 1), 1 + nmax / 160);
    assert_int_equal(i64_at(shape, 2), 128);

    /* the prompt is the tokenizer's English + punctuation prompt */
    const ct_st_tensor *pr = need(st, "prompt", CT_DTYPE_I32, 1);
    int32_t p[CT_TOKENIZER_PROMPT_LEN];
    int np;
    CT_ASSERT_OK(ct_tokenizer_prompt(tok, "en", 1, p, CT_TOKENIZER_PROMPT_LEN, &np));
    assert_int_equal(pr->shape[0], np);
    for (int k = 0; k < np; k++) assert_int_equal(i32_at(pr, k), p[k]);
    ct_tokenizer_free(tok);
    ct_st_free(st);
}

static void test_model_dirs_consistent(void **state) {
    (void)state;
    char *a, *b;
    size_t na, nb;
    CT_ASSERT_OK(ct_fs_read_all(CT_FIXTURE("tokenizer.json"), 1 << 26, &a, &na));
    const char *dirs[2] = {"tiny-hf", "tiny-nemo"};
    char rel[128];
    for (int d = 0; d < 2; d++) {
        snprintf(rel, sizeof rel, "%s/tokenizer.json", dirs[d]);
        CT_ASSERT_OK(ct_fs_read_all(CT_FIXTURE(rel), 1 << 26, &b, &nb));
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na);
        free(b);
        snprintf(rel, sizeof rel, "%s/generation_config.json", dirs[d]);
        json_error_t err;
        json_t *g = json_load_file(CT_FIXTURE(rel), 0, &err);
        assert_non_null(g);
        ct_tokenizer *tok = NULL;
        CT_ASSERT_OK(ct_tokenizer_load(CT_FIXTURE("tokenizer.json"), &tok));
        assert_int_equal(json_integer_value(json_object_get(g, "decoder_start_token_id")), ct_tokenizer_id(tok, "▁"));
        assert_int_equal(json_integer_value(json_object_get(g, "eos_token_id")), ct_tokenizer_id(tok, "<|endoftext|>"));
        assert_int_equal(json_integer_value(json_object_get(g, "pad_token_id")), ct_tokenizer_id(tok, "<pad>"));
        assert_int_equal(json_integer_value(json_object_get(g, "bos_token_id")),
                         ct_tokenizer_id(tok, "<|startoftranscript|>"));
        snprintf(rel, sizeof rel, "%s/config.json", dirs[d]);
        json_t *c = json_load_file(CT_FIXTURE(rel), 0, &err);
        assert_non_null(c);
        assert_int_equal(json_integer_value(json_object_get(c, "vocab_size")), ct_tokenizer_vocab_size(tok));
        assert_string_equal(json_string_value(json_object_get(c, "model_type")), "cohere_asr");
        json_decref(c);
        json_decref(g);
        ct_tokenizer_free(tok);
    }
    free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_consistent),
        cmocka_unit_test(test_model_dirs_consistent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
