/* timing.c — segment and speech-span word timings (timing.h, PRODUCT-DETAILS
 * §6), with the original's exact arithmetic so word bounds match to the bit
 * (start + k·d, not start + k·(end−start)/N).
 */
#include "output/timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/pytext.h"

void ct_word_list_free(ct_word_list *l) {
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) free(l->v[i].text);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static ct_status push_word(ct_word_list *l, double start, double end, const char *text, size_t len, int seg,
                           int k, ct_timing_source src) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        ct_rec_word *v = realloc(l->v, cap * sizeof *v);
        if (!v) return ct_fail(CT_ERR_OOM, "timing: out of memory");
        l->v = v;
        l->cap = cap;
    }
    char *t = malloc(len + 1);
    if (!t) return ct_fail(CT_ERR_OOM, "timing: out of memory");
    memcpy(t, text, len);
    t[len] = '\0';
    ct_rec_word *w = &l->v[l->n++];
    w->start = start;
    w->end = end;
    w->text = t;
    w->segment_index = seg;
    w->segment_word_index = k;
    w->source = src;
    return CT_OK;
}

ct_status ct_timing_uniform_words(const char *text, double start, double end, int segment_index,
                                  ct_timing_source source, ct_word_list *out) {
    ct_py_field *tok;
    size_t n;
    CT_TRY(ct_py_split(text, strlen(text), &tok, &n));
    ct_status st = CT_OK;
    if (n) {
        double d = fmax(0.0, end - start) / (double)n;
        for (size_t k = 0; k < n && st == CT_OK; k++)
            st = push_word(out, start + (double)k * d, start + (double)(k + 1) * d, text + tok[k].off, tok[k].len,
                           segment_index, (int)k, source);
    }
    free(tok);
    return st;
}

typedef struct rem {
    double frac, dur;
    size_t idx;
} rem;

static int rem_cmp(const void *a, const void *b) {
    const rem *x = a, *y = b;
    if (x->frac != y->frac) return x->frac > y->frac ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

void ct_timing_proportional_counts(size_t tokens, const ct_span *spans, size_t n, int *counts) {
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        counts[i] = 0;
        total += fmax(0.0, spans[i].end - spans[i].start);
    }
    if (tokens == 0 || !(total > 0) || n == 0) return;
    rem *r = malloc(n * sizeof *r);
    double N = (double)tokens;
    size_t placed = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fmax(0.0, spans[i].end - spans[i].start);
        double exact = N * (d / total); /* the gem divides first */
        double fl = floor(exact);
        counts[i] = (int)fl;
        placed += (size_t)fl;
        if (r) r[i] = (rem){exact - fl, d, i};
    }
    if (!r) return; /* out of memory: floors only (the caller checks the total) */
    qsort(r, n, sizeof *r, rem_cmp);
    for (size_t j = 0; placed < tokens && j < n; j++, placed++) counts[r[j].idx]++;
    free(r);
}

ct_status ct_timing_spans_within(const ct_span *spans, size_t n, double start, double end, ct_span **out,
                                 size_t *count) {
    *out = NULL;
    *count = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (spans[i].end > start && spans[i].start < end) k++;
    if (!k) return CT_OK;
    ct_span *o = malloc(k * sizeof *o);
    if (!o) return ct_fail(CT_ERR_OOM, "timing: out of memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(spans[i].end > start && spans[i].start < end)) continue;
        double s = fmax(start, spans[i].start), e = fmin(end, spans[i].end);
        if (e > s) o[m++] = (ct_span){s, e};
    }
    if (!m) {
        free(o);
        return CT_OK;
    }
    *out = o;
    *count = m;
    return CT_OK;
}

ct_status ct_timing_span_words(const char *text, const ct_span *spans, size_t n, int segment_index,
                               ct_word_list *out) {
    ct_py_field *tok;
    size_t ntok;
    CT_TRY(ct_py_split(text, strlen(text), &tok, &ntok));
    ct_span *valid = n ? malloc(n * sizeof *valid) : NULL;
    int *counts = n ? malloc(n * sizeof *counts) : NULL;
    ct_status st = CT_OK;
    if (n && (!valid || !counts)) st = ct_fail(CT_ERR_OOM, "timing: out of memory");
    size_t nv = 0;
    for (size_t i = 0; st == CT_OK && i < n; i++)
        if (spans[i].end > spans[i].start) valid[nv++] = spans[i];
    if (st == CT_OK && ntok && nv) {
        ct_timing_proportional_counts(ntok, valid, nv, counts);
        size_t offset = 0;
        for (size_t i = 0; st == CT_OK && i < nv; i++) {
            int c = counts[i];
            if (c <= 0) continue;
            double d = (valid[i].end - valid[i].start) / (double)c;
            for (int j = 0; j < c && st == CT_OK; j++) {
                size_t t = offset + (size_t)j;
                if (t >= ntok) {
                    st = ct_fail(CT_ERR_INTERNAL, "Speech-span token allocation did not preserve every token");
                    break;
                }
                st = push_word(out, valid[i].start + (double)j * d, valid[i].start + (double)(j + 1) * d,
                               text + tok[t].off, tok[t].len, segment_index, (int)t,
                               CT_TIMING_UNIFORM_SPEECH_SPANS);
            }
            offset += (size_t)c;
        }
        if (st == CT_OK && offset != ntok)
            st = ct_fail(CT_ERR_INTERNAL, "Speech-span token allocation did not preserve every token");
    }
    free(tok);
    free(valid);
    free(counts);
    return st;
}

void ct_timing_adopt_words(ct_file_record *r, ct_word_list *l) {
    for (size_t i = 0; i < r->n_words; i++) free(r->words[i].text);
    free(r->words);
    r->words = l->v;
    r->n_words = l->n;
    memset(l, 0, sizeof *l);
}

ct_status ct_timing_build_words(ct_file_record *r, ct_alignment mode, int vad_merge) {
    if (mode == CT_ALIGN_WORD)
        return ct_fail(CT_ERR_INVALID_ARG, "timing: word timings come from the aligner, not segment timing");
    ct_word_list l = {0};
    ct_status st = CT_OK;
    for (size_t i = 0; mode == CT_ALIGN_SEGMENT && st == CT_OK && i < r->n_segments; i++) {
        const ct_rec_segment *s = &r->segments[i];
        const char *text = s->text ? s->text : "";
        ct_span *within = NULL;
        size_t nw = 0;
        if (vad_merge) st = ct_timing_spans_within(r->speech_spans, r->n_speech_spans, s->start, s->end, &within, &nw);
        if (st != CT_OK) break;
        if (nw)
            st = ct_timing_span_words(text, within, nw, s->index, &l);
        else
            st = ct_timing_uniform_words(text, s->start, s->end, s->index, CT_TIMING_UNIFORM_SEGMENT, &l);
        free(within);
    }
    if (st != CT_OK) {
        ct_word_list_free(&l);
        return st;
    }
    ct_timing_adopt_words(r, &l);
    return CT_OK;
}

const char *ct_timing_source_name(ct_timing_source s) {
    switch (s) {
    case CT_TIMING_CTC: return "ctc";
    case CT_TIMING_UNIFORM_SEGMENT: return "uniform_segment";
    case CT_TIMING_UNIFORM_SPEECH_SPANS: return "uniform_speech_spans";
    case CT_TIMING_UNIFORM_FALLBACK: return "uniform_fallback";
    }
    return "unknown";
}
