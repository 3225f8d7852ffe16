/* vad.c — see vad.h: option defaults and checks, validate, merge, and the
 * per-file entry point that runs one of the three segmenters. The network
 * itself is in silero.c, the state machines in timestamps.c and energy.c.
 */
#include "vad/vad.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vad/energy.h"
#include "vad/fixed.h"
#include "vad/silero.h"
#include "vad/timestamps.h"

ct_vad_options ct_vad_default_options(void) {
    return (ct_vad_options){
        .mode = CT_VAD_SILERO,
        .threshold = 0.5,
        .min_silence_ms = 300,
        .speech_pad_ms = 60,
        .min_dur = 0.5,
        .max_dur = 30.0,
        .max_silence = 0.6,
        .energy_threshold = 50.0,
        .merge = 0,
        .min_silence_at_max_speech_ms = 98,
        .use_max_poss_sil_at_max_speech = 1,
    };
}

ct_status ct_vad_check_options(const ct_vad_options *o) {
    if (!isfinite(o->min_dur) || !isfinite(o->max_dur) || o->min_dur < 0 || o->min_dur > o->max_dur)
        return ct_fail(CT_ERR_INVALID_ARG, "--min-dur %g / --max-dur %g: need 0 <= min <= max", o->min_dur,
                       o->max_dur);
    if (o->max_dur > CT_VAD_MAX_SEGMENT_S || o->max_dur <= 0)
        return ct_fail(CT_ERR_INVALID_ARG, "--max-dur %g: must be > 0 and <= %g s", o->max_dur,
                       CT_VAD_MAX_SEGMENT_S);
    switch (o->mode) {
    case CT_VAD_SILERO:
        if (!(o->threshold >= 0 && o->threshold <= 1))
            return ct_fail(CT_ERR_INVALID_ARG, "--vad-threshold %g: must be within [0, 1]", o->threshold);
        if (!(o->min_silence_ms >= 0) || !isfinite(o->min_silence_ms))
            return ct_fail(CT_ERR_INVALID_ARG, "--min-silence-ms %g: must be >= 0", o->min_silence_ms);
        if (!(o->speech_pad_ms >= 0) || !isfinite(o->speech_pad_ms))
            return ct_fail(CT_ERR_INVALID_ARG, "--speech-pad-ms %g: must be >= 0", o->speech_pad_ms);
        break;
    case CT_VAD_AUDITOK:
        if (!isfinite(o->energy_threshold))
            return ct_fail(CT_ERR_INVALID_ARG, "--energy-threshold must be finite");
        if (!(o->max_silence >= 0) || !isfinite(o->max_silence) || o->max_silence >= o->max_dur)
            return ct_fail(CT_ERR_INVALID_ARG, "--max-silence %g: must be >= 0 and < --max-dur %g",
                           o->max_silence, o->max_dur);
        if (!(o->min_dur > 0))
            return ct_fail(CT_ERR_INVALID_ARG, "--min-dur %g: the energy VAD needs min_dur > 0", o->min_dur);
        break;
    case CT_VAD_NONE:
        if (o->max_dur < 1.0)
            return ct_fail(CT_ERR_INVALID_ARG, "--max-dur %g: fixed windows need at least 1 s", o->max_dur);
        break;
    default: return ct_fail(CT_ERR_INVALID_ARG, "unknown VAD mode %d", (int)o->mode);
    }
    return CT_OK;
}

