/* test_asr.c — the engine's entry point end to end (WAV → mel → encoder →
 * greedy decoding) and the cohere-transcribe-inspect tool, against the
 * transformers reference in tests/fixtures/reference.safetensors: features
 * (dither off and on), encoder output, greedy tokens and per-step logits of
 * the six fixture clips as one padded batch, each clip alone, both layouts. */
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "asr/asr.h"
#include "fixture_io.h"
#include "model/safetensors.h"
#include "testutil.h"

#define NCLIPS 6
static const char *clip_names[NCLIPS] = {"c0_tones_1s", "c1_en_us_3s", "c2_de_noise_6s",
                                         "c3_fr_ar_10s", "c4_en_gb_30s", "c5_es_en_34s"};

typedef struct fx {
    float *clips[NCLIPS];
    size_t n[NCLIPS];
    ct_safetensors *ref;
} fx;

static float *ref_f32(fx *f, const char *name, int64_t *rows, int64_t *cols) {
    const ct_st_tensor *t = ct_st_find(f->ref, name);
    if (!t) fail_msg("reference tensor %s missing", name);
    if (rows) *rows = t->shape[0];
    if (cols) *cols = t->ndim > 1 ? t->shape[1] : 1;
    float *p = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    CT_ASSERT_OK(ct_st_tensor_to_f32(t, p, (size_t)t->numel));
    return p;
}

static int ref_tokens(fx *f, int i, int32_t *out) {
    char nm[64];
    snprintf(nm, sizeof nm, "tokens.%d", i);
    const ct_st_tensor *t = ct_st_find(f->ref, nm);
    if (!t) fail_msg("reference tensor %s missing", nm);
    memcpy(out, t->data, t->nbytes);
    return (int)t->shape[0];
}

static int setup(void **state) {
    fx *f = calloc(1, sizeof *f);
    char rel[128];
    for (int i = 0; i < NCLIPS; i++) {
        snprintf(rel, sizeof rel, "audio/%s.wav", clip_names[i]);
        f->clips[i] = ct_test_read_audio(CT_FIXTURE(rel), &f->n[i]);
    }
    if (ct_st_open(CT_FIXTURE("reference.safetensors"), &f->ref) != CT_OK) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx *f = *state;
    for (int i = 0; i < NCLIPS; i++) free(f->clips[i]);
    ct_st_free(f->ref);
    free(f);
    return 0;
}

/* Compare clip b of a result with reference clip i. */
static void check_clip(fx *f, const ct_asr_clip *c, int i, int dither, int d, int V) {
    char nm[64];
    int64_t n, k;
    snprintf(nm, sizeof nm, "features.%s.%d", dither ? "dither" : "nodither", i);
    float *feat = ref_f32(f, nm, &n, &k);
    assert_int_equal(c->feature_frames, n);
    double e = ct_max_abs_diff(c->features, feat, (size_t)n * k);
    if (!(e <= 1e-4)) fail_msg("clip %d: features max |Δ| %.3g > 1e-4", i, e);
    free(feat);
    if (dither) return; /* the model reference ran on the dither-off features */
    snprintf(nm, sizeof nm, "encoder.%d", i);
    float *enc = ref_f32(f, nm, &n, &k);
    assert_int_equal(c->encoder_frames, n);
    assert_int_equal(k, d);
    e = ct_rel_l2(c->encoder, enc, (size_t)n * d);
    if (!(e <= 1e-4)) fail_msg("clip %d: encoder relative L2 %.3g > 1e-4", i, e);
    free(enc);
    int32_t want[1024];
    int nt = ref_tokens(f, i, want);
    if (c->n_tokens != nt || memcmp(c->tokens, want, sizeof(int32_t) * nt))
        fail_msg("clip %d: tokens differ from the reference (%d vs %d)", i, c->n_tokens, nt);
    snprintf(nm, sizeof nm, "logits.%d", i);
    float *lg = ref_f32(f, nm, &n, &k);
    assert_int_equal(k, V);
    for (int s = 0; s < nt; s++) {
        e = ct_rel_l2(c->logits + (size_t)s * V, lg + (size_t)s * V, (size_t)V);
        if (!(e <= 1e-4)) fail_msg("clip %d step %d: logits relative L2 %.3g > 1e-4", i, s, e);
    }
    free(lg);
    assert_int_equal(c->stop, want[nt - 1] == 3 ? CT_STOP_EOS : CT_STOP_MAX_TOKENS);
}

/* dnnl_bf16 as ct_asr_options has it: the "same math" checks of bf16-exact
 * weights need the widened path (-1), which a CPU with native bf16 products
 * would not take by default (it rounds the activations to bf16). */
