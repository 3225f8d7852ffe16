/* test_generate_device.c — the greedy loop with its state on the device
 * (asr/generate_dev.c, backend table version 4) against the host loop
 * (generate.c), on cpu-ref with the tiny fixture model (its steps run
 * eagerly: the CPU captures no graphs) and on cuda (eager and replayed as
 * a graph) where a device is found. Cases: EOS stopping one row early,
 * per-row budgets, teacher forcing, the position table ending first; and
 * the refusals (keep_logits, a forced id outside the vocabulary, a graph
 * on a backend without graphs). On cpu-ref the loops must agree exactly;
 * on cuda the graph must equal the eager device loop bit for bit, and both
 * the host loop over the steps in which every row still ran (afterwards
 * the host loop multiplies fewer rows, which cuBLASLt may round otherwise).
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

enum { B = 2, P = 4, MAXNEW = 6 };

typedef ct_test_encoded fixture;
_Static_assert((int)B == (int)CT_TEST_ENC_ROWS, "the fixture encodes CT_TEST_ENC_ROWS rows");

static const char *g_backend = "cpu-ref";

static int on_cuda(void) { return !strcmp(g_backend, "cuda"); }

static void setup(fixture *f) {
    ct_test_encoded_load(f, g_backend);
    const ct_asr_hparams *hp = &f->w.hp;
    const int Te = ct_encoder_frames(CT_TEST_ENC_T);
    ct_test_encoded_encode(f, 4 * ct_decoder_state_bytes(hp, B, Te, P + MAXNEW),
                           ct_decoder_step_bytes(hp, B, P, Te, P + MAXNEW, 8) + ct_generate_ws_bytes(hp, B, MAXNEW), 1, 7);
}

static void teardown(fixture *f) { ct_test_encoded_teardown(f); }

static const int32_t PROMPT[P] = {13, 7, 4, 16};

/* One greedy run; Smax limits the cache (P + MAXNEW normally). */
static ct_status run(fixture *f, ct_generate_options go, int Smax, ct_generate_row *rows) {
    size_t mark = ct_arena_mark(&f->act);
    ct_decoder_state st;
    CT_ASSERT_OK(ct_decoder_prepare(&f->w, f->be, &f->act, &f->ws, f->enc, f->enc_len, B, f->Te, Smax, &st));
    int32_t prompts[B * P];
    for (int b = 0; b < B; b++) memcpy(prompts + b * P, PROMPT, sizeof PROMPT);
    go.max_new_tokens = MAXNEW;
    size_t wmark = ct_arena_mark(&f->ws);
    ct_status s = ct_generate_greedy(&f->w, f->be, &st, &f->ws, prompts, P, &go, rows);
    assert_int_equal(ct_arena_mark(&f->ws), wmark); /* scratch given back */
    ct_decoder_state_free(&st);
    ct_arena_rewind(&f->act, mark);
    return s;
}

/* host loop vs device loop (eager, and graph where the backend has graphs) */
static void compare(fixture *f, ct_generate_options go, int Smax) {
    ct_generate_row host[B], dev[B], graph[B];
    go.loop = CT_LOOP_HOST;
    CT_ASSERT_OK(run(f, go, Smax, host));
    go.loop = CT_LOOP_DEVICE_EAGER;
    CT_ASSERT_OK(run(f, go, Smax, dev));
    int has_graph = ct_backend_has_graphs(f->be);
    go.loop = CT_LOOP_DEVICE;
    if (has_graph) CT_ASSERT_OK(run(f, go, Smax, graph));
    else assert_int_equal(run(f, go, Smax, graph), CT_ERR_UNSUPPORTED);
    int common = MAXNEW;
    for (int b = 0; b < B; b++)
        if (host[b].n_tokens < common) common = host[b].n_tokens;
    for (int b = 0; b < B; b++) {
        if (!on_cuda()) {
            assert_int_equal(dev[b].n_tokens, host[b].n_tokens);
            assert_int_equal(dev[b].stop, host[b].stop);
            assert_memory_equal(dev[b].tokens, host[b].tokens, sizeof(int32_t) * host[b].n_tokens);
        } else {
            assert_true(dev[b].n_tokens >= common);
            assert_memory_equal(dev[b].tokens, host[b].tokens, sizeof(int32_t) * common);
            if (!memcmp(dev[b].tokens, host[b].tokens, sizeof(int32_t) * host[b].n_tokens) &&
                dev[b].n_tokens == host[b].n_tokens)
                assert_int_equal(dev[b].stop, host[b].stop);
        }
        assert_null(dev[b].logits);
        if (has_graph) {
            assert_int_equal(graph[b].n_tokens, dev[b].n_tokens);
            assert_int_equal(graph[b].stop, dev[b].stop);
            assert_memory_equal(graph[b].tokens, dev[b].tokens, sizeof(int32_t) * dev[b].n_tokens);
        }
    }
    ct_generate_rows_free(host, B);
    ct_generate_rows_free(dev, B);
    if (has_graph) ct_generate_rows_free(graph, B);
}

