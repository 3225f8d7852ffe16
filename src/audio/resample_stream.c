/* resample_stream.c — see resample_stream.h.
 *
 * The stream keeps the input samples that later outputs still read (global
 * indices [buf0, buf0 + nbuf), starting at −left with zeros before the
 * signal). Once BLOCK_OUT outputs have all their input, a block is cut: its
 * input window is copied (so the buffer can move on) and it is queued. The
 * queue holds at most MAX_INFLIGHT blocks; the oldest is waited for and
 * appended when it is full and at the end, so output order is input order.
 * Memory outside the decode cap: at most MAX_INFLIGHT blocks of 2 s output
 * plus their input (about 1.2 MB each at 48 kHz).
 */
#include "audio/resample_stream.h"

#include <stdlib.h>
#include <string.h>

#include "core/tasks.h"

#define BLOCK_OUT 32768 /* output samples per block: 2.048 s at 16 kHz */
#define MAX_INFLIGHT 16

typedef struct block {
    ct_task task; /* first: the pool hands this back */
    const ct_resampler *r;
    float *in;
    int64_t x0;
    size_t nx;
    int64_t j0, j1;
    float *out;
} block;

struct ct_rs_stream {
    const ct_resampler *r;
    ct_tasks *tasks;
    ct_audio_job *job;
    float *buf;
    int64_t buf0;
    size_t nbuf, cap;
    int64_t n_in, next_j;
    block *q[MAX_INFLIGHT];
    int qhead, qn;
};

static void run_block(ct_task *t) {
    block *b = (block *)t;
    ct_resampler_run(b->r, b->in, b->x0, b->nx, b->j0, b->j1, b->out);
}

static void block_free(block *b) {
    if (!b) return;
    free(b->in);
    free(b->out);
    free(b);
}

static int64_t ceil_div(int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; }

/* Wait for the oldest block, append it, free it. */
static ct_status pop(ct_rs_stream *s) {
    block *b = s->q[s->qhead];
    s->q[s->qhead] = NULL;
    s->qhead = (s->qhead + 1) % MAX_INFLIGHT;
    s->qn--;
    ct_tasks_wait(s->tasks, &b->task);
    ct_status st = ct_audio_job_append(s->job, b->out, (size_t)(b->j1 - b->j0));
    block_free(b);
    return st;
}

static ct_status push(ct_rs_stream *s, int64_t j0, int64_t j1) {
    const ct_resampler *r = s->r;
    int64_t x0 = ct_resampler_first_input(r, j0);
    int64_t xe = ct_resampler_first_input(r, j1 - 1) + r->taps;
    block *b = calloc(1, sizeof *b);
    if (!b) return ct_fail(CT_ERR_OOM, "%s: out of memory", s->job->name);
    b->nx = (size_t)(xe - x0);
    b->in = malloc(b->nx * sizeof(float));
    b->out = malloc((size_t)(j1 - j0) * sizeof(float));
    if (!b->in || !b->out) {
        block_free(b);
        return ct_fail(CT_ERR_OOM, "%s: out of memory", s->job->name);
    }
    /* Inputs past what was fed are past the signal's end (only at finish):
     * zeros, as for the samples before it. */
    int64_t have = s->buf0 + (int64_t)s->nbuf;
    int64_t copy_end = xe < have ? xe : have;
    memcpy(b->in, s->buf + (x0 - s->buf0), (size_t)(copy_end - x0) * sizeof(float));
    if (copy_end < xe) memset(b->in + (copy_end - x0), 0, (size_t)(xe - copy_end) * sizeof(float));
    b->r = r;
    b->x0 = x0;
    b->j0 = j0;
    b->j1 = j1;
    b->task.run = run_block;
    if (s->qn == MAX_INFLIGHT) {
        ct_status st = pop(s);
        if (st != CT_OK) {
            block_free(b);
            return st;
        }
    }
    s->q[(s->qhead + s->qn) % MAX_INFLIGHT] = b;
    s->qn++;
    ct_tasks_submit(s->tasks, &b->task);
    return CT_OK;
}

/* Cut every block whose input is complete (final: every remaining output). */
static ct_status schedule(ct_rs_stream *s, int final) {
    const ct_resampler *r = s->r;
    for (;;) {
        int64_t limit;
        if (final) {
            limit = ct_resampler_out_len(r, s->n_in);
        } else {
            /* outputs j with first_input(j) + taps <= end of the buffer */
            int64_t e = s->buf0 + (int64_t)s->nbuf + r->left - r->taps + 1;
            limit = ceil_div(e * r->L, r->M);
        }
        if (limit - s->next_j <= 0 || (!final && limit - s->next_j < BLOCK_OUT)) return CT_OK;
        int64_t j1 = s->next_j + BLOCK_OUT < limit ? s->next_j + BLOCK_OUT : limit;
        CT_TRY(push(s, s->next_j, j1));
        s->next_j = j1;
        /* drop the input no later output reads */
        int64_t keep = ct_resampler_first_input(r, s->next_j);
        if (keep > s->buf0) {
            size_t drop = (size_t)(keep - s->buf0);
            if (drop > s->nbuf) drop = s->nbuf;
            memmove(s->buf, s->buf + drop, (s->nbuf - drop) * sizeof(float));
            s->nbuf -= drop;
            s->buf0 += (int64_t)drop;
        }
    }
}

static ct_status append_input(ct_rs_stream *s, const float *x, size_t n, int zeros) {
    if (s->nbuf + n > s->cap) {
        size_t cap = s->cap ? s->cap : 65536;
        while (cap < s->nbuf + n) cap *= 2;
        float *p = realloc(s->buf, cap * sizeof(float));
        if (!p) return ct_fail(CT_ERR_OOM, "%s: out of memory", s->job->name);
        s->buf = p;
        s->cap = cap;
    }
    if (zeros) memset(s->buf + s->nbuf, 0, n * sizeof(float));
    else memcpy(s->buf + s->nbuf, x, n * sizeof(float));
    s->nbuf += n;
    return CT_OK;
}

ct_status ct_rs_stream_new(const ct_resampler *r, ct_tasks *tasks, ct_audio_job *job, ct_rs_stream **out) {
    *out = NULL;
    ct_rs_stream *s = calloc(1, sizeof *s);
    if (!s) return ct_fail(CT_ERR_OOM, "%s: out of memory", job->name);
    s->r = r;
    s->tasks = tasks;
    s->job = job;
    s->buf0 = -(int64_t)r->left; /* the zeros before the signal */
    ct_status st = append_input(s, NULL, (size_t)r->left, 1);
    if (st != CT_OK) {
        free(s);
        return st;
    }
    *out = s;
    return CT_OK;
}

ct_status ct_rs_stream_feed(ct_rs_stream *s, const float *x, size_t n) {
    CT_TRY(append_input(s, x, n, 0));
    s->n_in += (int64_t)n;
    return schedule(s, 0);
}

ct_status ct_rs_stream_finish(ct_rs_stream *s) {
    CT_TRY(schedule(s, 1));
    while (s->qn) CT_TRY(pop(s));
    return CT_OK;
}

void ct_rs_stream_free(ct_rs_stream *s) {
    if (!s) return;
    while (s->qn) { /* a failed decode: let the helpers finish, drop the rest */
        block *b = s->q[s->qhead];
        s->q[s->qhead] = NULL;
        s->qhead = (s->qhead + 1) % MAX_INFLIGHT;
        s->qn--;
        ct_tasks_wait(s->tasks, &b->task);
        block_free(b);
    }
    free(s->buf);
    free(s);
}
