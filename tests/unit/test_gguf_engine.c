/* test_gguf_engine.c — a GGUF written by the converter and the safetensors
 * checkpoint it came from give identical engine outputs (issue 6): the
 * fixture models tiny-hf (f32) and tiny-nemo (bf16) are converted to GGUF and
 * both run through the encoder and greedy decoding on two reference clips;
 * encoder outputs, tokens and the logits of every step must be bit-identical,
 * and the tokens must be the reference's (so the run is a meaningful one).
 * And the round trip safetensors → GGUF → safetensors → engine (issue 17):
 * for both layouts and both tokenizer types (Unigram, BPE) the whole engine
 * (ct_asr: mel, encoder, decoding, text) gives bit-identical features,
 * encoder outputs, logits, tokens and text on the converted-back directory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/asr.h"
#include "engine_run.h"
#include "fixture_io.h"
#include "model/checkpoint.h"
#include "model/convert.h"
#include "model/safetensors.h"
#include "model_testutil.h"
#include "testutil.h"

#define B 2
#define MAX_NEW 12

typedef struct out {
    int Te, enc_len[B], d;
    float *enc;
    ct_generate_row rows[B];
} out;

static void run_dt(const char *model, ct_dtype wdt, const ct_safetensors *ref, out *o) {
    const ct_st_tensor *pt = ct_st_find(ref, "prompt");
    assert_non_null(pt);
    int P = (int)pt->shape[0];
    int32_t prompt[16];
    memcpy(prompt, pt->data, sizeof(int32_t) * (size_t)P);
    /* clips 0 and 1, padded to the longer */
    int len[B], T = 0, n_mels = 0;
    float *f[B];
    for (int b = 0; b < B; b++) {
        char nm[64];
        snprintf(nm, sizeof nm, "features.nodither.%d", b);
        const ct_st_tensor *t = ct_st_find(ref, nm);
        assert_non_null(t);
        len[b] = (int)t->shape[0];
        n_mels = (int)t->shape[1];
        f[b] = malloc(sizeof(float) * (size_t)t->numel);
        CT_ASSERT_OK(ct_st_tensor_to_f32(t, f[b], (size_t)t->numel));
        if (len[b] > T) T = len[b];
    }
    float *feats = calloc((size_t)B * T * n_mels, sizeof(float));
    for (int b = 0; b < B; b++) {
        memcpy(feats + (size_t)b * T * n_mels, f[b], sizeof(float) * (size_t)len[b] * n_mels);
        free(f[b]);
    }
    ct_test_engine_run run = {"cpu", model, wdt, MAX_NEW, 0, 0, 0, NULL};
    ct_test_run_engine(&run, feats, len, B, T, n_mels, prompt, P, o->enc_len, &o->Te, &o->d, &o->enc, o->rows);
    free(feats);
}

static void run(const char *model, const ct_safetensors *ref, out *o) { run_dt(model, CT_DTYPE_F32, ref, o); }

static void assert_identical(const out *a, const out *b, int vocab) {
    assert_int_equal(a->Te, b->Te);
    assert_memory_equal(a->enc_len, b->enc_len, sizeof a->enc_len);
    if (memcmp(a->enc, b->enc, sizeof(float) * (size_t)B * a->Te * a->d)) fail_msg("encoder outputs differ");
    for (int r = 0; r < B; r++) {
        assert_int_equal(a->rows[r].n_tokens, b->rows[r].n_tokens);
        assert_int_equal(a->rows[r].stop, b->rows[r].stop);
        assert_memory_equal(a->rows[r].tokens, b->rows[r].tokens, sizeof(int32_t) * (size_t)a->rows[r].n_tokens);
        if (memcmp(a->rows[r].logits, b->rows[r].logits, sizeof(float) * (size_t)a->rows[r].n_tokens * vocab))
            fail_msg("row %d: logits differ", r);
    }
}

static void free_out(out *o) {
    free(o->enc);
    ct_generate_rows_free(o->rows, B);
}

