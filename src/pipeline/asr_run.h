/* asr_run.h — segments in, texts out: the product's decoding policy over the
 * engine's batch entry point (asr/asr.h), as PRODUCT-DETAILS §13 gives it.
 *
 * Segments (of any number of files: batches cross file boundaries) go
 * through the batch scheduler (asr/scheduler.h: longest first, row and
 * padded-seconds budgets, out-of-memory splits, the breaker). Every row of a
 * call gets the effective limit min(capacity, L), capacity = decoder context
 * − prompt − 4. After a call:
 *  - the repetition guard truncates a row at the first prefix that repeats a
 *    block 4 times (asr/guards.h); such a row is final and never retried;
 *  - a row that ended with EOS is final;
 *  - a row that hit the limit is retried with ct_retry_token_limit(L, ...)
 *    when the policy is retry and that is larger; retry groups (one per next
 *    limit) run through their own scheduler whose cap starts at the group's
 *    size, so out-of-memory at high limits does not shrink the ordinary
 *    batches; otherwise the row is final with hit_limit set.
 * A segment's generated_tokens counts the kept tokens plus the EOS when one
 * was produced and the guard did not fire (§13.1).
 * Benchmark mode (benchmark_tokens_per_second > 0) replaces that policy by a
 * fixed amount of work per segment (below).
 */
#ifndef CT_PIPELINE_ASR_RUN_H
#define CT_PIPELINE_ASR_RUN_H

#include <stdatomic.h>
#include <stddef.h>

#include "asr/asr.h"
#include "asr/breaker.h"

typedef struct ct_asr_seg {
    /* in */
    const float *pcm; /* borrowed slice of the file's audio */
    size_t n;
    const char *language;
    /* out */
    char *text;           /* malloc'd, Python-stripped */
    int generated_tokens; /* of the final attempt */
    int retried;          /* re-decoded at least once for the token limit */
    int hit_limit;        /* the final attempt still hit its limit */
    int repetition_stopped;
    ct_status status;     /* CT_OK or this segment's failure */
    char *error;          /* malloc'd message when status != CT_OK */
} ct_asr_seg;

typedef struct ct_asr_run_options {
    int batch_size;        /* initial row cap */
    int batch_max_size;    /* adaptive growth ceiling (0: batch_size) */
    double batch_audio_seconds; /* padded-seconds budget (0: none) */
    int adaptive;
    int max_new_tokens;    /* first budget */
    int max_retry_tokens;  /* retry ceiling */
    int retry;             /* truncation policy retry (1) or warn (0) */
    int stop_repetition_loops;
    int punctuation;
    int dither;            /* the release's feature extractor dithers (1e-5) */
    /* > 0: benchmark mode. Every row decodes exactly
     * ct_benchmark_token_count(rate, its samples, the call's limit) tokens with
     * EOS ignored; the repetition guard and the retry are off and no row is
     * marked hit_limit (the count is imposed, not a truncation). */
    double benchmark_tokens_per_second;
    const atomic_int *cancel; /* nonzero: stop before the next call (CT_ERR_ABORTED) */
    void (*on_batch)(void *user, int rows); /* after each successful engine call (may be NULL) */
    void *user;
} ct_asr_run_options;

/* One engine call, for the profile's batch_history. */
typedef struct ct_asr_call {
    int rows, max_new_tokens, oom;
    long long generated_tokens;
    double seconds, padded_audio_seconds;
} ct_asr_call;

typedef struct ct_asr_run_stats {
    int batches, oom_retries, truncation_retries;
    long long generated_tokens;
    int effective_batch_min, effective_batch_max, final_cap;
    double seconds, seconds_mel, seconds_encoder, seconds_decoder;
    ct_asr_call *calls; /* malloc'd history (free with ct_asr_run_stats_clear) */
    size_t n_calls, cap_calls;
} ct_asr_run_stats;

void ct_asr_run_stats_clear(ct_asr_run_stats *st);

/* Decode segs[0..n). Per-segment failures land in segs[i].status (the rest
 * goes on); the return value is CT_OK, CT_ERR_ABORTED when cancelled, or a
 * failure that stops the run (the breaker opened: every remaining segment
 * carries it too). stats accumulate (may be NULL). */
ct_status ct_asr_run(ct_asr *asr, ct_breaker *br, ct_asr_seg *segs, size_t n, const ct_asr_run_options *o,
                     ct_asr_run_stats *stats);

void ct_asr_seg_clear(ct_asr_seg *s);

#endif
