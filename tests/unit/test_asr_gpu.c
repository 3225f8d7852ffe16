/* test_asr_gpu.c — the "cuda" device of the batch entry point (asr_gpu.c).
 * Without a usable GPU: ct_asr_open and cohere-transcribe-inspect --device
 * cuda fail with the message for this build ("built without CUDA" in a
 * CPU-only build, "no CUDA device found" with CUDA compiled in), inspect exits
 * 1. With a GPU: the fixture batch through the library entry point in bf16
 * against the fp32 transformers reference (tokens identical, encoder relative
 * L2 ≤ 1e-2 per clip), texts equal the tokenizer's decoding, logits refused,
 * fp32/fp16 weights refused. In every build: the host side (asr_gpu.c) driven
 * by a scripted engine (ct_gpu_engine_wrap): grouping by prompt, row mapping,
 * stop reasons, texts, kept features/encoder, dithered PCM to the GPU mel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "asr/asr.h"
#include "asr/asr_gpu.h"
#include "asr/torch_rng.h"
#include "compute/gpu_engine.h"
#include "model/safetensors.h"
#include "fixture_io.h"
#include "testutil.h"

#define NCLIPS 6
static const char *clip_names[NCLIPS] = {"c0_tones_1s", "c1_en_us_3s", "c2_de_noise_6s",
                                         "c3_fr_ar_10s", "c4_en_gb_30s", "c5_es_en_34s"};

/* The message ct_asr_open must give on this machine, or NULL with a GPU. */
static const char *expected_refusal(void) {
    if (!ct_gpu_engine_compiled()) return "built without CUDA";
    if (!ct_gpu_engine_device_present(NULL)) return "no CUDA device found";
    return NULL;
}

static void test_open_refused_without_gpu(void **state) {
    const char *want = expected_refusal();
    if (!want) skip();
    ct_asr_options o = ct_asr_default_options();
    o.device = "cuda";
    o.weight_dtype = CT_DTYPE_BF16;
    ct_asr *asr = (ct_asr *)0x1;
    CT_ASSERT_STATUS(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &asr), CT_ERR_UNSUPPORTED);
    assert_null(asr);
    if (!strstr(ct_last_error(), want)) fail_msg("message '%s' lacks '%s'", ct_last_error(), want);
    /* the CPU device of the same build is unaffected */
    o.device = "cpu";
    o.weight_dtype = CT_DTYPE_F32;
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &asr));
    ct_asr_free(asr);
}

static void test_inspect_refused_without_gpu(void **state) {
    const char *want = expected_refusal();
    if (!want) skip();
    const char *dir = ct_test_tmpdir();
    char cmd[8192], errf[4096];
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s/cohere-transcribe-inspect' --model '%s' --device cuda --out '%s/o.safetensors' '%s' 2>'%s'",
             getenv("CT_BIN"), CT_FIXTURE("tiny-hf"), dir, CT_FIXTURE("audio/c1_en_us_3s.wav"), errf);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    FILE *f = fopen(errf, "r");
    assert_non_null(f);
    char buf[4096] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (!strstr(buf, want)) fail_msg("inspect stderr '%s' lacks '%s'", buf, want);
    ct_test_rmtree(dir);
}

static void read_wav(const char *path, float **x, size_t *n) { *x = ct_test_read_audio(path, n); }

