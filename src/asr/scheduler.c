/* scheduler.c — longest-first packing, adaptive cap, OOM/error splitting and
 * the breaker (see scheduler.h). Work is a stack of pending ranges over the
 * sorted order, so a split batch is retried before anything new is packed.
 */
#include "asr/scheduler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ct_sched_default_options(ct_sched_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_rows = 16;
    o->max_rows_limit = 16;
    o->max_audio_s = 0;
    o->alone_above_s = 35.0;
    o->adaptive = 0;
    o->grow_after = 4;
}

typedef struct {
    const double *sec;
} sort_ctx;

static int by_len_desc(const void *a, const void *b, void *arg) {
    const double *s = ((const sort_ctx *)arg)->sec;
    int i = *(const int *)a, j = *(const int *)b;
    if (s[i] != s[j]) return s[i] > s[j] ? -1 : 1;
    return i < j ? -1 : (i > j);
}

/* Split point k (1..n−1) of a longest-first batch minimising the larger
 * half's padded cost rows × longest. */
static int balanced_split(const double *sec, const int *ord, int n) {
    int best = n / 2;
    double bc = 1e300;
    for (int k = 1; k < n; k++) {
        double a = k * sec[ord[0]], b = (n - k) * sec[ord[k]];
        double c = a > b ? a : b;
        if (c < bc) bc = c, best = k;
    }
    return best;
}

typedef struct { int lo, hi; int split_once; } range;

ct_status ct_sched_run(const double *sec, int n, const ct_sched_opts *o, ct_sched_exec_fn fn, void *ctx,
                       ct_breaker *br, ct_status *status, ct_sched_stats *st) {
    memset(st, 0, sizeof *st);
    st->min_batch = 0;
    if (n <= 0) return CT_OK;
    if (o->max_rows < 1 || o->max_rows_limit < o->max_rows)
        return ct_fail(CT_ERR_INVALID_ARG, "scheduler: row cap %d / limit %d", o->max_rows, o->max_rows_limit);
    int *ord = malloc((size_t)n * sizeof(int));
    range *stack = malloc((size_t)(2 * n + 2) * sizeof(range));
    if (!ord || !stack) {
        free(ord);
        free(stack);
        return ct_fail(CT_ERR_OOM, "scheduler");
    }
    for (int i = 0; i < n; i++) ord[i] = i, status[i] = CT_OK;
    sort_ctx sc = {sec};
    qsort_r(ord, (size_t)n, sizeof(int), by_len_desc, &sc);
    int cap = o->max_rows, clean = 0, next = 0, top = 0;
    ct_status ret = CT_OK;
    while (next < n || top > 0) {
        range r;
        if (top > 0) {
            r = stack[--top];
        } else {
            /* pack a new batch from the longest remaining item */
            int lo = next, hi = next + 1;
            double longest = sec[ord[lo]];
            if (!(o->alone_above_s > 0 && longest > o->alone_above_s))
                while (hi < n && hi - lo < cap && !(o->alone_above_s > 0 && sec[ord[hi]] > o->alone_above_s) &&
                       (o->max_audio_s <= 0 || (hi - lo + 1) * longest <= o->max_audio_s))
                    hi++;
            next = hi;
            r.lo = lo, r.hi = hi, r.split_once = 0;
        }
        int m = r.hi - r.lo;
        ct_status s = ct_breaker_check(br);
        if (s == CT_OK) {
            st->calls++;
            s = fn(ctx, ord + r.lo, m);
        }
        if (s == CT_OK) {
            st->batches++;
            if (!st->min_batch || m < st->min_batch) st->min_batch = m;
            if (m > st->max_batch) st->max_batch = m;
            if (m >= cap && o->adaptive && ++clean >= o->grow_after && cap < o->max_rows_limit) {
                cap += cap / 4 > 0 ? cap / 4 : 1;
                if (cap > o->max_rows_limit) cap = o->max_rows_limit;
                clean = 0;
            }
            continue;
        }
        clean = 0;
        if (!st->first_error[0]) snprintf(st->first_error, sizeof st->first_error, "%s", ct_last_error());
        if (br->open || ct_breaker_is_fatal(s)) {
            /* fatal: open the breaker, fail this batch and everything left */
            ct_breaker_record(br, s, ct_last_error());
            for (int i = r.lo; i < r.hi; i++) status[ord[i]] = CT_ERR_DEVICE, st->failed++;
            for (int t = 0; t < top; t++)
                for (int i = stack[t].lo; i < stack[t].hi; i++) status[ord[i]] = CT_ERR_DEVICE, st->failed++;
            for (int i = next; i < n; i++) status[ord[i]] = CT_ERR_DEVICE, st->failed++;
            top = 0;
            next = n;
            ct_breaker_check(br); /* leaves the breaker's message as the current error */
            ret = CT_ERR_DEVICE;
            break;
        }
        if (m == 1) {
            status[ord[r.lo]] = s;
            st->failed++;
            if (ret == CT_OK) ret = s;
            continue;
        }
        int k;
        if (s == CT_ERR_OOM) {
            st->oom_retries++;
            k = balanced_split(sec, ord + r.lo, m);
            int larger = k > m - k ? k : m - k;
            if (larger < cap) cap = larger;
        } else {
            st->error_splits++;
            k = m / 2;
        }
        /* push the second half first so the first (longest) half runs next */
        stack[top++] = (range){r.lo + k, r.hi, 1};
        stack[top++] = (range){r.lo, r.lo + k, 1};
    }
    st->final_cap = cap;
    free(ord);
    free(stack);
    if (ret != CT_OK && ret != CT_ERR_DEVICE)
        return ct_fail(ret, "%d of %d items failed; first: %s", st->failed, n, st->first_error);
    return ret;
}