static void check_layout(const char *fixture) {
    ct_safetensors *ref;
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("reference.safetensors"), &ref));
    const char *dir = ct_test_tmpdir();
    char g[4096];
    snprintf(g, sizeof g, "%s/m.gguf", dir);
    CT_ASSERT_OK(ct_convert_to_gguf(CT_FIXTURE(fixture), g, CT_CONVERT_KEEP_DTYPE));
    out a, b;
    run(CT_FIXTURE(fixture), ref, &a);
    run(g, ref, &b);
    ct_checkpoint *ck;
    CT_ASSERT_OK(ct_checkpoint_open(g, &ck));
    int vocab = ct_checkpoint_config(ck)->vocab_size;
    ct_checkpoint_free(ck);
    assert_identical(&a, &b, vocab);
    /* the run is the reference's: same greedy tokens (up to MAX_NEW) */
    for (int r = 0; r < B; r++) {
        char nm[32];
        snprintf(nm, sizeof nm, "tokens.%d", r);
        const ct_st_tensor *t = ct_st_find(ref, nm);
        assert_non_null(t);
        int n = (int)t->shape[0] < MAX_NEW ? (int)t->shape[0] : MAX_NEW;
        assert_true(b.rows[r].n_tokens >= n);
        assert_memory_equal(b.rows[r].tokens, t->data, sizeof(int32_t) * (size_t)n);
    }
    free_out(&a);
    free_out(&b);
    ct_st_free(ref);
    ct_test_rmtree(dir);
}

static void test_hf_f32(void **state) {
    (void)state;
    check_layout("tiny-hf");
}

static void test_nemo_bf16(void **state) {
    (void)state;
    check_layout("tiny-nemo");
}

/* ---- safetensors → GGUF → safetensors → engine ----------------------------- */

static void transcribe(const char *dir, ct_asr_result *res) {
    static const char *clips[2] = {"audio/c0_tones_1s.wav", "audio/c1_en_us_3s.wav"};
    float *x[2];
    size_t n[2];
    for (int b = 0; b < 2; b++) x[b] = ct_test_read_audio(CT_FIXTURE(clips[b]), &n[b]);
    ct_asr *asr;
    CT_ASSERT_OK(ct_asr_open(dir, NULL, &asr));
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = 24;
    rq.keep_features = rq.keep_encoder = rq.keep_logits = 1;
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)x, n, 2, &rq, res));
    ct_asr_free(asr);
    for (int b = 0; b < 2; b++) free(x[b]);
}

static void assert_same_result(const ct_asr_result *a, const ct_asr_result *b, int vocab, int n_mels, int d_enc) {
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        const ct_asr_clip *x = &a->clips[i], *y = &b->clips[i];
        assert_string_equal(x->text, y->text);
        assert_int_equal(x->n_tokens, y->n_tokens);
        assert_true(x->n_tokens > 0);
        assert_memory_equal(x->tokens, y->tokens, sizeof(int32_t) * (size_t)x->n_tokens);
        assert_int_equal(x->stop, y->stop);
        assert_int_equal(x->feature_frames, y->feature_frames);
        assert_int_equal(x->encoder_frames, y->encoder_frames);
        if (memcmp(x->features, y->features, sizeof(float) * (size_t)x->feature_frames * n_mels))
            fail_msg("clip %d: features differ", i);
        if (memcmp(x->encoder, y->encoder, sizeof(float) * (size_t)x->encoder_frames * d_enc))
            fail_msg("clip %d: encoder outputs differ", i);
        if (memcmp(x->logits, y->logits, sizeof(float) * (size_t)x->n_tokens * vocab))
            fail_msg("clip %d: logits differ", i);
    }
}

/* fixture + tokenizer → GGUF → directory: both run the same. Returns the
 * original run's texts joined, for comparing tokenizer types. */
static char *round_trip(const char *fixture, const char *tokenizer) {
    const char *src = ct_test_model_copy(CT_FIXTURE(fixture), CT_FIXTURE(tokenizer));
    const char *work = ct_test_tmpdir();
    char g[4096], back[4096];
    snprintf(g, sizeof g, "%s/m.gguf", work);
    snprintf(back, sizeof back, "%s/back", work);
    CT_ASSERT_OK(ct_convert_to_gguf(src, g, CT_CONVERT_KEEP_DTYPE));
    CT_ASSERT_OK(ct_convert_from_gguf(g, back, CT_CONVERT_KEEP_DTYPE));
    ct_asr_result a, b;
    transcribe(src, &a);
    transcribe(back, &b);
    ct_checkpoint *ck;
    CT_ASSERT_OK(ct_checkpoint_open(back, &ck));
    const ct_model_config *c = ct_checkpoint_config(ck);
    assert_same_result(&a, &b, c->vocab_size, c->n_mels, c->enc_d_model);
    ct_checkpoint_free(ck);
    size_t len = strlen(a.clips[0].text) + strlen(a.clips[1].text) + 2;
    char *texts = malloc(len);
    snprintf(texts, len, "%s|%s", a.clips[0].text, a.clips[1].text);
    ct_asr_result_free(&a);
    ct_asr_result_free(&b);
    ct_test_rmtree(src);
    ct_test_rmtree(work);
    return texts;
}

