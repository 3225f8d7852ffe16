/* guards.h — the decoder's stopping and retry rules of the original product
 * (PRODUCT.md §5, PRODUCT-DETAILS.md §13):
 *
 * Repetition guard (detector version 3): after each generated token, with g
 * the generated tokens (prompt excluded, EOS not included) and n = len(g):
 * if n >= 96 and, for some period p in [8, min(32, n/4)], the last 4p tokens
 * are four identical back-to-back blocks of p tokens, the row stops; the
 * kept output is g[0..n) (all four repeats stay in the text). Batched
 * decoding runs rows to completion and applies the rule afterwards to every
 * prefix, truncating at the first length that triggers.
 *
 * Token-limit retry: a row that hit limit L without EOS (and was not stopped
 * by the guard) is re-decoded with ct_retry_token_limit(...) if that is > L.
 */
#ifndef CT_ASR_GUARDS_H
#define CT_ASR_GUARDS_H

#include <stddef.h>
#include <stdint.h>

#define CT_REPEAT_MIN_TOKENS 96
#define CT_REPEAT_MIN_PERIOD 8
#define CT_REPEAT_MAX_PERIOD 32
#define CT_REPEAT_COPIES 4

/* 1 when g[0..n) triggers the guard at its last token (see above), else 0.
 * Returns the period found in *period (may be NULL); the smallest one. */
int ct_repetition_loop_at_end(const int32_t *g, size_t n, int *period);

/* The first prefix length at which the guard triggers (96 <= result <= n),
 * or 0 when no prefix of g[0..n) does. */
size_t ct_repetition_first_stop(const int32_t *g, size_t n);

/* generation_capacity = decoder context - prompt length - 4 (>= 0). */
int ct_generation_capacity(int decoder_context, int prompt_len);

/* The limit for the retry of a row that hit `limit` (the call's
 * max_new_tokens) without EOS, per §13.3:
 *  - the row's own effective limit row_limit > 0 and < limit (the decoder
 *    context, not the user's limit, ran out): limit (no retry);
 *  - ceiling = min(max_retry_tokens, capacity) if capacity > 0 else
 *    max_retry_tokens; ceiling <= limit: limit (no retry);
 *  - proposed = min(ceiling, max(limit + 128, 2 limit)); the ceiling itself
 *    when ceiling - proposed < 128, else proposed.
 * A result equal to limit means "do not retry". 445 -> 896 by default. */
int ct_retry_token_limit(int limit, int max_retry_tokens, int row_limit, int capacity);

/* Benchmark mode (ours, not the original's): the exact token count of a
 * segment of n_samples at 16 kHz when every segment decodes `rate` tokens per
 * second of audio, EOS ignored: ceil(rate * n_samples / 16000), at least 1,
 * at most `limit` (the call's effective limit, > 0). The one definition the
 * product (pipeline/asr_run.c) and the engine-alone bound
 * (tools/bench/bench_product_engine.c) share. */
int ct_benchmark_token_count(double rate, size_t n_samples, int limit);

#endif
