/* test_scheduler.c — the batch scheduler's packing and failure policy with a
 * fake executor that records every call and fails on demand: out-of-memory
 * above a padded-cost limit, a poisoned item, a fatal device error. */
#include <stdlib.h>
#include <string.h>

#include "asr/scheduler.h"
#include "testutil.h"

typedef struct {
    const double *sec;
    double oom_above;   /* rows × longest above this → CT_ERR_OOM (0: never) */
    int poison;         /* an item whose batches fail with CT_ERR_FORMAT (-1: none) */
    int fatal_at_call;  /* this call (1-based) fails with CT_ERR_DEVICE (0: never) */
    int calls;
    int done[256];      /* times each item was in a successful call */
    int sizes[512];
    double costs[512];
} fake;

static ct_status fake_exec(void *ctx, const int *idx, int n) {
    fake *f = ctx;
    double longest = 0;
    for (int i = 0; i < n; i++)
        if (f->sec[idx[i]] > longest) longest = f->sec[idx[i]];
    int call = ++f->calls;
    f->sizes[call - 1] = n;
    f->costs[call - 1] = n * longest;
    if (f->fatal_at_call && call == f->fatal_at_call) return ct_fail(CT_ERR_DEVICE, "CUDA: illegal address (injected)");
    if (f->oom_above > 0 && n * longest > f->oom_above)
        return ct_fail(CT_ERR_OOM, "CUDA: device allocation refused (injected)");
    for (int i = 0; i < n; i++)
        if (idx[i] == f->poison) return ct_fail(CT_ERR_FORMAT, "item %d: bad audio", f->poison);
    for (int i = 0; i < n; i++) f->done[idx[i]]++;
    return CT_OK;
}

static void make_secs(double *s, int n, unsigned seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        s[i] = 2.0 + (seed >> 8) % 3300 / 100.0; /* 2 .. 35 s */
    }
}

/* Default options packing at most `rows` rows, growing to at most `limit`. */
static ct_sched_opts rows_opts(int rows, int limit) {
    ct_sched_opts o;
    ct_sched_default_options(&o);
    o.max_rows = rows;
    o.max_rows_limit = limit;
    return o;
}

static void test_packing_longest_first(void **state) {
    (void)state;
    double sec[10] = {3, 30, 12, 30, 7, 25, 2, 18, 9, 33};
    fake f = {.sec = sec, .poison = -1};
    ct_sched_opts o = rows_opts(4, 4);
    o.max_audio_s = 100; /* 4 × 33 > 100: the first batch holds 3 */
    ct_breaker br;
    ct_breaker_init(&br);
    ct_status st[10];
    ct_sched_stats ss;
    CT_ASSERT_OK(ct_sched_run(sec, 10, &o, fake_exec, &f, &br, st, &ss));
    assert_int_equal(f.sizes[0], 3);  /* 33, 30, 30 */
    assert_true(f.costs[0] <= 100);
    assert_int_equal(f.sizes[1], 4);  /* 25, 18, 12, 9: 4 × 25 = 100 */
    assert_int_equal(f.sizes[2], 3);  /* 7, 3, 2 */
    for (int i = 0; i < 10; i++) assert_int_equal(f.done[i], 1);
    assert_int_equal(ss.batches, 3);
    assert_int_equal(ss.failed, 0);
}

static void test_oom_splits_and_lowers_cap(void **state) {
    (void)state;
    double sec[64];
    make_secs(sec, 64, 7);
    fake f = {.sec = sec, .poison = -1, .oom_above = 8 * 30.0};
    ct_sched_opts o = rows_opts(32, 32);
    ct_breaker br;
    ct_breaker_init(&br);
    ct_status st[64];
    ct_sched_stats ss;
    CT_ASSERT_OK(ct_sched_run(sec, 64, &o, fake_exec, &f, &br, st, &ss));
    for (int i = 0; i < 64; i++) {
        assert_int_equal(f.done[i], 1);
        assert_int_equal(st[i], CT_OK);
    }
    assert_true(ss.oom_retries > 0);
    assert_true(ss.final_cap < 32);
    assert_true(ss.final_cap >= 1);
    assert_int_equal(ss.calls, ss.batches + ss.oom_retries);
    assert_false(br.open); /* OOM never trips the breaker */
    /* after the cap came down, later fresh batches stop hitting the limit */
    int late_ooms = 0;
    for (int c = f.calls - 4; c < f.calls; c++) late_ooms += f.costs[c] > f.oom_above;
    assert_int_equal(late_ooms, 0);
}

