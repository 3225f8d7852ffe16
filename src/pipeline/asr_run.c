/* asr_run.c — the decoding policy of PRODUCT-DETAILS §13 (token-limit
 * retry, repetition guard, per-call limits) over the batch scheduler and the
 * engine's batch entry point. It does not know files: the caller hands it
 * segment slices of any number of files. */
#include "pipeline/asr_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/guards.h"
#include "asr/scheduler.h"
#include "core/trace.h"
#include "core/fs.h"
#include "output/pytext.h"

/* In place: the original strips every segment text with Python's strip(). */
static void strip_in_place(char *s) {
    size_t off, len;
    ct_py_strip_range(s, strlen(s), &off, &len);
    memmove(s, s + off, len);
    s[len] = 0;
}

void ct_asr_seg_clear(ct_asr_seg *s) {
    free(s->text);
    free(s->error);
    s->text = s->error = NULL;
}

void ct_asr_run_stats_clear(ct_asr_run_stats *st) {
    free(st->calls);
    memset(st, 0, sizeof *st);
}

typedef struct {
    ct_asr *asr;
    ct_asr_seg *segs;
    const size_t *map;  /* scheduler item -> segment index */
    const ct_asr_run_options *o;
    ct_asr_run_stats *st;
    int limit;          /* L of this pass */
    int capacity;       /* decoder context − prompt − 4 */
    int *next;          /* per segment: next limit when it must be retried, else 0 */
} pass_ctx;

static ct_status record_call(ct_asr_run_stats *st, const ct_asr_call *c) {
    if (!st) return CT_OK;
    if (st->n_calls == st->cap_calls) {
        size_t cap = st->cap_calls ? 2 * st->cap_calls : 64;
        ct_asr_call *p = realloc(st->calls, cap * sizeof *p);
        if (!p) return ct_fail(CT_ERR_OOM, "asr: call history");
        st->calls = p, st->cap_calls = cap;
    }
    st->calls[st->n_calls++] = *c;
    return CT_OK;
}

/* Fill segment k from row c of a call whose effective limit was eff. */
static ct_status take_row(pass_ctx *x, size_t k, const ct_asr_clip *c, int eff) {
    ct_asr_seg *sg = &x->segs[k];
    const ct_tokenizer *tok = ct_asr_tokenizer(x->asr);
    const ct_model_config *cfg = ct_asr_config(x->asr);
    int32_t eos = cfg->eos_id >= 0 ? cfg->eos_id : ct_tokenizer_id(tok, "<|endoftext|>");
    int n = c->n_tokens;
    int has_eos = n > 0 && c->tokens[n - 1] == eos;
    size_t g = (size_t)(has_eos ? n - 1 : n); /* the guard looks at generated tokens without EOS */
    int bench = x->o->benchmark_tokens_per_second > 0;
    /* Benchmark mode: the random weights' tokens mean nothing, so the guard
     * would cut rows at chance repeats (changing the recorded counts) and
     * the retry would re-decode every row (each reaches its imposed count),
     * doubling the work the mode exists to fix. Both are off there. */
    size_t stop = x->o->stop_repetition_loops && !bench ? ct_repetition_first_stop(c->tokens, g) : 0;
    free(sg->text);
    sg->text = NULL;
    sg->repetition_stopped = stop > 0;
    x->next[k] = 0;
    if (stop > 0) {
        CT_TRY(ct_tokenizer_decode(tok, c->tokens, (int)stop, &sg->text));
        sg->generated_tokens = (int)stop;
        sg->hit_limit = 0;
    } else {
        CT_TRY(ct_tokenizer_decode(tok, c->tokens, n, &sg->text));
        sg->generated_tokens = n;
        sg->hit_limit = !bench && !has_eos && n >= eff;
        if (sg->hit_limit && x->o->retry) {
            int nx = ct_retry_token_limit(x->limit, x->o->max_retry_tokens, eff, x->capacity);
            if (nx > x->limit) x->next[k] = nx;
        }
    }
    strip_in_place(sg->text);
    return CT_OK;
}