static void test_fixture_batch_on_gpu(void **state) {
    if (expected_refusal()) skip();
    ct_asr_options o = ct_asr_default_options();
    o.device = "cuda";
    o.weight_dtype = CT_DTYPE_F32;
    ct_asr *asr;
    CT_ASSERT_STATUS(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &asr), CT_ERR_UNSUPPORTED); /* bf16 only */
    o.weight_dtype = CT_DTYPE_BF16;
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &asr));
    float *clips[NCLIPS];
    size_t n[NCLIPS];
    char rel[128];
    for (int i = 0; i < NCLIPS; i++) {
        snprintf(rel, sizeof rel, "audio/%s.wav", clip_names[i]);
        read_wav(CT_FIXTURE(rel), &clips[i], &n[i]);
    }
    ct_safetensors *ref;
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("reference.safetensors"), &ref));
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = 40;
    rq.keep_logits = 1;
    ct_asr_result r;
    CT_ASSERT_STATUS(ct_asr_transcribe(asr, (const float *const *)clips, n, NCLIPS, &rq, &r), CT_ERR_UNSUPPORTED);
    rq.keep_logits = 0;
    rq.keep_features = rq.keep_encoder = 1;
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)clips, n, NCLIPS, &rq, &r));
    assert_int_equal(r.n, NCLIPS);
    for (int i = 0; i < NCLIPS; i++) {
        const ct_asr_clip *c = &r.clips[i];
        char nm[64];
        snprintf(nm, sizeof nm, "encoder.%d", i);
        const ct_st_tensor *e = ct_st_find(ref, nm);
        assert_non_null(e);
        assert_int_equal(c->encoder_frames, e->shape[0]);
        float *want = malloc(sizeof(float) * (size_t)e->numel);
        CT_ASSERT_OK(ct_st_tensor_to_f32(e, want, (size_t)e->numel));
        double err = ct_rel_l2(c->encoder, want, (size_t)e->numel);
        if (!(err <= 1e-2)) fail_msg("clip %d: encoder relative L2 %.3g > 1e-2 (bf16)", i, err);
        free(want);
        snprintf(nm, sizeof nm, "tokens.%d", i);
        const ct_st_tensor *t = ct_st_find(ref, nm);
        assert_non_null(t);
        /* Greedy tokens as the fp32 reference's, except that a bf16 engine may take
         * the other side of a near tie (the fixture's smallest top-1/top-2 gap is
         * 0.048 at logit std ≈ 8; the engine's error on a logit difference is
         * ≈ 0.06): the first differing step must be one where the reference's fp32
         * logits for its token and ours lie within NEAR_TIE; after it the row
         * follows a different, legitimate path and is not compared. */
        const double NEAR_TIE = 0.25;
        const int32_t *tt = t->data;
        const int nref = (int)t->shape[0];
        snprintf(nm, sizeof nm, "logits.%d", i);
        const ct_st_tensor *lt = ct_st_find(ref, nm);
        assert_non_null(lt);
        float *lref = malloc(sizeof(float) * (size_t)lt->numel);
        CT_ASSERT_OK(ct_st_tensor_to_f32(lt, lref, (size_t)lt->numel));
        if (ct_test_near_tie(i, c->tokens, c->n_tokens, tt, nref, lref, (int)lt->shape[1], NEAR_TIE))
            assert_int_equal(c->stop, tt[nref - 1] == 3 ? CT_STOP_EOS : CT_STOP_MAX_TOKENS);
        free(lref);
        char *text;
        CT_ASSERT_OK(ct_tokenizer_decode(ct_asr_tokenizer(asr), c->tokens, c->n_tokens, &text));
        assert_string_equal(text, c->text);
        free(text);
    }
    ct_asr_result_free(&r);
    ct_st_free(ref);
    for (int i = 0; i < NCLIPS; i++) free(clips[i]);
    ct_asr_free(asr);
}

/* ---- the host side with a scripted engine ------------------------------ */
enum { EOS = 3, PAD = 2, MAXNEW = 6 };

typedef struct script {
    int calls, batch[8], P[8];
    int32_t prompt[8][64];
    int got_pcm[8];
    float *features_seen[8]; /* copies of the features a features request carried */
    int T_seen[8];
    float *pcm_seen[8]; /* copies of a PCM request's rows, one after another */
} script;

/* What the scripted engine generates for a row of n samples: EOS after k
 * tokens for even frame counts, else the whole budget without EOS. */
static int scripted_tokens(size_t n, int max_new, int force, int32_t *out) {
    int eos = (n / 160) % 2 == 0 && !force, k = eos ? 1 + (int)(n / 16000) % 4 : max_new; /* 1..4 < MAXNEW */
    for (int j = 0; j < k; j++) out[j] = 20 + (int)((n + (size_t)j * 7) % 50); /* never EOS */
    if (eos) out[k - 1] = EOS;
    return k;
}