static int g_dnnl_bf16;

static void transcribe(fx *f, const char *model, ct_dtype wdt, int first, int B, int dither, ct_asr_result *res,
                       ct_asr **keep) {
    ct_asr_options o = ct_asr_default_options();
    o.weight_dtype = wdt;
    o.dnnl_bf16 = g_dnnl_bf16;
    ct_asr *asr;
    CT_ASSERT_OK(ct_asr_open(model, &o, &asr));
    ct_asr_request rq = ct_asr_default_request();
    rq.dither = dither;
    rq.max_new_tokens = 40; /* the reference's budget */
    rq.keep_features = rq.keep_encoder = rq.keep_logits = 1;
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)f->clips + first, f->n + first, B, &rq, res));
    if (keep) *keep = asr;
    else ct_asr_free(asr);
}

static void test_batch(void **state) {
    fx *f = *state;
    ct_asr_result r;
    ct_asr *asr;
    transcribe(f, CT_FIXTURE("tiny-hf"), CT_DTYPE_F32, 0, NCLIPS, 0, &r, &asr);
    assert_int_equal(r.n, NCLIPS);
    for (int i = 0; i < NCLIPS; i++) {
        check_clip(f, &r.clips[i], i, 0, 64, 495);
        /* the text is the tokenizer's decoding of exactly these ids */
        char *t;
        CT_ASSERT_OK(ct_tokenizer_decode(ct_asr_tokenizer(asr), r.clips[i].tokens, r.clips[i].n_tokens, &t));
        assert_string_equal(t, r.clips[i].text);
        free(t);
    }
    assert_true(r.seconds_mel > 0 && r.seconds_encoder > 0 && r.seconds_decoder > 0);
    ct_asr_result_free(&r);
    ct_asr_free(asr);
}

static void test_dither(void **state) {
    fx *f = *state;
    ct_asr_result r;
    transcribe(f, CT_FIXTURE("tiny-hf"), CT_DTYPE_F32, 0, NCLIPS, 1, &r, NULL);
    for (int i = 0; i < NCLIPS; i++) check_clip(f, &r.clips[i], i, 1, 64, 495);
    ct_asr_result_free(&r);
}

static void test_alone_equals_batch(void **state) {
    fx *f = *state;
    ct_asr_result all;
    transcribe(f, CT_FIXTURE("tiny-hf"), CT_DTYPE_F32, 0, NCLIPS, 0, &all, NULL);
    for (int i = 0; i < NCLIPS; i++) {
        ct_asr_result one;
        transcribe(f, CT_FIXTURE("tiny-hf"), CT_DTYPE_F32, i, 1, 0, &one, NULL);
        check_clip(f, &one.clips[0], i, 0, 64, 495);
        const ct_asr_clip *a = &one.clips[0], *b = &all.clips[i];
        assert_int_equal(a->feature_frames, b->feature_frames);
        assert_true(ct_max_abs_diff(a->features, b->features, (size_t)a->feature_frames * 128) <= 1e-5);
        assert_true(ct_max_abs_diff(a->encoder, b->encoder, (size_t)a->encoder_frames * 64) <= 1e-5);
        assert_int_equal(a->n_tokens, b->n_tokens);
        assert_memory_equal(a->tokens, b->tokens, sizeof(int32_t) * a->n_tokens);
        double le = ct_rel_l2(a->logits, b->logits, (size_t)a->n_tokens * 495);
        if (!(le <= 1e-5)) fail_msg("clip %d: alone vs batch logits relative L2 %.3g", i, le);
        ct_asr_result_free(&one);
    }
    ct_asr_result_free(&all);
}

static void test_layouts_and_bf16(void **state) {
    fx *f = *state;
    ct_asr_result a, b, c;
    transcribe(f, CT_FIXTURE("tiny-hf"), CT_DTYPE_F32, 0, NCLIPS, 0, &a, NULL);
    transcribe(f, CT_FIXTURE("tiny-nemo"), CT_DTYPE_F32, 0, NCLIPS, 0, &b, NULL);
    g_dnnl_bf16 = -1;
    transcribe(f, CT_FIXTURE("tiny-nemo"), CT_DTYPE_BF16, 0, NCLIPS, 0, &c, NULL);
    g_dnnl_bf16 = 0;
    for (int i = 0; i < NCLIPS; i++) {
        assert_memory_equal(a.clips[i].encoder, b.clips[i].encoder, sizeof(float) * a.clips[i].encoder_frames * 64);
        assert_int_equal(a.clips[i].n_tokens, b.clips[i].n_tokens);
        assert_memory_equal(a.clips[i].logits, b.clips[i].logits, sizeof(float) * a.clips[i].n_tokens * 495);
        assert_string_equal(a.clips[i].text, b.clips[i].text);
        check_clip(f, &c.clips[i], i, 0, 64, 495); /* bf16-exact weights: same math */
    }
    ct_asr_result_free(&a);
    ct_asr_result_free(&b);
    ct_asr_result_free(&c);
}