static void test_round_trip_engine(void **state) {
    (void)state;
    const char *layouts[2] = {"tiny-hf", "tiny-nemo"};
    for (int l = 0; l < 2; l++) {
        char *uni = round_trip(layouts[l], "tokenizer.json");
        char *bpe = round_trip(layouts[l], "tokenizer_bpe.json");
        /* the two tokenizer types are one vocabulary: the same text */
        assert_string_equal(uni, bpe);
        free(uni);
        free(bpe);
    }
}

/* Issue 10 item 7: a .gguf file is accepted wherever a model directory is.
 * ct_asr_open on the converted file (before: it looked for tokenizer.json
 * "inside" the file and failed) transcribes to the same tokens and text as
 * the directory, its tokenizer coming from the GGUF's own vocabulary. */
static void test_asr_open_gguf(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char g[4096];
    snprintf(g, sizeof g, "%s/m.gguf", dir);
    CT_ASSERT_OK(ct_convert_to_gguf(CT_FIXTURE("tiny-hf"), g, CT_CONVERT_KEEP_DTYPE));
    enum { N = 16000 };
    float *clip = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) clip[i] = 0.3f * sinf(0.05f * (float)i) + 0.1f * sinf(0.31f * (float)i);
    const float *clips[1] = {clip};
    size_t n[1] = {N};
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = 20;
    ct_asr_result r[2];
    const char *models[2] = {CT_FIXTURE("tiny-hf"), g};
    for (int m = 0; m < 2; m++) {
        ct_asr *asr;
        CT_ASSERT_OK(ct_asr_open(models[m], NULL, &asr));
        memset(&r[m], 0, sizeof r[m]);
        CT_ASSERT_OK(ct_asr_transcribe(asr, clips, n, 1, &rq, &r[m]));
        ct_asr_free(asr);
    }
    assert_true(r[0].clips[0].n_tokens > 0);
    assert_int_equal(r[0].clips[0].n_tokens, r[1].clips[0].n_tokens);
    assert_memory_equal(r[0].clips[0].tokens, r[1].clips[0].tokens, sizeof(int32_t) * (size_t)r[0].clips[0].n_tokens);
    assert_string_equal(r[0].clips[0].text, r[1].clips[0].text);
    ct_asr_result_free(&r[0]);
    ct_asr_result_free(&r[1]);
    free(clip);
    ct_test_rmtree(dir);
}

/* Issue 16: a Q8_0 GGUF (convert --dtype q8_0 of tiny-hf, f32) runs on the
 * CPU with its matrices used in place from the mapping (Q8_0, borrowed,
 * no copy), and comes within the int8 bound of the f32 model: encoder
 * outputs and the first step's logits ≤ 3e-2 relative L2 (measured 8.6e-3,
 * 1.6e-2), tokens equal up to a departure at a near tie of the f32 logits
 * (< 0.5: int8's margin in test_engine's test_int8_weights, twice the
 * CUDA issue's 0.25; measured: a departure at a gap of 0.29). The CrispASR-style
 * fixture (gguf-py's Q8_0) opens the same way. */