static ct_status scripted_run(void *impl, const ct_gpu_request *rq, ct_gpu_result *res) {
    script *sc = impl;
    int c = sc->calls++;
    if (c >= 8) return ct_fail(CT_ERR_INTERNAL, "too many calls");
    sc->batch[c] = rq->batch;
    sc->P[c] = rq->prompt_len;
    memcpy(sc->prompt[c], rq->prompt, sizeof(int32_t) * rq->prompt_len);
    sc->got_pcm[c] = rq->pcm != NULL;
    int W = rq->prompt_len + rq->max_new;
    size_t nmax = 0;
    for (int b = 0; b < rq->batch; b++) {
        size_t n = rq->pcm ? rq->n_samples[b] : (size_t)rq->feature_lengths[b] * 160;
        if (n > nmax) nmax = n;
    }
    res->T_feat = rq->pcm ? ct_gpu_engine_feature_frames(nmax) : rq->T_feat;
    res->T_enc = ct_gpu_engine_encoder_frames(res->T_feat);
    if (rq->pcm) {
        size_t total = 0;
        for (int b = 0; b < rq->batch; b++) total += rq->n_samples[b];
        float *cp = sc->pcm_seen[c] = malloc(sizeof(float) * (total ? total : 1));
        for (int b = 0; b < rq->batch; b++) memcpy(cp, rq->pcm[b], sizeof(float) * rq->n_samples[b]), cp += rq->n_samples[b];
    } else {
        sc->T_seen[c] = rq->T_feat;
        sc->features_seen[c] = malloc(sizeof(float) * (size_t)rq->batch * rq->T_feat * 128);
        memcpy(sc->features_seen[c], rq->features, sizeof(float) * (size_t)rq->batch * rq->T_feat * 128);
    }
    for (int b = 0; b < rq->batch; b++) {
        size_t n = rq->pcm ? rq->n_samples[b] : (size_t)rq->feature_lengths[b] * 160;
        int32_t gen[64];
        /* per-row counts (benchmark mode) must reach the engine in its rows' order */
        int k = scripted_tokens(n, rq->force_max_new && rq->row_new ? rq->row_new[b] : rq->max_new, rq->force_max_new, gen);
        for (int i = 0; i < W; i++)
            res->tokens[(size_t)b * W + i] = i < rq->prompt_len ? rq->prompt[i] : i - rq->prompt_len < k ? gen[i - rq->prompt_len] : PAD;
        res->n_generated[b] = k;
        int L = rq->pcm ? (int)(n / 160) : rq->feature_lengths[b];
        res->enc_lengths[b] = ct_gpu_engine_encoder_frames(L);
        if (res->encoder_out)
            for (int t = 0; t < res->T_enc && t < res->T_enc_cap; t++)
                for (int d = 0; d < 64; d++) res->encoder_out[((size_t)b * res->T_enc_cap + t) * 64 + d] = (float)n + t + 0.001f * d;
        if (res->features_out)
            for (int t = 0; t < res->T_feat && t < res->T_feat_cap; t++)
                for (int m = 0; m < 128; m++) res->features_out[((size_t)b * res->T_feat_cap + t) * 128 + m] = (float)n - t - 0.01f * m;
    }
    res->mel_s = 0.125;
    res->encoder_s = 0.25;
    res->decoder_s = 0.5;
    return CT_OK;
}

/* The scripted engine with tiny-hf's hyper-parameters and tokenizer and a
 * default mel: what both host-side tests start from. */
typedef struct scripted {
    script sc;
    ct_gpu_engine *e;
    ct_asr_hparams hp;
    ct_tokenizer *tok;
    ct_mel *mel;
} scripted;

static void scripted_open(scripted *x) {
    memset(x, 0, sizeof *x);
    static const ct_gpu_engine_ops ops = {scripted_run, {128, 64, 495, 128}};
    CT_ASSERT_OK(ct_gpu_engine_wrap(&ops, &x->sc, &x->e));
    ct_checkpoint *ck;
    CT_ASSERT_OK(ct_checkpoint_open(CT_FIXTURE("tiny-hf"), &ck));
    CT_ASSERT_OK(ct_asr_hparams_from_config(ct_checkpoint_config(ck), &x->hp));
    ct_checkpoint_free(ck);
    CT_ASSERT_OK(ct_tokenizer_load(CT_FIXTURE("tiny-hf/tokenizer.json"), &x->tok));
    ct_mel_options mo = ct_mel_default_options();
    CT_ASSERT_OK(ct_mel_create(&mo, &x->mel));
}

static void scripted_close(scripted *x) {
    ct_mel_free(x->mel);
    ct_tokenizer_free(x->tok);
    ct_gpu_engine_free(x->e);
}

