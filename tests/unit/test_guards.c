/* test_guards.c — repetition guard and token-limit retry rule, with cases
 * worked out by hand from PRODUCT-DETAILS.md §13.2/§13.3. */
#include <stdlib.h>
#include <string.h>

#include "asr/guards.h"
#include "testutil.h"

/* distinct ids 1000, 1001, ... so that nothing repeats by accident */
static void fill_unique(int32_t *g, size_t n, int32_t base) {
    for (size_t i = 0; i < n; i++) g[i] = base + (int32_t)i;
}

/* g[at .. at + copies*p) = `copies` copies of the block 1..p (ids 1..p) */
static void put_loop(int32_t *g, size_t at, size_t p, int copies) {
    for (int c = 0; c < copies; c++)
        for (size_t k = 0; k < p; k++) g[at + (size_t)c * p + k] = (int32_t)(k + 1);
}

static void test_guard_fires_on_four_copies(void **state) {
    (void)state;
    int32_t g[200];
    int p = -1;
    /* 64 unique tokens then 4 x 8: n = 96, the first length allowed */
    fill_unique(g, 64, 1000);
    put_loop(g, 64, 8, 4);
    assert_int_equal(ct_repetition_loop_at_end(g, 96, &p), 1);
    assert_int_equal(p, 8);
    /* the same loop ending at 95 tokens is too short to count */
    assert_int_equal(ct_repetition_loop_at_end(g + 1, 95, &p), 0);
    assert_int_equal(p, 0);
    /* three copies are not enough: 96 tokens ending in 3 x 8 after uniques */
    fill_unique(g, 72, 1000);
    put_loop(g, 72, 8, 3);
    assert_int_equal(ct_repetition_loop_at_end(g, 96, NULL), 0);
    /* one token changed in the first copy breaks it */
    fill_unique(g, 64, 1000);
    put_loop(g, 64, 8, 4);
    g[64 + 3] = 77;
    assert_int_equal(ct_repetition_loop_at_end(g, 96, NULL), 0);
}

static void test_guard_period_range(void **state) {
    (void)state;
    int32_t g[300];
    int p;
    /* p = 7: only the last 28 tokens repeat (4 x 7); 7 < 8 does not count,
     * and no multiple of 7 repeats 4 times (the tokens before are unique) */
    fill_unique(g, 100, 1000);
    put_loop(g, 72, 7, 4);
    assert_int_equal(ct_repetition_loop_at_end(g, 100, NULL), 0);
    /* p = 32 at n = 128 (= 4 x 32 exactly): fires */
    put_loop(g, 0, 32, 4);
    assert_int_equal(ct_repetition_loop_at_end(g, 128, &p), 1);
    assert_int_equal(p, 32);
    /* p = 33: 4 x 33 = 132 after 10 unique tokens: 33 > 32, no fire */
    fill_unique(g, 10, 1000);
    put_loop(g, 10, 33, 4);
    assert_int_equal(ct_repetition_loop_at_end(g, 142, NULL), 0);
    /* p is also capped by n/4: n = 100 allows p <= 25. A 4 x 25 loop fires;
     * at n = 100 a block of 26 cannot fit 4 times at all. */
    put_loop(g, 0, 25, 4);
    assert_int_equal(ct_repetition_loop_at_end(g, 100, &p), 1);
    assert_int_equal(p, 25);
    /* a loop of period 7 that runs long enough repeats blocks of 14 four
     * times (56 tokens): it fires, with the smallest period >= 8 that fits */
    for (int i = 0; i < 120; i++) g[i] = (int32_t)(i % 7);
    assert_int_equal(ct_repetition_loop_at_end(g, 96, &p), 1);
    assert_int_equal(p, 14);
}