static ct_status exec_batch(void *vctx, const int *idx, int m) {
    pass_ctx *x = vctx;
    if (x->o->cancel && atomic_load(x->o->cancel)) return ct_fail(CT_ERR_ABORTED, "cancelled");
    const float **clips = malloc(sizeof *clips * (size_t)m);
    size_t *ns = malloc(sizeof *ns * (size_t)m);
    const char **langs = malloc(sizeof *langs * (size_t)m);
    double rate = x->o->benchmark_tokens_per_second;
    int *budget = rate > 0 ? malloc(sizeof *budget * (size_t)m) : NULL;
    if (!clips || !ns || !langs || (rate > 0 && !budget)) {
        free(clips), free(ns), free(langs), free(budget);
        return ct_fail(CT_ERR_OOM, "asr: batch of %d", m);
    }
    int eff = x->limit < x->capacity ? x->limit : x->capacity;
    size_t longest = 0;
    int most = 0;
    for (int i = 0; i < m; i++) {
        const ct_asr_seg *sg = &x->segs[x->map[idx[i]]];
        clips[i] = sg->pcm, ns[i] = sg->n, langs[i] = sg->language;
        if (sg->n > longest) longest = sg->n;
        if (budget) {
            budget[i] = ct_benchmark_token_count(rate, sg->n, eff);
            if (budget[i] > most) most = budget[i];
        }
    }
    ct_asr_request rq = ct_asr_default_request();
    rq.languages = langs;
    rq.punctuation = x->o->punctuation;
    rq.dither = x->o->dither;
    rq.max_new_tokens = eff;
    if (budget) { /* the call's limit is the longest row's count: the KV cache is sized by it */
        rq.ignore_eos = 1;
        rq.row_max_new_tokens = budget;
        rq.max_new_tokens = most;
    }
    ct_asr_result res;
    double t0 = ct_now();
    ct_status s = ct_asr_transcribe(x->asr, clips, ns, m, &rq, &res);
    double t1 = ct_now();
    ct_asr_call call = {.rows = m, .max_new_tokens = x->limit, .seconds = t1 - t0,
                        .padded_audio_seconds = (double)m * (double)longest / 16000.0};
    ct_trace_span("asr call", t0, t1, NULL, "\"rows\":%d,\"longest_s\":%.2f,\"max_new_tokens\":%d,\"ok\":%d", m,
                  (double)longest / 16000.0, rq.max_new_tokens, s == CT_OK);
    if (s != CT_OK) {
        call.oom = s == CT_ERR_OOM;
        if (m == 1) { /* the scheduler keeps one message; keep each failing segment's own */
            ct_asr_seg *sg = &x->segs[x->map[idx[0]]];
            free(sg->error);
            sg->error = strdup(ct_last_error());
        }
        char keep[1024];
        snprintf(keep, sizeof keep, "%s", ct_last_error());
        record_call(x->st, &call);
        ct_fail(s, "%s", keep);
    } else {
        for (int i = 0; i < m && s == CT_OK; i++) {
            s = take_row(x, x->map[idx[i]], &res.clips[i], eff);
            call.generated_tokens += x->segs[x->map[idx[i]]].generated_tokens;
        }
        if (x->st) {
            x->st->seconds_mel += res.seconds_mel;
            x->st->seconds_encoder += res.seconds_encoder;
            x->st->seconds_decoder += res.seconds_decoder;
        }
        ct_asr_result_free(&res);
        if (s == CT_OK) s = record_call(x->st, &call);
        if (s == CT_OK && x->o->on_batch) x->o->on_batch(x->o->user, m);
    }
    free(clips), free(ns), free(langs), free(budget);
    return s;
}