static void test_bad_requests(void **state) {
    fx *f = *state;
    ct_asr *asr;
    CT_ASSERT_STATUS(ct_asr_open(CT_FIXTURE("audio"), NULL, &asr), CT_ERR_NOT_FOUND);
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), NULL, &asr));
    ct_asr_request rq = ct_asr_default_request();
    const char *langs[1] = {"xx-not-a-language"};
    rq.languages = langs;
    ct_asr_result r;
    ct_status s = ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, 1, &rq, &r);
    assert_int_not_equal(s, CT_OK);
    CT_ASSERT_ERROR_HAS("clip 0");
    CT_ASSERT_STATUS(ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, 0, NULL, &r), CT_ERR_INVALID_ARG);
    /* longer than 35 s: refused, not truncated */
    size_t n36 = 36 * 16000;
    float *long_clip = calloc(n36, sizeof(float));
    const float *lc = long_clip;
    CT_ASSERT_STATUS(ct_asr_transcribe(asr, &lc, &n36, 1, NULL, &r), CT_ERR_LIMIT);
    free(long_clip);
    ct_asr_free(asr);
}

/* Per-clip budgets (the benchmark mode's): with ignore_eos each clip
 * generates exactly its own count, in any order of sizes; the clips that share
 * a budget with the batch-wide run give its tokens (same greedy path);
 * without ignore_eos, or with a budget outside 1..max_new_tokens, refused
 * before any work. */
static void test_row_budgets(void **state) {
    fx *f = *state;
    ct_asr *asr;
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), NULL, &asr));
    ct_asr_request rq = ct_asr_default_request();
    rq.ignore_eos = 1;
    rq.max_new_tokens = 30;
    ct_asr_result all, r;
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, NCLIPS, &rq, &all));
    int budget[NCLIPS];
    for (int i = 0; i < NCLIPS; i++) budget[i] = 1 + (7 * i + 3) % 30; /* 4, 11, 18, 25, 2, 9, ... */
    for (int i = 0; i < NCLIPS; i++) assert_true(budget[i] >= 1 && budget[i] <= 30);
    rq.row_max_new_tokens = budget;
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, NCLIPS, &rq, &r));
    for (int i = 0; i < NCLIPS; i++) {
        assert_int_equal(all.clips[i].n_tokens, 30);
        assert_int_equal(r.clips[i].n_tokens, budget[i]);
        assert_int_equal(r.clips[i].stop, CT_STOP_MAX_TOKENS);
        /* a row's own budget ends it early; its tokens are the full run's prefix */
        assert_memory_equal(r.clips[i].tokens, all.clips[i].tokens, sizeof(int32_t) * (size_t)budget[i]);
    }
    ct_asr_result_free(&r);
    ct_asr_result_free(&all);
    budget[1] = 31;
    CT_ASSERT_STATUS(ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, NCLIPS, &rq, &r), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("clip 1: token budget 31");
    budget[1] = 0;
    CT_ASSERT_STATUS(ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, NCLIPS, &rq, &r), CT_ERR_INVALID_ARG);
    budget[1] = 5;
    rq.ignore_eos = 0;
    CT_ASSERT_STATUS(ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, NCLIPS, &rq, &r), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("need ignore_eos");
    ct_asr_free(asr);
}

/* Teacher forcing through the batch entry point (ct_asr_request.forced):
 * fed the reference's own tokens, every clip runs its whole budget (EOS
 * does not stop a forced row) and its first steps are the reference's
 * tokens and logits; a forced input that differs from the reference at
 * step g leaves steps 0..g bit-identical and changes step g + 1. Without
 * max_new_tokens (the rows' stride) the request is refused. */