static void test_guard_first_stop(void **state) {
    (void)state;
    int32_t g[400];
    /* 90 unique, then a 10-token block repeated: after 90 + 40 = 130 tokens
     * the fourth copy is complete, so the kept prefix is 130 tokens */
    fill_unique(g, 400, 1000);
    put_loop(g, 90, 10, 8);
    assert_int_equal(ct_repetition_first_stop(g, 400), 130);
    assert_int_equal(ct_repetition_first_stop(g, 129), 0);
    /* a loop completing before 96 tokens is caught at 96 (the first check) */
    fill_unique(g, 400, 1000);
    put_loop(g, 20, 9, 12); /* tokens 20 .. 128 */
    assert_int_equal(ct_repetition_first_stop(g, 400), 96);
    /* no loop at all */
    fill_unique(g, 400, 1000);
    assert_int_equal(ct_repetition_first_stop(g, 400), 0);
    assert_int_equal(ct_repetition_first_stop(NULL, 0), 0);
}

static void test_retry_rule(void **state) {
    (void)state;
    /* capacity of the pinned model: 1024 - 10 - 4 */
    int cap = ct_generation_capacity(1024, 10);
    assert_int_equal(cap, 1010);
    assert_int_equal(ct_generation_capacity(10, 10), 0);
    /* default: 445 -> proposed min(896, max(573, 890)) = 890; 896 - 890 < 128 -> 896 */
    assert_int_equal(ct_retry_token_limit(445, 896, 445, cap), 896);
    /* from 896 the ceiling (896) is not above the limit: no retry */
    assert_int_equal(ct_retry_token_limit(896, 896, 896, cap), 896);
    /* 100 with ceiling 1000: max(228, 200) = 228; 1000 - 228 >= 128 -> 228 */
    assert_int_equal(ct_retry_token_limit(100, 1000, 100, cap), 228);
    /* 300 with ceiling 1000: 600; 1000 - 600 = 400 -> 600 */
    assert_int_equal(ct_retry_token_limit(300, 1000, 300, cap), 600);
    /* 450 with ceiling 1000: 900; 1000 - 900 = 100 < 128 -> 1000 */
    assert_int_equal(ct_retry_token_limit(450, 1000, 450, cap), 1000);
    /* the capacity caps the ceiling: max_retry 2000, capacity 1010 ->
     * ceiling 1010; 500 -> 1000, 1010 - 1000 < 128 -> 1010 */
    assert_int_equal(ct_retry_token_limit(500, 2000, 500, cap), 1010);
    /* capacity 0 (unknown): ceiling = max_retry */
    assert_int_equal(ct_retry_token_limit(500, 2000, 500, 0), 1000);
    /* the row's own limit below the call's: the context ran out, no retry */
    assert_int_equal(ct_retry_token_limit(445, 896, 300, cap), 445);
    /* exactly 128 below the ceiling stays proposed: 10 -> 138, ceiling 266 */
    assert_int_equal(ct_retry_token_limit(10, 266, 10, cap), 138);
    /* 127 below jumps: ceiling 265 -> 265 */
    assert_int_equal(ct_retry_token_limit(10, 265, 10, cap), 265);
}

/* The benchmark mode's count: ceil(rate x seconds), at least 1, at most the limit. */
static void test_benchmark_count(void **state) {
    (void)state;
    assert_int_equal(ct_benchmark_token_count(3.3, 94592, 445), 20);   /* 5.912 s: 19.51 -> 20 */
    assert_int_equal(ct_benchmark_token_count(3.3, 362880, 445), 75);  /* 22.68 s: 74.84 -> 75 */
    assert_int_equal(ct_benchmark_token_count(3.3, 362880, 60), 60);   /* the limit caps it */
    assert_int_equal(ct_benchmark_token_count(2.0, 16000, 445), 2);    /* an exact product is not rounded up */
    assert_int_equal(ct_benchmark_token_count(2.0, 16001, 445), 3);    /* one sample more is */
    assert_int_equal(ct_benchmark_token_count(3.3, 0, 445), 1);        /* never zero */
    assert_int_equal(ct_benchmark_token_count(3.3, 30 * 16000, 445), 99);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard_fires_on_four_copies),
        cmocka_unit_test(test_guard_period_range),
        cmocka_unit_test(test_guard_first_stop),
        cmocka_unit_test(test_retry_rule),
        cmocka_unit_test(test_benchmark_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