/* One scheduler pass over items map[0..m) at limit L with row cap `cap`. */
static ct_status run_pass(pass_ctx *x, ct_breaker *br, size_t m, int cap, int adaptive, int cap_limit) {
    double *sec = malloc(sizeof *sec * (m ? m : 1));
    ct_status *stat = malloc(sizeof *stat * (m ? m : 1));
    if (!sec || !stat) {
        free(sec), free(stat);
        return ct_fail(CT_ERR_OOM, "asr: %zu segments", m);
    }
    for (size_t i = 0; i < m; i++) sec[i] = (double)x->segs[x->map[i]].n / 16000.0;
    ct_sched_opts so;
    ct_sched_default_options(&so);
    so.max_rows = cap;
    so.max_rows_limit = cap_limit > cap ? cap_limit : cap;
    so.max_audio_s = x->o->batch_audio_seconds;
    so.adaptive = adaptive;
    ct_sched_stats ss;
    ct_status s = ct_sched_run(sec, (int)m, &so, exec_batch, x, br, stat, &ss);
    char first[512];
    snprintf(first, sizeof first, "%s", ct_last_error());
    for (size_t i = 0; i < m; i++) {
        ct_asr_seg *sg = &x->segs[x->map[i]];
        sg->status = stat[i];
        if (stat[i] != CT_OK) {
            x->next[x->map[i]] = 0;
            if (!sg->error) sg->error = strdup(stat[i] == CT_ERR_DEVICE && br->open ? br->message : ss.first_error);
        }
    }
    if (x->st) {
        x->st->batches += ss.batches;
        x->st->oom_retries += ss.oom_retries;
        if (ss.batches) {
            if (!x->st->effective_batch_min || ss.min_batch < x->st->effective_batch_min)
                x->st->effective_batch_min = ss.min_batch;
            if (ss.max_batch > x->st->effective_batch_max) x->st->effective_batch_max = ss.max_batch;
        }
        x->st->final_cap = ss.final_cap;
    }
    free(sec), free(stat);
    if (x->o->cancel && atomic_load(x->o->cancel)) return ct_fail(CT_ERR_ABORTED, "cancelled");
    if (s == CT_ERR_DEVICE) return ct_fail(s, "%s", first);
    return CT_OK; /* other failures are the segments' own */
}

ct_status ct_asr_run(ct_asr *asr, ct_breaker *br, ct_asr_seg *segs, size_t n, const ct_asr_run_options *o,
                     ct_asr_run_stats *stats) {
    if (n == 0) return CT_OK;
    if (o->batch_size < 1 || o->max_new_tokens < 1)
        return ct_fail(CT_ERR_INVALID_ARG, "asr: batch size %d, token budget %d", o->batch_size, o->max_new_tokens);
    const ct_model_config *cfg = ct_asr_config(asr);
    int32_t prompt[64];
    int P = 0;
    CT_TRY(ct_tokenizer_prompt(ct_asr_tokenizer(asr), segs[0].language, o->punctuation, prompt, 64, &P));
    int context = ct_asr_model_weights(asr)->hp.max_pos;
    (void)cfg;
    size_t *map = malloc(sizeof *map * n);
    int *next = calloc(n, sizeof *next);
    if (!map || !next) {
        free(map), free(next);
        return ct_fail(CT_ERR_OOM, "asr: %zu segments", n);
    }
    for (size_t i = 0; i < n; i++) {
        map[i] = i;
        segs[i].status = CT_OK;
        segs[i].retried = segs[i].hit_limit = segs[i].repetition_stopped = 0;
    }
    double t0 = ct_now();
    pass_ctx x = {.asr = asr, .segs = segs, .map = map, .o = o, .st = stats, .limit = o->max_new_tokens,
                  .capacity = ct_generation_capacity(context, P), .next = next};
    ct_status s = run_pass(&x, br, n, o->batch_size, o->adaptive, o->batch_max_size);
    /* Retries: every row of a pass had the same L, so the rows to retry share
     * one next limit; each level is one group with its own cap. */
    while (s == CT_OK) {
        size_t m = 0;
        int nl = 0;
        for (size_t i = 0; i < n; i++)
            if (next[i]) {
                map[m++] = i;
                nl = next[i];
                segs[i].retried = 1;
            }
        if (!m) break;
        if (stats) stats->truncation_retries += (int)m;
        x.limit = nl;
        s = run_pass(&x, br, m, (int)m, 0, (int)m);
    }
    if (stats) {
        stats->seconds += ct_now() - t0;
        for (size_t i = 0; i < n; i++)
            if (segs[i].status == CT_OK) stats->generated_tokens += segs[i].generated_tokens;
    }
    free(map), free(next);
    return s;
}
