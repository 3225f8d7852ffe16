/* test_generate_forced.c — teacher forcing in the greedy loop (generate.c,
 * ct_generate_options.forced), on cpu-ref with the tiny fixture model, and
 * on cuda (bf16, looser bounds, no argmax check) where a device is found:
 * forcing a row's own greedy tokens reproduces them and their logits bit for
 * bit; forcing another sequence records at step g the logits that a fresh
 * decoder run with prompt + forced[0..g−1] as one prompt gives at its last
 * position (the oracle: no cache reuse, no incremental steps), and their
 * argmax; EOS does not stop a forced row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/encoder.h"
#include "asr/generate.h"
#include "compute/ops.h"
#include "model/checkpoint.h"
#include "encoded_fixture.h"
#include "testutil.h"

enum { B = 2, P = 4, MAXNEW = 6, EOS = 3 };

typedef ct_test_encoded fixture;
_Static_assert((int)B == (int)CT_TEST_ENC_ROWS, "the fixture encodes CT_TEST_ENC_ROWS rows");

static const char *g_backend = "cpu-ref";

static int on_cuda(void) { return !strcmp(g_backend, "cuda"); }

static void setup(fixture *f) {
    ct_test_encoded_load(f, g_backend);
    const ct_asr_hparams *hp = &f->w.hp;
    const int Te = ct_encoder_frames(CT_TEST_ENC_T);
    ct_test_encoded_encode(f, 8 * ct_decoder_state_bytes(hp, B, Te, P + MAXNEW + 1),
                           ct_decoder_step_bytes(hp, B, P + MAXNEW + 1, Te, P + MAXNEW + 1, 8) + sizeof(float) * B * hp->vocab, 2, 99);
}

static void teardown(fixture *f) { ct_test_encoded_teardown(f); }

static const int32_t PROMPT[P] = {13, 7, 4, 16};

static void run(fixture *f, const int32_t *forced, ct_generate_row *rows) {
    size_t mark = ct_arena_mark(&f->act);
    ct_decoder_state st;
    CT_ASSERT_OK(ct_decoder_prepare(&f->w, f->be, &f->act, &f->ws, f->enc, f->enc_len, B, f->Te, P + MAXNEW, &st));
    int32_t prompts[B * P];
    for (int b = 0; b < B; b++) memcpy(prompts + b * P, PROMPT, sizeof PROMPT);
    ct_generate_options go = {.max_new_tokens = MAXNEW, .eos_id = EOS, .keep_logits = 1, .forced = forced};
    CT_ASSERT_OK(ct_generate_greedy(&f->w, f->be, &st, &f->ws, prompts, P, &go, rows));
    ct_decoder_state_free(&st);
    ct_arena_rewind(&f->act, mark);
}

static void test_forcing_own_tokens_changes_nothing(void **state) {
    (void)state;
    fixture f;
    setup(&f);
    const int V = f.w.hp.vocab;
    ct_generate_row free_rows[B], forced_rows[B];
    run(&f, NULL, free_rows);
    int32_t forced[B * MAXNEW];
    for (int b = 0; b < B; b++)
        for (int g = 0; g < MAXNEW; g++) /* past its end a row's input no longer matters: any valid id */
            forced[b * MAXNEW + g] = g < free_rows[b].n_tokens ? free_rows[b].tokens[g] : 5;
    run(&f, forced, forced_rows);
    /* on cuda the GEMMs' algorithm depends on the rows still running: compare
     * the steps in which both runs had every row active (the same shapes) */
    int common = MAXNEW;
    for (int b = 0; b < B; b++)
        if (free_rows[b].n_tokens < common) common = free_rows[b].n_tokens;
    for (int b = 0; b < B; b++) {
        int n = on_cuda() ? common : free_rows[b].n_tokens;
        assert_true(forced_rows[b].n_tokens >= n);
        assert_memory_equal(forced_rows[b].tokens, free_rows[b].tokens, sizeof(int32_t) * n);
        assert_memory_equal(forced_rows[b].logits, free_rows[b].logits, sizeof(float) * n * V);
        assert_int_equal(forced_rows[b].n_tokens, MAXNEW); /* EOS does not stop a forced row */
        assert_int_equal(forced_rows[b].stop, CT_STOP_MAX_TOKENS);
    }
    ct_generate_rows_free(free_rows, B);
    ct_generate_rows_free(forced_rows, B);
    teardown(&f);
}