static void test_teacher_forced(void **state) {
    fx *f = *state;
    enum { MAXNEW = 40, V = 495 };
    ct_asr *asr;
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), NULL, &asr));
    static int32_t want[NCLIPS][1024], forced[NCLIPS * MAXNEW];
    int nt[NCLIPS];
    for (int i = 0; i < NCLIPS; i++) {
        nt[i] = ref_tokens(f, i, want[i]);
        assert_true(nt[i] >= 1 && nt[i] <= MAXNEW);
        for (int g = 0; g < MAXNEW; g++) forced[i * MAXNEW + g] = g < nt[i] ? want[i][g] : 3;
    }
    ct_asr_request rq = ct_asr_default_request();
    rq.forced = forced;
    rq.keep_logits = 1;
    ct_asr_result a, b;
    CT_ASSERT_STATUS(ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, NCLIPS, &rq, &a), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("max_new_tokens");
    rq.max_new_tokens = MAXNEW;
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, NCLIPS, &rq, &a));
    int64_t rows, cols;
    char nm[64];
    for (int i = 0; i < NCLIPS; i++) {
        const ct_asr_clip *c = &a.clips[i];
        assert_int_equal(c->n_tokens, MAXNEW);
        assert_int_equal(c->stop, CT_STOP_MAX_TOKENS);
        assert_memory_equal(c->tokens, want[i], sizeof(int32_t) * (size_t)nt[i]);
        snprintf(nm, sizeof nm, "logits.%d", i);
        float *lg = ref_f32(f, nm, &rows, &cols);
        for (int st = 0; st < nt[i]; st++) {
            double e = ct_rel_l2(c->logits + (size_t)st * V, lg + (size_t)st * V, V);
            if (!(e <= 1e-4)) fail_msg("clip %d step %d: forced logits relative L2 %.3g > 1e-4", i, st, e);
        }
        free(lg);
    }
    /* another input after step 1 of every clip that has three steps */
    int changed = 0;
    for (int i = 0; i < NCLIPS; i++)
        if (nt[i] >= 3) {
            forced[i * MAXNEW + 1] = (want[i][1] + 1) % V;
            changed++;
        }
    assert_true(changed >= 3);
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, NCLIPS, &rq, &b));
    for (int i = 0; i < NCLIPS; i++) {
        const float *la = a.clips[i].logits, *lb = b.clips[i].logits;
        if (nt[i] < 3) {
            assert_memory_equal(la, lb, sizeof(float) * MAXNEW * V);
            continue;
        }
        assert_memory_equal(la, lb, sizeof(float) * 2 * V);
        double e = ct_rel_l2(lb + 2 * V, la + 2 * V, V);
        if (!(e > 1e-3)) fail_msg("clip %d: step 2 after another forced input moved only %.3g", i, e);
    }
    ct_asr_result_free(&a);
    ct_asr_result_free(&b);
    ct_asr_free(asr);
}

/* Issue 10 item 8: a language is one of the model's language tokens. Special
 * tokens that exist in the vocabulary (<|pnc|>, <|itn|>, <|nospeech|>) were
 * accepted before; now they are refused up front and in every transcription,
 * with the valid languages listed: the tokenizer's <|xx|> codes (tiny-hf
 * has no supported_languages), or the config's list (tiny-nemo), which also
 * refuses a code the tokenizer has but the config does not list. */
static void test_languages(void **state) {
    fx *f = *state;
    ct_asr *asr;
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), NULL, &asr));
    static const char *const bad[] = {"pnc", "nopnc", "itn", "noitn", "nospeech", "endoftext", "emo:undefined",
                                      "timestamp", "EN", "e", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (ct_asr_check_language(asr, bad[i]) == CT_OK) fail_msg("'%s' accepted as a language", bad[i]);
        if (bad[i][0]) {
            CT_ASSERT_ERROR_HAS("unsupported language");
            CT_ASSERT_ERROR_HAS("the model's languages are af,am,ar,");
        }
        ct_asr_request rq = ct_asr_default_request();
        const char *langs[1] = {bad[i]};
        rq.languages = langs;
        ct_asr_result r;
        memset(&r, 0, sizeof r);
        CT_ASSERT_STATUS(ct_asr_transcribe(asr, (const float *const *)f->clips, f->n, 1, &rq, &r), CT_ERR_INVALID_ARG);
        ct_asr_result_free(&r);
    }
    CT_ASSERT_OK(ct_asr_check_language(asr, "en"));
    CT_ASSERT_OK(ct_asr_check_language(asr, "af")); /* a tokenizer language: tiny-hf's config lists none */
    ct_asr_free(asr);

    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-nemo"), NULL, &asr));
    CT_ASSERT_OK(ct_asr_check_language(asr, "ar"));
    CT_ASSERT_STATUS(ct_asr_check_language(asr, "af"), CT_ERR_INVALID_ARG); /* tokenizer has it, config does not */
    CT_ASSERT_ERROR_HAS("unsupported language \"af\": the model's languages are ar,de,el,en,es,fr,it,ja,ko,nl,pl,pt,vi,zh");
    CT_ASSERT_STATUS(ct_asr_check_language(asr, "pnc"), CT_ERR_INVALID_ARG);
    ct_asr_free(asr);
}

