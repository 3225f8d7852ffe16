/* timestamps.c — see timestamps.h. A line-by-line port of the decisions of
 * silero-vad 6.2.1's get_speech_timestamps (its Python is the reference;
 * the names below follow it), with the product's parameters. Sample
 * positions are integers, the derived limits doubles, as in Python.
 */
#include "vad/timestamps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WIN 512

typedef struct {
    ct_sample_span *v;
    size_t n, cap;
} span_list;

static ct_status push(span_list *l, int64_t start, int64_t end) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        ct_sample_span *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) return ct_fail(CT_ERR_OOM, "vad: out of memory");
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = (ct_sample_span){start, end};
    return CT_OK;
}

/* Python's floor division of integers. */
static int64_t floordiv2(int64_t x) { return x >= 0 ? x / 2 : -((-x + 1) / 2); }

typedef struct {
    int64_t end, dur;
} possible_end;

ct_status ct_vad_silero_spans(const float *probs, size_t n_probs, size_t n_samples, const ct_vad_options *o,
                              ct_sample_span **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (n_probs != (n_samples + WIN - 1) / WIN)
        return ct_fail(CT_ERR_INVALID_ARG, "vad: %zu probabilities for %zu samples (want %zu)", n_probs,
                       n_samples, (n_samples + WIN - 1) / WIN);
    for (size_t i = 0; i < n_probs; i++)
        if (!(probs[i] >= 0.0f && probs[i] <= 1.0f))
            return ct_fail(CT_ERR_INVALID_ARG, "vad: probability %zu is %g, outside [0, 1]", i, (double)probs[i]);

    const double sr = CT_VAD_RATE;
    /* Both thresholds are compared as binary32, like the probabilities. */
    const float threshold = (float)o->threshold;
    const float neg_threshold = (float)fmax(o->threshold - 0.15, 0.01);
    const double min_speech_ms = nearbyint(o->min_dur * 1000.0); /* round half to even */
    const double min_speech_samples = sr * min_speech_ms / 1000.0;
    const double speech_pad_samples = sr * o->speech_pad_ms / 1000.0;
    const double max_speech_samples = sr * o->max_dur - WIN - 2.0 * speech_pad_samples;
    const double min_silence_samples = sr * o->min_silence_ms / 1000.0;
    const double min_silence_at_max = sr * o->min_silence_at_max_speech_ms / 1000.0;
    const int use_max_poss = o->use_max_poss_sil_at_max_speech;
    const int64_t audio_length = (int64_t)n_samples;

    span_list speeches = {0};
    possible_end *ends = NULL;
    size_t n_ends = 0, cap_ends = 0;
    int triggered = 0, has_start = 0;
    int64_t cur_start = 0, temp_end = 0, prev_end = 0, next_start = 0;
    ct_status s = CT_OK;

    for (size_t i = 0; i < n_probs && s == CT_OK; i++) {
        const float p = probs[i];
        const int64_t cur = (int64_t)(WIN * i);

        /* 1. Speech again after a tentative end: remember the silence. */
        if (p >= threshold && temp_end) {
            int64_t sil = cur - temp_end;
            if ((double)sil > min_silence_at_max) {
                if (n_ends == cap_ends) {
                    size_t nc = cap_ends ? cap_ends * 2 : 16;
                    possible_end *ne = realloc(ends, nc * sizeof *ne);
                    if (!ne) {
                        s = ct_fail(CT_ERR_OOM, "vad: out of memory");
                        break;
                    }
                    ends = ne;
                    cap_ends = nc;
                }
                ends[n_ends++] = (possible_end){temp_end, sil};
            }
            temp_end = 0;
            if (next_start < prev_end) next_start = cur;
        }

        /* 2. Speech starts. */
        if (p >= threshold && !triggered) {
            triggered = 1;
            cur_start = cur;
            has_start = 1;
            continue;
        }

        /* 3. Speech too long: split it. */
        if (triggered && (double)(cur - cur_start) > max_speech_samples) {
            if (use_max_poss && n_ends > 0) {
                /* the widest recorded silence; the first on ties */
                size_t best = 0;
                for (size_t k = 1; k < n_ends; k++)
                    if (ends[k].dur > ends[best].dur) best = k;
                prev_end = ends[best].end;
                int64_t dur = ends[best].dur;
                if ((s = push(&speeches, cur_start, prev_end)) != CT_OK) break;
                has_start = 0;
                next_start = prev_end + dur;
                if (next_start < prev_end + cur) {
                    cur_start = next_start;
                    has_start = 1;
                } else {
                    triggered = 0;
                }
                prev_end = next_start = temp_end = 0;
                n_ends = 0;
            } else if (prev_end) {
                if ((s = push(&speeches, cur_start, prev_end)) != CT_OK) break;
                has_start = 0;
                if (next_start < prev_end) {
                    triggered = 0;
                } else {
                    cur_start = next_start;
                    has_start = 1;
                }
                prev_end = next_start = temp_end = 0;
                n_ends = 0;
            } else {
                if ((s = push(&speeches, cur_start, cur)) != CT_OK) break;
                has_start = 0;
                prev_end = next_start = temp_end = 0;
                triggered = 0;
                n_ends = 0;
                continue;
            }
        }

        /* 4. Silence while in speech: end it once long enough. */
        if (p < neg_threshold && triggered) {
            if (!temp_end) temp_end = cur;
            int64_t sil_now = cur - temp_end;
            if (!use_max_poss && (double)sil_now > min_silence_at_max) prev_end = temp_end;
            if ((double)sil_now < min_silence_samples) continue;
            if ((double)(temp_end - cur_start) > min_speech_samples) {
                if ((s = push(&speeches, cur_start, temp_end)) != CT_OK) break;
            }
            has_start = 0;
            prev_end = next_start = temp_end = 0;
            triggered = 0;
            n_ends = 0;
            continue;
        }
    }
    free(ends);
    if (s == CT_OK && has_start && (double)(audio_length - cur_start) > min_speech_samples)
        s = push(&speeches, cur_start, audio_length);
    if (s != CT_OK) {
        free(speeches.v);
        return s;
    }

    /* Padding; gaps narrower than two pads are split in half. */
    ct_sample_span *v = speeches.v;
    for (size_t i = 0; i < speeches.n; i++) {
        if (i == 0) v[i].start = (int64_t)fmax(0.0, (double)v[i].start - speech_pad_samples);
        if (i + 1 != speeches.n) {
            int64_t gap = v[i + 1].start - v[i].end;
            if ((double)gap < 2.0 * speech_pad_samples) {
                v[i].end += floordiv2(gap);
                v[i + 1].start = (int64_t)fmax(0.0, (double)(v[i + 1].start - floordiv2(gap)));
            } else {
                v[i].end = (int64_t)fmin((double)audio_length, (double)v[i].end + speech_pad_samples);
                v[i + 1].start = (int64_t)fmax(0.0, (double)v[i + 1].start - speech_pad_samples);
            }
        } else {
            v[i].end = (int64_t)fmin((double)audio_length, (double)v[i].end + speech_pad_samples);
        }
    }
    *out = v;
    *n_out = speeches.n;
    return CT_OK;
}

size_t ct_vad_samples_to_seconds(ct_span *out, const ct_sample_span *spans, size_t n, size_t n_samples) {
    const double dur = (double)n_samples / CT_VAD_RATE;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double s = fmax(0.0, (double)spans[i].start / CT_VAD_RATE);
        double e = fmin(dur, (double)spans[i].end / CT_VAD_RATE);
        if (e <= s) continue;
        out[k++] = (ct_span){s, e};
    }
    return k;
}
