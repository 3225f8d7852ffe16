/* scheduler.h — the batch scheduler between segments and the ASR executor:
 * longest-first packing under a row cap and a padded-audio budget (rows ×
 * longest clip), the adaptive batch controller, and the failure policy of
 * PRODUCT.md §5: out-of-memory splits the batch in two halves balanced by
 * rows × duration and lowers the cap; other errors split in half down to the
 * failing item, which fails alone; a fatal device error opens the breaker and
 * fails the rest fast. The executor is a callback, so the policy is tested on
 * the CPU with a fake one.
 */
#ifndef CT_ASR_SCHEDULER_H
#define CT_ASR_SCHEDULER_H

#include "asr/breaker.h"
#include "core/error.h"

typedef struct ct_sched_opts {
    int max_rows;        /* initial row cap (≥ 1) */
    int max_rows_limit;  /* adaptive growth ceiling (≥ max_rows) */
    double max_audio_s;  /* padded seconds per batch: rows × longest ≤ this (0: none) */
    double alone_above_s; /* items longer than this run alone (0: none) */
    int adaptive;        /* grow the cap by a quarter after grow_after clean batches at it */
    int grow_after;
} ct_sched_opts;

void ct_sched_default_options(ct_sched_opts *o);

/* Run items idx[0..n) (indices into the caller's tables). The executor must
 * either fully succeed for the batch or fail it as a whole. */
typedef ct_status (*ct_sched_exec_fn)(void *ctx, const int *idx, int n);

typedef struct ct_sched_stats {
    int batches;        /* executor calls that succeeded */
    int calls;          /* executor calls in all */
    int oom_retries;    /* batches split after out-of-memory */
    int error_splits;   /* batches split after another error */
    int failed;         /* items that failed */
    int min_batch, max_batch; /* rows of successful calls */
    int final_cap;
    char first_error[512];
} ct_sched_stats;

/* seconds[i] is item i's duration; status[i] (length n) receives each item's
 * outcome. Returns CT_OK when every item succeeded, CT_ERR_DEVICE when the
 * breaker opened (the rest failed fast), else the first item failure. */
ct_status ct_sched_run(const double *seconds, int n, const ct_sched_opts *o, ct_sched_exec_fn fn, void *ctx,
                       ct_breaker *br, ct_status *status, ct_sched_stats *st);

#endif