static void test_eos_stops_one_row(void **state) {
    (void)state;
    fixture f;
    setup(&f);
    ct_generate_row rows[B];
    ct_generate_options go = {.eos_id = -1, .loop = CT_LOOP_HOST}; /* never: see what row 0 chooses */
    CT_ASSERT_OK(run(&f, go, P + MAXNEW, rows));
    assert_int_equal(rows[0].n_tokens, MAXNEW);
    go.eos_id = rows[0].tokens[2]; /* row 0 stops by its third token */
    ct_generate_rows_free(rows, B);
    CT_ASSERT_OK(run(&f, go, P + MAXNEW, rows));
    assert_true(rows[0].n_tokens <= 3);
    assert_int_equal(rows[0].stop, CT_STOP_EOS);
    ct_generate_rows_free(rows, B);
    compare(&f, go, P + MAXNEW);
    go.ignore_eos = 1;
    compare(&f, go, P + MAXNEW);
    teardown(&f);
}

static void test_row_budgets(void **state) {
    (void)state;
    fixture f;
    setup(&f);
    const int budgets[B] = {2, MAXNEW - 1};
    ct_generate_options go = {.eos_id = -1, .row_max_new_tokens = budgets};
    compare(&f, go, P + MAXNEW);
    ct_generate_row rows[B];
    go.loop = CT_LOOP_DEVICE_EAGER;
    CT_ASSERT_OK(run(&f, go, P + MAXNEW, rows));
    for (int b = 0; b < B; b++) {
        assert_int_equal(rows[b].n_tokens, budgets[b]);
        assert_int_equal(rows[b].stop, CT_STOP_MAX_TOKENS);
    }
    ct_generate_rows_free(rows, B);
    teardown(&f);
}

static void test_forced(void **state) {
    (void)state;
    fixture f;
    setup(&f);
    int32_t forced[B * MAXNEW];
    for (int b = 0; b < B; b++)
        for (int g = 0; g < MAXNEW; g++) forced[b * MAXNEW + g] = 20 + 37 * b + 11 * g;
    forced[1] = 3; /* an EOS input does not stop the row */
    ct_generate_options go = {.eos_id = 3, .forced = forced};
    compare(&f, go, P + MAXNEW);
    forced[2] = -4; /* fed to row 0 after its third token */
    ct_generate_row rows[B];
    go.loop = CT_LOOP_DEVICE_EAGER;
    assert_int_equal(run(&f, go, P + MAXNEW, rows), CT_ERR_INVALID_ARG);
    go.loop = CT_LOOP_HOST;
    assert_int_equal(run(&f, go, P + MAXNEW, rows), CT_ERR_INVALID_ARG);
    teardown(&f);
}

static void test_positions_end_first(void **state) {
    (void)state;
    fixture f;
    setup(&f);
    ct_generate_options go = {.eos_id = -1};
    compare(&f, go, P + 3); /* room for 4 tokens of the 6 asked */
    ct_generate_row rows[B];
    go.loop = CT_LOOP_DEVICE_EAGER;
    CT_ASSERT_OK(run(&f, go, P + 3, rows));
    for (int b = 0; b < B; b++) {
        assert_int_equal(rows[b].n_tokens, 4);
        assert_int_equal(rows[b].stop, CT_STOP_POSITIONS);
    }
    ct_generate_rows_free(rows, B);
    teardown(&f);
}

static void test_refusals(void **state) {
    (void)state;
    fixture f;
    setup(&f);
    ct_generate_row rows[B];
    ct_generate_options go = {.eos_id = -1, .keep_logits = 1, .loop = CT_LOOP_DEVICE_EAGER};
    assert_int_equal(run(&f, go, P + MAXNEW, rows), CT_ERR_UNSUPPORTED);
    go.loop = 9;
    assert_int_equal(run(&f, go, P + MAXNEW, rows), CT_ERR_INVALID_ARG);
    /* keep_logits on auto: the host loop, with logits */
    go.loop = CT_LOOP_AUTO;
    CT_ASSERT_OK(run(&f, go, P + MAXNEW, rows));
    assert_non_null(rows[0].logits);
    ct_generate_rows_free(rows, B);
    teardown(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eos_stops_one_row), cmocka_unit_test(test_row_budgets),
        cmocka_unit_test(test_forced),           cmocka_unit_test(test_positions_end_first),
        cmocka_unit_test(test_refusals),
    };
    int r = cmocka_run_group_tests_name("cpu-ref", tests, NULL, NULL);
    int no_gpu;
    if (!ct_test_have_gpu("test_generate_device on cuda", &no_gpu)) return r ? r : no_gpu;
    g_backend = "cuda";
    return r | cmocka_run_group_tests_name("cuda", tests, NULL, NULL);
}