/* The inspect tool on all clips (NeMo layout) gives the reference's tensors. */
static void test_inspect_tool(void **state) {
    fx *f = *state;
    const char *dir = ct_test_tmpdir();
    char out[4096], cmd[16384];
    snprintf(out, sizeof out, "%s/inspect.safetensors", dir);
    int k = snprintf(cmd, sizeof cmd, "%s/cohere-transcribe-inspect --model %s --max-new-tokens 40 --out %s",
                     getenv("CT_BIN"), CT_FIXTURE("tiny-nemo"), out);
    for (int i = 0; i < NCLIPS; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "audio/%s.wav", clip_names[i]);
        k += snprintf(cmd + k, sizeof cmd - k, " %s", CT_FIXTURE(rel));
    }
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[65536];
    int lines = 0;
    while (fgets(line, sizeof line, p)) {
        assert_non_null(strstr(line, "\"text\""));
        lines++;
    }
    assert_int_equal(WEXITSTATUS(pclose(p)), 0);
    assert_int_equal(lines, NCLIPS);
    ct_safetensors *st;
    CT_ASSERT_OK(ct_st_open(out, &st));
    for (int i = 0; i < NCLIPS; i++) {
        char nm[64];
        ct_asr_clip c = {0};
        snprintf(nm, sizeof nm, "features.%d", i);
        const ct_st_tensor *t = ct_st_find(st, nm);
        assert_non_null(t);
        c.feature_frames = (int)t->shape[0];
        c.features = malloc(t->nbytes + 4);
        memcpy(c.features, t->data, t->nbytes);
        snprintf(nm, sizeof nm, "encoder.%d", i);
        t = ct_st_find(st, nm);
        c.encoder_frames = (int)t->shape[0];
        c.encoder = malloc(t->nbytes + 4);
        memcpy(c.encoder, t->data, t->nbytes);
        snprintf(nm, sizeof nm, "tokens.%d", i);
        t = ct_st_find(st, nm);
        assert_int_equal(t->dtype, CT_DTYPE_I32);
        c.n_tokens = (int)t->shape[0];
        c.tokens = malloc(t->nbytes + 4);
        memcpy(c.tokens, t->data, t->nbytes);
        snprintf(nm, sizeof nm, "logits.%d", i);
        t = ct_st_find(st, nm);
        c.logits = malloc(t->nbytes + 4);
        memcpy(c.logits, t->data, t->nbytes);
        int32_t want[1024];
        int nt = ref_tokens(f, i, want);
        c.stop = want[nt - 1] == 3 ? CT_STOP_EOS : CT_STOP_MAX_TOKENS; /* not stored in the file */
        check_clip(f, &c, i, 0, 64, 495);
        free(c.features), free(c.encoder), free(c.tokens), free(c.logits);
    }
    ct_st_free(st);
    /* other sample rates are an error, and so is a bad option */
    char wav8k[4096];
    snprintf(wav8k, sizeof wav8k, "%s/8k.wav", dir);
    SF_INFO info = {.samplerate = 8000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *sf = sf_open(wav8k, SFM_WRITE, &info);
    assert_non_null(sf);
    sf_writef_float(sf, f->clips[0], 8000);
    sf_close(sf);
    snprintf(cmd, sizeof cmd, "%s/cohere-transcribe-inspect --model %s --out %s/x.safetensors %s 2>/dev/null",
             getenv("CT_BIN"), CT_FIXTURE("tiny-hf"), dir, wav8k);
    assert_int_equal(WEXITSTATUS(system(cmd)), 1);
    snprintf(cmd, sizeof cmd, "%s/cohere-transcribe-inspect --model %s --dtype fp8 --out %s/x.safetensors %s 2>/dev/null",
             getenv("CT_BIN"), CT_FIXTURE("tiny-hf"), dir, wav8k);
    assert_int_equal(WEXITSTATUS(system(cmd)), 2);
    ct_test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch),
        cmocka_unit_test(test_dither),
        cmocka_unit_test(test_alone_equals_batch),
        cmocka_unit_test(test_layouts_and_bf16),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_row_budgets),
        cmocka_unit_test(test_teacher_forced),
        cmocka_unit_test(test_languages),
        cmocka_unit_test(test_inspect_tool),
    };
    if (getenv("CT_TEST_FILTER")) cmocka_set_test_filter(getenv("CT_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