static void test_host_side_with_scripted_engine(void **state) {
    scripted x;
    scripted_open(&x);
    script *sc = &x.sc;
    ct_gpu_engine *e = x.e;
    ct_asr_hparams hp = x.hp;
    ct_tokenizer *tok = x.tok;
    ct_mel *mel = x.mel;
    float *clips[NCLIPS];
    size_t n[NCLIPS];
    char rel[128];
    for (int i = 0; i < NCLIPS; i++) {
        snprintf(rel, sizeof rel, "audio/%s.wav", clip_names[i]);
        read_wav(CT_FIXTURE(rel), &clips[i], &n[i]);
    }
    ct_asr_gpu_ctx g = {e, tok, mel, &hp, EOS, PAD, NULL};
    const char *langs[NCLIPS] = {"en", "de", "en", "fr", NULL, "de"};
    ct_asr_request rq = ct_asr_default_request();
    rq.languages = langs;
    rq.max_new_tokens = MAXNEW;
    rq.keep_logits = 1;
    ct_asr_result r;
    CT_ASSERT_STATUS(ct_asr_gpu_transcribe(&g, (const float *const *)clips, n, NCLIPS, &rq, &r), CT_ERR_UNSUPPORTED);
    assert_int_equal(sc->calls, 0);
    /* what the dither must add to each clip: the CPU mel's noise, 1e-5 ·
     * torch.randn(n) seeded with the clip's own length (torch_rng.h) */
    float *dithered[NCLIPS];
    for (int i = 0; i < NCLIPS; i++) {
        dithered[i] = malloc(sizeof(float) * n[i]);
        ct_torch_randn((uint64_t)n[i], n[i], CT_RANDN_TORCH_AVX2, dithered[i]);
        for (size_t j = 0; j < n[i]; j++) dithered[i][j] = clips[i][j] + 1e-5f * dithered[i][j];
    }
    /* per-clip budgets, distinct, in an order the prompt grouping scrambles */
    const int budget[NCLIPS] = {3, MAXNEW, 1, 2, MAXNEW - 1, 4};
    for (int pass = 0; pass < 4; pass++) { /* 0: GPU mel, 1: dithered PCM → GPU mel, 2: ignore_eos, 3: + budgets */
        memset(sc, 0, sizeof *sc);
        rq.keep_logits = 0;
        rq.keep_features = rq.keep_encoder = 1;
        rq.dither = pass == 1;
        rq.ignore_eos = pass >= 2;
        rq.row_max_new_tokens = pass == 3 ? budget : NULL;
        CT_ASSERT_OK(ct_asr_gpu_transcribe(&g, (const float *const *)clips, n, NCLIPS, &rq, &r));
        /* three prompt groups in first-appearance order: en {0,2,4}, de {1,5}, fr {3} */
        assert_int_equal(sc->calls, 3);
        assert_int_equal(sc->batch[0], 3);
        assert_int_equal(sc->batch[1], 2);
        assert_int_equal(sc->batch[2], 1);
        const int order[NCLIPS] = {0, 2, 4, 1, 5, 3}, call_of[NCLIPS] = {0, 1, 0, 2, 0, 1};
        for (int c = 0; c < 3; c++) {
            assert_int_equal(sc->got_pcm[c], 1); /* the mel stays on the GPU, dithered or not */
            int32_t want[64];
            int P;
            CT_ASSERT_OK(ct_tokenizer_prompt(tok, c == 0 ? "en" : c == 1 ? "de" : "fr", 1, want, 64, &P));
            assert_int_equal(sc->P[c], P);
            assert_memory_equal(sc->prompt[c], want, sizeof(int32_t) * P);
        }
        assert_true(r.seconds_encoder > 0.74 && r.seconds_encoder < 0.76); /* 3 calls × 0.25 s */
        assert_true(r.seconds_decoder > 1.49 && r.seconds_decoder < 1.51);
        for (int i = 0; i < NCLIPS; i++) {
            const ct_asr_clip *c = &r.clips[i];
            int32_t want[64];
            int k = scripted_tokens(n[i], pass == 3 ? budget[i] : MAXNEW, pass >= 2, want);
            assert_int_equal(c->n_tokens, k);
            if (pass == 3) assert_int_equal(k, budget[i]);
            assert_memory_equal(c->tokens, want, sizeof(int32_t) * k);
            assert_int_equal(c->stop, want[k - 1] == EOS && pass < 2 ? CT_STOP_EOS : CT_STOP_MAX_TOKENS);
            char *text;
            CT_ASSERT_OK(ct_tokenizer_decode(tok, c->tokens, c->n_tokens, &text));
            assert_string_equal(text, c->text);
            free(text);
            assert_int_equal(c->feature_frames, (int)(n[i] / 160));
            assert_int_equal(c->encoder_frames, ct_gpu_engine_encoder_frames((int)(n[i] / 160)));
            float nn = (float)n[i];
            assert_true(c->encoder[(size_t)1 * 64 + 5] == nn + 1 + 0.001f * 5);
            /* the rows the engine got: clip i is row `row` of call `cl` */
            int cl = call_of[i], row = 0;
            while (order[row] != i) row++;
            row -= cl == 0 ? 0 : cl == 1 ? 3 : 5;
            const float *got = sc->pcm_seen[cl];
            for (int j = 0; j < row; j++) got += n[order[j + (cl == 0 ? 0 : cl == 1 ? 3 : 5)]];
            assert_memory_equal(got, pass == 1 ? dithered[i] : clips[i], sizeof(float) * n[i]);
            if (pass == 1) assert_memory_not_equal(got, clips[i], sizeof(float) * n[i]);
            /* downloaded from the (scripted) GPU mel */
            assert_true(c->features[(size_t)2 * 128 + 3] == nn - 2 - 0.01f * 3);
        }
        ct_asr_result_free(&r);
        for (int c = 0; c < 3; c++) free(sc->features_seen[c]), free(sc->pcm_seen[c]);
    }
    for (int i = 0; i < NCLIPS; i++) free(clips[i]), free(dithered[i]);
    scripted_close(&x);
}