ct_status ct_vad_validate(ct_span *v, size_t *n, double duration, double max_duration) {
    const double tol = 2.0 / CT_VAD_RATE;
    double limit = fmin(max_duration, CT_VAD_MAX_SEGMENT_S);
    size_t k = 0;
    double prev_end = 0;
    int have_prev = 0;
    for (size_t i = 0; i < *n; i++) {
        double s = v[i].start, e = v[i].end;
        if (!isfinite(s) || !isfinite(e))
            return ct_fail(CT_ERR_INVALID_ARG, "Segment %zu has a non-finite bound", i);
        if (e < s) return ct_fail(CT_ERR_INVALID_ARG, "Segment %zu has inverted bounds", i);
        if (s < -tol || e > duration + tol)
            return ct_fail(CT_ERR_INVALID_ARG, "Segment %zu lies outside the audio: %.6f..%.6f for %.6fs", i, s,
                           e, duration);
        s = fmin(fmax(s, 0.0), duration);
        e = fmin(fmax(e, 0.0), duration);
        if (e <= s) continue;
        if (have_prev) {
            if (s < prev_end - tol) return ct_fail(CT_ERR_INVALID_ARG, "Segment %zu overlaps or is out of order", i);
            if (s < prev_end) s = prev_end;
        }
        if (e - s > limit + tol)
            return ct_fail(CT_ERR_INVALID_ARG, "Segment %zu is %gs, exceeding the %gs single-row limit", i, e - s,
                           limit);
        v[k++] = (ct_span){s, e};
        prev_end = e;
        have_prev = 1;
    }
    *n = k;
    return CT_OK;
}

size_t ct_vad_merge(ct_span *out, const ct_span *spans, size_t n, double max_dur) {
    if (n == 0) return 0;
    size_t k = 0;
    ct_span cur = spans[0];
    for (size_t i = 1; i < n; i++) {
        if (spans[i].end - cur.start <= max_dur + 1e-9) {
            cur.end = spans[i].end; /* the gap between them is absorbed */
        } else {
            out[k++] = cur;
            cur = spans[i];
        }
    }
    out[k++] = cur;
    return k;
}

void ct_vad_result_free(ct_vad_result *r) {
    if (!r) return;
    free(r->probs);
    free(r->spans);
    free(r->segments);
    memset(r, 0, sizeof *r);
}

/* Raw spans (already in r->spans, r->n_spans) → validated spans and segments. */
static ct_status finish(ct_vad_result *r, const ct_vad_options *o) {
    CT_TRY(ct_vad_validate(r->spans, &r->n_spans, r->duration, o->max_dur));
    size_t n = r->n_spans ? r->n_spans : 1;
    r->segments = malloc(n * sizeof *r->segments);
    if (!r->segments) return ct_fail(CT_ERR_OOM, "vad: out of memory");
    if (o->mode == CT_VAD_SILERO && o->merge) {
        r->n_segments = ct_vad_merge(r->segments, r->spans, r->n_spans, o->max_dur);
        CT_TRY(ct_vad_validate(r->segments, &r->n_segments, r->duration, o->max_dur));
    } else {
        if (r->n_spans) memcpy(r->segments, r->spans, r->n_spans * sizeof *r->spans);
        r->n_segments = r->n_spans;
    }
    return CT_OK;
}

/* Silero spans from probabilities the result takes over: probs (n_probs
 * floats, malloc'd) becomes out->probs on success and is freed on failure, so
 * the caller never frees it and never copies it. */
static ct_status segment_owned_probs(float *probs, size_t n_probs, size_t n, const ct_vad_options *o,
                                     ct_vad_result *out) {
    memset(out, 0, sizeof *out);
    out->probs = probs;
    out->n_probs = n_probs;
    out->duration = (double)n / CT_VAD_RATE;
    ct_sample_span *ss = NULL;
    size_t ns = 0;
    ct_status s = ct_vad_check_options(o);
    if (s == CT_OK) s = ct_vad_silero_spans(probs, n_probs, n, o, &ss, &ns);
    if (s == CT_OK) {
        out->spans = malloc((ns ? ns : 1) * sizeof(ct_span));
        if (!out->spans) s = ct_fail(CT_ERR_OOM, "vad: out of memory");
    }
    if (s == CT_OK) {
        out->n_spans = ct_vad_samples_to_seconds(out->spans, ss, ns, n);
        s = finish(out, o);
    }
    free(ss);
    if (s != CT_OK) ct_vad_result_free(out); /* frees probs too */
    return s;
}

ct_status ct_vad_segment_probs(const float *probs, size_t n_probs, size_t n, const ct_vad_options *o,
                               ct_vad_result *out) {
    memset(out, 0, sizeof *out);
    CT_TRY(ct_vad_check_options(o));
    float *copy = malloc((n_probs ? n_probs : 1) * sizeof(float));
    if (!copy) return ct_fail(CT_ERR_OOM, "vad: out of memory");
    if (n_probs) memcpy(copy, probs, n_probs * sizeof(float));
    return segment_owned_probs(copy, n_probs, n, o, out);
}