static void test_q8_0_gguf_engine(void **state) {
    (void)state;
    ct_safetensors *ref;
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("reference.safetensors"), &ref));
    const char *dir = ct_test_tmpdir();
    char g[4096];
    snprintf(g, sizeof g, "%s/q8.gguf", dir);
    CT_ASSERT_OK(ct_convert_to_gguf(CT_FIXTURE("tiny-hf"), g, CT_DTYPE_Q8_0));
    ct_checkpoint *ck;
    CT_ASSERT_OK(ct_checkpoint_open(g, &ck));
    const int vocab = ct_checkpoint_config(ck)->vocab_size;
    size_t q8_bytes = 0;
    for (size_t i = 0; i < ct_checkpoint_count(ck); i++) {
        const ct_st_tensor *t = ct_checkpoint_at(ck, i);
        /* the embedding tables are dequantised (looked up, not multiplied) */
        if (t->dtype == CT_DTYPE_Q8_0 && !strstr(t->name, "_embedding.")) q8_bytes += t->nbytes;
        if (t->ndim == 1) assert_int_equal(t->dtype, CT_DTYPE_F32);
    }
    assert_int_equal(ct_checkpoint_tensor(ck, "encoder.layers.0.feed_forward1.linear1.weight")->dtype, CT_DTYPE_Q8_0);
    assert_int_equal(ct_checkpoint_tensor(ck, "encoder.layers.0.conv.pointwise_conv1.weight")->dtype, CT_DTYPE_F16);
    ct_checkpoint_free(ck);
    ct_asr *asr;
    CT_ASSERT_OK(ct_asr_open(g, NULL, &asr));
    const ct_asr_weights *w = ct_asr_model_weights(asr);
    assert_int_equal(w->enc[0].ff1_w1.dtype, CT_DTYPE_Q8_0);
    assert_int_equal(w->dec[0].sq_w.dtype, CT_DTYPE_Q8_0);
    assert_int_equal(w->head_w.dtype, CT_DTYPE_Q8_0);
    assert_null(w->enc[0].ff1_w1.owner); /* a view of the mapping */
    assert_true(w->borrowed_bytes >= q8_bytes);
    assert_int_equal(w->tok_emb.dtype, CT_DTYPE_F32); /* the embedding table, dequantised */
    ct_asr_free(asr);
    out a, b;
    run(CT_FIXTURE("tiny-hf"), ref, &a);
    run(g, ref, &b);
    assert_int_equal(a.Te, b.Te);
    double e = 0.0, n2 = 0.0;
    for (size_t i = 0; i < (size_t)B * a.Te * a.d; i++) {
        e += ((double)a.enc[i] - b.enc[i]) * ((double)a.enc[i] - b.enc[i]);
        n2 += (double)a.enc[i] * a.enc[i];
    }
    print_message("Q8_0 GGUF vs f32: encoder relative L2 %.3g\n", sqrt(e / n2));
    assert_true(sqrt(e / n2) <= 3e-2);
    assert_true(sqrt(e / n2) > 0.0);
    for (int r = 0; r < B; r++) {
        assert_true(b.rows[r].n_tokens > 0);
        const double l0 = ct_rel_l2(b.rows[r].logits, a.rows[r].logits, (size_t)vocab);
        print_message("row %d: first-step logits relative L2 %.3g\n", r, l0);
        assert_true(l0 <= 3e-2);
        ct_test_near_tie(r, b.rows[r].tokens, b.rows[r].n_tokens, a.rows[r].tokens, a.rows[r].n_tokens,
                         a.rows[r].logits, vocab, 0.5);
    }
    /* the safetensors checkpoint with weight dtype Q8_0: quantised per block
     * at load, the default Q8_0 plan (v, out and pointwise_conv2 kept f32
     * here), within the same bounds (measured 6.0e-3) */
    out c;
    run_dt(CT_FIXTURE("tiny-hf"), CT_DTYPE_Q8_0, ref, &c);
    e = 0.0;
    for (size_t i = 0; i < (size_t)B * a.Te * a.d; i++) e += ((double)a.enc[i] - c.enc[i]) * ((double)a.enc[i] - c.enc[i]);
    print_message("Q8_0 at load vs f32: encoder relative L2 %.3g\n", sqrt(e / n2));
    assert_true(sqrt(e / n2) <= 3e-2 && sqrt(e / n2) > 0.0);
    for (int r = 0; r < B; r++) {
        assert_true(ct_rel_l2(c.rows[r].logits, a.rows[r].logits, (size_t)vocab) <= 3e-2);
        ct_test_near_tie(r, c.rows[r].tokens, c.rows[r].n_tokens, a.rows[r].tokens, a.rows[r].n_tokens,
                         a.rows[r].logits, vocab, 0.5);
    }
    free_out(&c);
    ct_asr_options ao = ct_asr_default_options();
    ao.weight_dtype = CT_DTYPE_Q8_0;
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), &ao, &asr));
    w = ct_asr_model_weights(asr);
    assert_int_equal(w->enc[0].ff1_w1.dtype, CT_DTYPE_Q8_0);
    assert_int_equal(w->enc[0].wq.dtype, CT_DTYPE_Q8_0);
    assert_int_equal(w->enc[0].wv.dtype, CT_DTYPE_F32);
    assert_int_equal(w->enc[0].pw1_w.dtype, CT_DTYPE_Q8_0);
    assert_int_equal(w->enc[0].pw2_w.dtype, CT_DTYPE_F32);
    assert_int_equal(w->dec[0].cq_w.dtype, CT_DTYPE_Q8_0);
    assert_int_equal(w->head_w.dtype, CT_DTYPE_F32); /* the vocabulary projection stays float */
    assert_non_null(w->enc[0].ff1_w1.owner);          /* made at load */
    ct_asr_free(asr);
    free_out(&a);
    free_out(&b);
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("gguf/crisp-tiny-q8_0.gguf"), NULL, &asr));
    assert_int_equal(ct_asr_model_weights(asr)->enc[0].wq.dtype, CT_DTYPE_Q8_0);
    ct_asr_free(asr);
    ct_st_free(ref);
    ct_test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf_f32),
        cmocka_unit_test(test_q8_0_gguf_engine),
        cmocka_unit_test(test_nemo_bf16),
        cmocka_unit_test(test_round_trip_engine),
        cmocka_unit_test(test_asr_open_gguf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