/* A dithered batch with a clip the GPU mel cannot take (< 320 samples: the
 * last fixed window of a file under --vad none) takes the CPU mel for the
 * whole batch: the engine gets features, not PCM, equal bit for bit to the
 * CPU path's dithered features of the batch; the same batch undithered
 * would reach the engine as PCM (and fail there on a real GPU). */
static void test_short_clip_dither_takes_cpu_mel(void **state) {
    (void)state;
    scripted x;
    scripted_open(&x);
    script *sc = &x.sc;
    float *full;
    size_t nfull;
    read_wav(CT_FIXTURE("audio/c1_en_us_3s.wav"), &full, &nfull);
    const float *clips[2] = {full, full + 1000};
    size_t n[2] = {nfull, 200};
    ct_asr_gpu_ctx g = {x.e, x.tok, x.mel, &x.hp, EOS, PAD, NULL};
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = MAXNEW;
    rq.dither = 1;
    ct_asr_result r;
    CT_ASSERT_OK(ct_asr_gpu_transcribe(&g, clips, n, 2, &rq, &r));
    assert_int_equal(sc->calls, 1);
    assert_int_equal(sc->got_pcm[0], 0);
    int T = ct_gpu_engine_feature_frames(nfull), L[2];
    assert_int_equal(sc->T_seen[0], T);
    float *want = malloc(sizeof(float) * 2 * (size_t)T * 128);
    CT_ASSERT_OK(ct_mel_compute_batch(x.mel, clips, n, 2, 1, want, T, L));
    assert_memory_equal(sc->features_seen[0], want, sizeof(float) * 2 * (size_t)T * 128);
    assert_int_equal(r.clips[1].feature_frames, L[1]);
    ct_asr_result_free(&r);
    free(sc->features_seen[0]);
    /* undithered: PCM to the engine as before */
    memset(sc, 0, sizeof *sc);
    rq.dither = 0;
    CT_ASSERT_OK(ct_asr_gpu_transcribe(&g, clips, n, 2, &rq, &r));
    assert_int_equal(sc->got_pcm[0], 1);
    ct_asr_result_free(&r);
    free(sc->pcm_seen[0]);
    free(want);
    free(full);
    scripted_close(&x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_refused_without_gpu),
        cmocka_unit_test(test_inspect_refused_without_gpu),
        cmocka_unit_test(test_fixture_batch_on_gpu),
        cmocka_unit_test(test_host_side_with_scripted_engine),
        cmocka_unit_test(test_short_clip_dither_takes_cpu_mel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