static void test_forced_logits_match_a_longer_prompt(void **state) {
    (void)state;
    fixture f;
    setup(&f);
    const int V = f.w.hp.vocab;
    int32_t forced[B * MAXNEW];
    for (int b = 0; b < B; b++)
        for (int g = 0; g < MAXNEW; g++) forced[b * MAXNEW + g] = 20 + 37 * b + 11 * g; /* not the model's choice */
    forced[1] = EOS; /* an EOS input does not stop the row */
    ct_generate_row rows[B];
    run(&f, forced, rows);
    float *oracle = malloc(sizeof(float) * B * V), *doracle = oracle;
    size_t wmark = ct_arena_mark(&f.act);
    if (on_cuda()) doracle = ct_arena_alloc(&f.act, sizeof(float) * B * V); /* device; copied back below */
    assert_non_null(doracle);
    for (int g = 0; g < MAXNEW; g++) {
        /* the oracle: prompt + forced[0..g−1] as one prompt of P + g tokens */
        int S = P + g, slot[B] = {0, 1};
        int32_t *ids = malloc(sizeof(int32_t) * B * S);
        for (int b = 0; b < B; b++) {
            memcpy(ids + b * S, PROMPT, sizeof PROMPT);
            for (int k = 0; k < g; k++) ids[b * S + P + k] = forced[b * MAXNEW + k];
        }
        size_t mark = ct_arena_mark(&f.act);
        ct_decoder_state st;
        CT_ASSERT_OK(ct_decoder_prepare(&f.w, f.be, &f.act, &f.ws, f.enc, f.enc_len, B, f.Te, P + MAXNEW, &st));
        CT_ASSERT_OK(ct_decoder_step(&f.w, f.be, &st, &f.ws, ids, slot, B, S, 0, doracle));
        if (doracle != oracle) CT_ASSERT_OK(f.be->ops->to_host(f.be, oracle, doracle, sizeof(float) * B * V));
        ct_decoder_state_free(&st);
        ct_arena_rewind(&f.act, mark);
        for (int b = 0; b < B; b++) {
            const float *got = rows[b].logits + (size_t)g * V, *want = oracle + (size_t)b * V;
            /* cpu-ref: the same float32 sums either way; cuda: bf16 activations
             * rounded at other places (a cache vs one long prompt) */
            double e = ct_rel_l2(got, want, (size_t)V), tol = on_cuda() ? 2e-2 : 1e-6;
            if (!(e <= tol)) fail_msg("row %d step %d: forced logits differ from the oracle (rel L2 %.3g)", b, g, e);
            if (on_cuda()) continue; /* the argmax may fall the other way at a near tie */
            int best = 0;
            for (int j = 1; j < V; j++)
                if (want[j] > want[best]) best = j;
            assert_int_equal(rows[b].tokens[g], best);
        }
        free(ids);
    }
    for (int b = 0; b < B; b++) assert_int_equal(rows[b].n_tokens, MAXNEW);
    ct_arena_rewind(&f.act, wmark);
    free(oracle);
    ct_generate_rows_free(rows, B);
    teardown(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forcing_own_tokens_changes_nothing),
        cmocka_unit_test(test_forced_logits_match_a_longer_prompt),
    };
    int r = cmocka_run_group_tests_name("cpu-ref", tests, NULL, NULL);
    int no_gpu;
    if (!ct_test_have_gpu("test_generate_forced on cuda", &no_gpu)) return r ? r : no_gpu;
    g_backend = "cuda";
    return r | cmocka_run_group_tests_name("cuda", tests, NULL, NULL);
}
