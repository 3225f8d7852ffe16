/* test_gguf_engine.c — a GGUF written by the converter and the safetensors
 * checkpoint it came from give identical engine outputs (issue 6): the
 * fixture models tiny-hf (f32) and tiny-nemo (bf16) are converted to GGUF and
 * both run through the encoder and greedy decoding on two reference clips;
 * encoder outputs, tokens and the logits of every step must be bit-identical,
 * and the tokens must be the reference's (so the run is a meaningful one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/encoder.h"
#include "asr/generate.h"
#include "model/checkpoint.h"
#include "model/convert.h"
#include "model/safetensors.h"
#include "testutil.h"

#define B 2
#define MAX_NEW 12

typedef struct out {
    int Te, enc_len[B], d;
    float *enc;
    ct_generate_row rows[B];
} out;

static void run(const char *model, const ct_safetensors *ref, out *o) {
    ct_backend *be;
    CT_ASSERT_OK(ct_backend_create("cpu", NULL, &be));
    ct_checkpoint *ck;
    CT_ASSERT_OK(ct_checkpoint_open(model, &ck));
    ct_asr_weights w;
    CT_ASSERT_OK(ct_asr_weights_from_checkpoint(be, ck, CT_DTYPE_F32, &w));
    ct_checkpoint_free(ck);
    ct_asr_hparams hp = w.hp;
    const ct_st_tensor *pt = ct_st_find(ref, "prompt");
    assert_non_null(pt);
    int P = (int)pt->shape[0];
    int32_t prompt[16];
    memcpy(prompt, pt->data, sizeof(int32_t) * (size_t)P);
    /* clips 0 and 1, padded to the longer */
    int len[B], T = 0;
    float *f[B];
    for (int b = 0; b < B; b++) {
        char nm[64];
        snprintf(nm, sizeof nm, "features.nodither.%d", b);
        const ct_st_tensor *t = ct_st_find(ref, nm);
        assert_non_null(t);
        len[b] = (int)t->shape[0];
        f[b] = malloc(sizeof(float) * (size_t)t->numel);
        CT_ASSERT_OK(ct_st_tensor_to_f32(t, f[b], (size_t)t->numel));
        if (len[b] > T) T = len[b];
    }
    float *feats = calloc((size_t)B * T * hp.n_mels, sizeof(float));
    for (int b = 0; b < B; b++) {
        memcpy(feats + (size_t)b * T * hp.n_mels, f[b], sizeof(float) * (size_t)len[b] * hp.n_mels);
        free(f[b]);
    }
    ct_arena act, ws;
    int Smax = ct_generate_cache_positions(&hp, P, MAX_NEW);
    int Te0 = ct_encoder_frames(T);
    CT_ASSERT_OK(ct_backend_arena_create(be, ct_encoder_act_bytes(&hp, B, T) + ct_decoder_state_bytes(&hp, B, Te0, Smax), &act));
    size_t wsb = ct_encoder_ws_bytes(&hp, B, T, 8);
    size_t dsb = ct_decoder_step_bytes(&hp, B, P, Te0, Smax, 8) + sizeof(float) * (size_t)B * hp.vocab + 4096;
    CT_ASSERT_OK(ct_backend_arena_create(be, wsb > dsb ? wsb : dsb, &ws));
    float *enc;
    CT_ASSERT_OK(ct_encoder_forward(&w, be, &act, &ws, feats, len, B, T, &enc, o->enc_len, &o->Te));
    o->d = hp.d_enc;
    o->enc = malloc(sizeof(float) * (size_t)B * o->Te * hp.d_enc);
    memcpy(o->enc, enc, sizeof(float) * (size_t)B * o->Te * hp.d_enc);
    ct_decoder_state sd;
    CT_ASSERT_OK(ct_decoder_prepare(&w, be, &act, &ws, enc, o->enc_len, B, o->Te, Smax, &sd));
    int32_t prompts[B * 16];
    for (int b = 0; b < B; b++) memcpy(prompts + b * P, prompt, sizeof(int32_t) * (size_t)P);
    ct_generate_options go = {.max_new_tokens = MAX_NEW, .eos_id = 3, .keep_logits = 1};
    CT_ASSERT_OK(ct_generate_greedy(&w, be, &sd, &ws, prompts, P, &go, o->rows));
    free(feats);
    ct_decoder_state_free(&sd);
    ct_backend_arena_free(be, &act);
    ct_backend_arena_free(be, &ws);
    ct_asr_weights_free(&w);
    ct_backend_free(be);
}

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf_f32),
        cmocka_unit_test(test_nemo_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