ct_status ct_vad_segment(const float *audio, size_t n, const ct_vad_options *o, const ct_silero *silero,
                         ct_vad_result *out) {
    return ct_vad_segment_tasks(audio, n, o, silero, NULL, out);
}

ct_status ct_vad_segment_tasks(const float *audio, size_t n, const ct_vad_options *o, const ct_silero *silero,
                               struct ct_tasks *tasks, ct_vad_result *out) {
    memset(out, 0, sizeof *out);
    CT_TRY(ct_vad_check_options(o));
    ct_status s;
    if (o->mode == CT_VAD_SILERO) {
        if (!silero) return ct_fail(CT_ERR_INVALID_ARG, "vad: Silero mode needs the model");
        size_t nf = ct_silero_frame_count(n);
        float *p = malloc((nf ? nf : 1) * sizeof(float));
        if (!p) return ct_fail(CT_ERR_OOM, "vad: out of memory");
        if (tasks) {
            s = ct_silero_probs_tasks(silero, audio, n, tasks, p);
        } else {
            float *outs[1] = {p};
            s = ct_silero_probs_batch(silero, &audio, &n, 1, outs);
        }
        if (s != CT_OK) {
            free(p);
            return s;
        }
        return segment_owned_probs(p, nf, n, o, out); /* p is the result's now */
    }
    out->duration = (double)n / CT_VAD_RATE;
    if (o->mode == CT_VAD_AUDITOK) s = ct_vad_energy_spans(audio, n, o, &out->spans, &out->n_spans);
    else s = ct_vad_fixed_spans(n, o->max_dur, &out->spans, &out->n_spans);
    if (s == CT_OK) s = finish(out, o);
    if (s != CT_OK) ct_vad_result_free(out);
    return s;
}

ct_status ct_vad_segment_batch(const float *const *audio, const size_t *n, int batch, const ct_vad_options *o,
                               const ct_silero *silero, ct_vad_result *out) {
    if (batch < 0) return ct_fail(CT_ERR_INVALID_ARG, "vad: negative batch");
    for (int b = 0; b < batch; b++) memset(&out[b], 0, sizeof out[b]);
    CT_TRY(ct_vad_check_options(o));
    if (o->mode != CT_VAD_SILERO) {
        for (int b = 0; b < batch; b++) {
            ct_status s = ct_vad_segment(audio[b], n[b], o, silero, &out[b]);
            if (s != CT_OK) {
                for (int j = 0; j < b; j++) ct_vad_result_free(&out[j]);
                return ct_fail_wrap(s, "file %d", b);
            }
        }
        return CT_OK;
    }
    if (!silero) return ct_fail(CT_ERR_INVALID_ARG, "vad: Silero mode needs the model");
    float **probs = calloc((size_t)(batch ? batch : 1), sizeof *probs);
    ct_status s = probs ? CT_OK : ct_fail(CT_ERR_OOM, "vad: out of memory");
    for (int b = 0; b < batch && s == CT_OK; b++) {
        size_t nf = ct_silero_frame_count(n[b]);
        probs[b] = malloc((nf ? nf : 1) * sizeof(float));
        if (!probs[b]) s = ct_fail(CT_ERR_OOM, "vad: out of memory");
    }
    if (s == CT_OK) s = ct_silero_probs_batch(silero, audio, n, batch, probs);
    int failed = -1;
    for (int b = 0; b < batch && s == CT_OK; b++) {
        s = segment_owned_probs(probs[b], ct_silero_frame_count(n[b]), n[b], o, &out[b]);
        probs[b] = NULL; /* out[b] owns it now, or it was freed with out[b] */
        if (s != CT_OK) failed = b;
    }
    if (probs)
        for (int b = 0; b < batch; b++) free(probs[b]);
    free(probs);
    if (s != CT_OK) {
        for (int b = 0; b < batch; b++) ct_vad_result_free(&out[b]);
        if (failed >= 0) return ct_fail_wrap(s, "file %d", failed);
    }
    return s;
}
