/* guards.c — repetition guard, token-limit retry rule and the benchmark
 * mode's token count (guards.h). Pure
 * functions on token ids and limits; the decoding loop that calls them is
 * in the engine. */
#include "asr/guards.h"

#include <math.h>

static int blocks_repeat(const int32_t *g, size_t n, size_t p) {
    const int32_t *last = g + n - p;
    for (size_t c = 2; c <= CT_REPEAT_COPIES; c++) {
        const int32_t *blk = g + n - c * p;
        for (size_t k = 0; k < p; k++)
            if (blk[k] != last[k]) return 0;
    }
    return 1;
}

int ct_repetition_loop_at_end(const int32_t *g, size_t n, int *period) {
    if (period) *period = 0;
    if (!g || n < CT_REPEAT_MIN_TOKENS) return 0;
    size_t pmax = n / CT_REPEAT_COPIES;
    if (pmax > CT_REPEAT_MAX_PERIOD) pmax = CT_REPEAT_MAX_PERIOD;
    for (size_t p = CT_REPEAT_MIN_PERIOD; p <= pmax; p++) {
        if (blocks_repeat(g, n, p)) {
            if (period) *period = (int)p;
            return 1;
        }
    }
    return 0;
}

size_t ct_repetition_first_stop(const int32_t *g, size_t n) {
    for (size_t len = CT_REPEAT_MIN_TOKENS; len <= n; len++)
        if (ct_repetition_loop_at_end(g, len, NULL)) return len;
    return 0;
}

int ct_generation_capacity(int decoder_context, int prompt_len) {
    int c = decoder_context - prompt_len - 4;
    return c > 0 ? c : 0;
}

int ct_retry_token_limit(int limit, int max_retry_tokens, int row_limit, int capacity) {
    if (row_limit > 0 && row_limit < limit) return limit;
    int ceiling = capacity > 0 && capacity < max_retry_tokens ? capacity : max_retry_tokens;
    if (ceiling <= limit) return limit;
    long grown = (long)limit * 2 > (long)limit + 128 ? (long)limit * 2 : (long)limit + 128;
    long proposed = grown < ceiling ? grown : ceiling;
    return ceiling - proposed < 128 ? ceiling : (int)proposed;
}

int ct_benchmark_token_count(double rate, size_t n_samples, int limit) {
    double t = ceil(rate * (double)n_samples / 16000.0);
    if (!(t >= 1.0)) t = 1.0; /* also NaN: the options check refuses such rates before */
    return t < (double)limit ? (int)t : limit;
}
