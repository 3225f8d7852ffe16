/* engine_run.h — the tests' one copy of the engine pipeline on ready
 * features (test_engine, test_gguf_engine): load a checkpoint onto a backend,
 * size the arenas as asr.c does, encode a padded batch, greedy-decode it with
 * every step's logits kept. Header-only like fixture_io.h. */
#ifndef CT_TEST_ENGINE_RUN_H
#define CT_TEST_ENGINE_RUN_H

#include <stdlib.h>
#include <string.h>

#include "asr/encoder.h"
#include "asr/generate.h"
#include "model/checkpoint.h"
#include "testutil.h"

/* One run's results for B rows: enc (B, Te, d_enc) is a host copy (free()),
 * rows[] as ct_generate_greedy fills them (ct_generate_rows_free). */
typedef struct ct_test_engine_run {
    const char *backend; /* "cpu" or "cpu-ref" */
    const char *model;   /* checkpoint folder or .gguf */
    ct_dtype wdt;        /* weight storage on the backend */
    int max_new, ignore_eos;
    int isa_limit;       /* ct_backend_options.isa_limit (0: what the CPU has) */
    int dnnl_bf16;       /* ct_backend_options.dnnl_bf16 (0: native bf16 where the CPU has it, -1: never) */
    const ct_q8_plan *q8; /* Q8: the precision plan (NULL: the default) */
} ct_test_engine_run;

/* feats (B, T, n_mels) padded, feat_len (B); the prompt (P ids) is the same
 * for every row. Outputs: enc_len (B), *Te, *d_enc, *enc, rows (B). The
 * scratch arena must be rewound to empty when decoding ends. */
static inline void ct_test_run_engine(const ct_test_engine_run *run, const float *feats, const int *feat_len,
                                      int B, int T, int n_mels, const int32_t *prompt, int P, int *enc_len,
                                      int *Te, int *d_enc, float **enc_out, ct_generate_row *rows) {
    ct_backend *be;
    ct_backend_options bo = ct_backend_default_options();
    bo.isa_limit = run->isa_limit;
    bo.dnnl_bf16 = run->dnnl_bf16;
    CT_ASSERT_OK(ct_backend_create(run->backend, &bo, &be));
    ct_checkpoint *ck;
    CT_ASSERT_OK(ct_checkpoint_open(run->model, &ck));
    ct_asr_weights w;
    /* with a plan the kept tensors may be used in place: the file lives until the end */
    if (run->q8) CT_ASSERT_OK(ct_asr_weights_map_checkpoint_plan(be, ck, run->wdt, run->q8, &w));
    else CT_ASSERT_OK(ct_asr_weights_from_checkpoint(be, ck, run->wdt, &w));
    ct_asr_hparams hp = w.hp;
    assert_int_equal(hp.n_mels, n_mels);

    ct_arena act, ws;
    int Smax = ct_generate_cache_positions(&hp, P, run->max_new);
    int Te0 = ct_encoder_frames(T);
    CT_ASSERT_OK(ct_backend_arena_create(
        be, ct_encoder_act_bytes(&hp, B, T) + ct_decoder_state_bytes(&hp, B, Te0, Smax), &act));
    size_t wsb = ct_encoder_ws_bytes(&hp, B, T, 8);
    size_t dsb = ct_decoder_step_bytes(&hp, B, P, Te0, Smax, 8) + sizeof(float) * (size_t)B * hp.vocab + 4096;
    CT_ASSERT_OK(ct_backend_arena_create(be, wsb > dsb ? wsb : dsb, &ws));
    float *enc;
    CT_ASSERT_OK(ct_encoder_forward(&w, be, &act, &ws, feats, feat_len, B, T, &enc, enc_len, Te));
    *d_enc = hp.d_enc;
    *enc_out = malloc(sizeof(float) * (size_t)B * *Te * hp.d_enc);
    memcpy(*enc_out, enc, sizeof(float) * (size_t)B * *Te * hp.d_enc);
    ct_decoder_state st_dec;
    CT_ASSERT_OK(ct_decoder_prepare(&w, be, &act, &ws, enc, enc_len, B, *Te, Smax, &st_dec));
    int32_t *prompts = malloc(sizeof(int32_t) * (size_t)B * P);
    for (int b = 0; b < B; b++) memcpy(prompts + (size_t)b * P, prompt, sizeof(int32_t) * (size_t)P);
    ct_generate_options go = {.max_new_tokens = run->max_new, .eos_id = 3, .keep_logits = 1,
                              .ignore_eos = run->ignore_eos};
    CT_ASSERT_OK(ct_generate_greedy(&w, be, &st_dec, &ws, prompts, P, &go, rows));
    assert_int_equal(ws.used, 0);
    free(prompts);
    ct_decoder_state_free(&st_dec);
    ct_backend_arena_free(be, &act);
    ct_backend_arena_free(be, &ws);
    ct_asr_weights_free(&w);
    ct_checkpoint_free(ck);
    ct_backend_free(be);
}

#endif