static void test_single_item_oom_fails_alone(void **state) {
    (void)state;
    double sec[3] = {34, 5, 4};
    fake f = {.sec = sec, .poison = -1, .oom_above = 20};
    ct_sched_opts o = rows_opts(3, 3);
    ct_breaker br;
    ct_breaker_init(&br);
    ct_status st[3];
    ct_sched_stats ss;
    CT_ASSERT_STATUS(ct_sched_run(sec, 3, &o, fake_exec, &f, &br, st, &ss), CT_ERR_OOM);
    assert_int_equal(st[0], CT_ERR_OOM);
    assert_int_equal(st[1], CT_OK);
    assert_int_equal(st[2], CT_OK);
    assert_int_equal(ss.failed, 1);
    CT_ASSERT_ERROR_HAS("1 of 3 items failed");
}

static void test_error_isolates_item(void **state) {
    (void)state;
    double sec[20];
    make_secs(sec, 20, 3);
    fake f = {.sec = sec, .poison = 11};
    ct_sched_opts o = rows_opts(8, 8);
    ct_breaker br;
    ct_breaker_init(&br);
    ct_status st[20];
    ct_sched_stats ss;
    CT_ASSERT_STATUS(ct_sched_run(sec, 20, &o, fake_exec, &f, &br, st, &ss), CT_ERR_FORMAT);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(st[i], i == 11 ? CT_ERR_FORMAT : CT_OK);
        assert_int_equal(f.done[i], i == 11 ? 0 : 1);
    }
    assert_true(ss.error_splits >= 1);
    assert_int_equal(ss.calls, ss.batches + ss.error_splits + 1); /* each split adds a call; one item fails */
    assert_false(br.open);
    CT_ASSERT_ERROR_HAS("bad audio");
}

static void test_fatal_opens_breaker(void **state) {
    (void)state;
    double sec[40];
    make_secs(sec, 40, 9);
    fake f = {.sec = sec, .poison = -1, .fatal_at_call = 3};
    ct_sched_opts o = rows_opts(8, 8);
    ct_breaker br;
    ct_breaker_init(&br);
    ct_status st[40];
    ct_sched_stats ss;
    CT_ASSERT_STATUS(ct_sched_run(sec, 40, &o, fake_exec, &f, &br, st, &ss), CT_ERR_DEVICE);
    assert_true(br.open);
    assert_int_equal(f.calls, 3); /* nothing ran after the fatal error */
    assert_int_equal(ss.batches, 2);
    assert_int_equal(ss.failed, 40 - 16);
    CT_ASSERT_ERROR_HAS("device session disabled");
    CT_ASSERT_ERROR_HAS("illegal address");
    /* a later run fails fast without calling the executor */
    ct_status st2[40];
    CT_ASSERT_STATUS(ct_sched_run(sec, 40, &o, fake_exec, &f, &br, st2, &ss), CT_ERR_DEVICE);
    assert_int_equal(f.calls, 3);
    assert_int_equal(st2[0], CT_ERR_DEVICE);
    assert_true(br.fast_fails >= 1);
    /* rebuilding the session (reset) lets work through again */
    ct_breaker_reset(&br);
    f.fatal_at_call = 0;
    CT_ASSERT_OK(ct_sched_run(sec, 40, &o, fake_exec, &f, &br, st2, &ss));
    assert_int_equal(br.trips, 1);
}

static void test_adaptive_growth(void **state) {
    (void)state;
    double sec[200];
    for (int i = 0; i < 200; i++) sec[i] = 10;
    fake f = {.sec = sec, .poison = -1};
    ct_sched_opts o = rows_opts(8, 20);
    o.adaptive = 1;
    o.grow_after = 2;
    ct_breaker br;
    ct_breaker_init(&br);
    ct_status st[200];
    ct_sched_stats ss;
    CT_ASSERT_OK(ct_sched_run(sec, 200, &o, fake_exec, &f, &br, st, &ss));
    assert_int_equal(f.sizes[0], 8);
    assert_int_equal(ss.final_cap, 20);
    assert_int_equal(ss.max_batch, 20);
    /* without adaptive growth the cap stays */
    memset(f.done, 0, sizeof f.done);
    o.adaptive = 0;
    CT_ASSERT_OK(ct_sched_run(sec, 200, &o, fake_exec, &f, &br, st, &ss));
    assert_int_equal(ss.final_cap, 8);
    assert_int_equal(ss.max_batch, 8);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packing_longest_first), cmocka_unit_test(test_oom_splits_and_lowers_cap),
        cmocka_unit_test(test_single_item_oom_fails_alone), cmocka_unit_test(test_error_isolates_item),
        cmocka_unit_test(test_fatal_opens_breaker), cmocka_unit_test(test_adaptive_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
