/* energy.c — see energy.h. The tokenizer is auditok's StreamTokenizer as the
 * original drives it (PRODUCT-DETAILS §7): states SILENCE, NOISE and
 * POSSIBLE_SILENCE; a token keeps up to max_silence of trailing silence; a
 * token reaching the maximum length is delivered and its continuation is
 * accepted even when short. Only counts are kept, not the frames.
 */
#include "vad/energy.h"

#include <math.h>
#include <stdlib.h>

#define FRAME_S 0.05

double ct_vad_energy_db(const float *x, size_t n) {
    if (n == 0) return 20.0 * log10(1e-10);
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        v = v < -1.0f ? -1.0f : v > 1.0f ? 1.0f : v;
        /* scaled in double, rounded to binary32, truncated toward zero */
        int32_t q = (int32_t)(float)((double)v * 32767.0);
        sum += (int64_t)q * q;
    }
    double rms = sqrt((double)sum / (double)n);
    return 20.0 * log10(fmax(rms, 1e-10));
}

enum { SILENCE, NOISE, POSSIBLE_SILENCE };

typedef struct {
    int64_t start_frame; /* first frame of the token being collected */
    int64_t len;         /* frames in the token */
    int64_t samples;     /* their real sample counts */
    int contiguous;
    int64_t minimum;
    ct_span *v;
    size_t n, cap;
} tokenizer;

static ct_status deliver(tokenizer *t, int64_t current, int truncated) {
    if (t->len >= t->minimum || (t->len > 0 && t->contiguous)) {
        if (t->n == t->cap) {
            size_t nc = t->cap ? t->cap * 2 : 16;
            ct_span *nv = realloc(t->v, nc * sizeof *nv);
            if (!nv) return ct_fail(CT_ERR_OOM, "vad: out of memory");
            t->v = nv;
            t->cap = nc;
        }
        double s = (double)t->start_frame * FRAME_S;
        t->v[t->n++] = (ct_span){s, s + (double)t->samples / CT_VAD_RATE};
        if (truncated) {
            t->start_frame = current + 1;
            t->contiguous = 1;
        } else {
            t->contiguous = 0;
        }
    } else {
        t->contiguous = 0;
    }
    t->len = 0;
    t->samples = 0;
    return CT_OK;
}

ct_status ct_vad_energy_spans(const float *audio, size_t n, const ct_vad_options *o, ct_span **out,
                              size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (!isfinite(o->energy_threshold))
        return ct_fail(CT_ERR_INVALID_ARG, "vad: energy threshold must be finite");
    if (!(o->min_dur > 0) || !(o->max_dur > 0) || !(o->max_silence >= 0) || !isfinite(o->min_dur) ||
        !isfinite(o->max_dur) || !isfinite(o->max_silence))
        return ct_fail(CT_ERR_INVALID_ARG,
                       "vad: energy VAD needs min_dur > 0, max_dur > 0 and max_silence >= 0 (finite)");
    const int64_t minimum = (int64_t)ceil(o->min_dur / FRAME_S);
    const int64_t maximum = (int64_t)floor(o->max_dur / FRAME_S + 1e-10);
    const int64_t silence_frames = (int64_t)floor(o->max_silence / FRAME_S + 1e-10);
    if (maximum < minimum) return ct_fail(CT_ERR_INVALID_ARG, "max_duration must cover min_duration");
    if (silence_frames >= maximum)
        return ct_fail(CT_ERR_INVALID_ARG, "max_silence must cover fewer analysis windows than max_duration");

    tokenizer t = {.minimum = minimum};
    int state = SILENCE;
    int64_t silence_len = 0;
    const int64_t frames = (int64_t)((n + CT_ENERGY_WINDOW - 1) / CT_ENERGY_WINDOW);
    ct_status s = CT_OK;
    for (int64_t f = 0; f < frames && s == CT_OK; f++) {
        size_t a = (size_t)f * CT_ENERGY_WINDOW;
        size_t cnt = n - a < CT_ENERGY_WINDOW ? n - a : CT_ENERGY_WINDOW;
        int active = ct_vad_energy_db(audio + a, cnt) >= o->energy_threshold;
        switch (state) {
        case SILENCE:
            if (active) {
                t.start_frame = f;
                silence_len = 0;
                t.len = 1;
                t.samples = (int64_t)cnt;
                state = NOISE;
                if (t.len >= maximum) s = deliver(&t, f, 1);
            }
            break;
        case NOISE:
            if (active) {
                t.len++, t.samples += (int64_t)cnt;
                if (t.len >= maximum) s = deliver(&t, f, 1);
            } else if (silence_frames <= 0) {
                state = SILENCE;
                s = deliver(&t, f, 0); /* the silent frame is not part of it */
            } else {
                silence_len = 1;
                t.len++, t.samples += (int64_t)cnt;
                state = POSSIBLE_SILENCE;
                if (t.len == maximum) s = deliver(&t, f, 1);
            }
            break;
        default: /* POSSIBLE_SILENCE */
            if (active) {
                t.len++, t.samples += (int64_t)cnt;
                silence_len = 0;
                state = NOISE;
                if (t.len >= maximum) s = deliver(&t, f, 1);
            } else if (silence_len >= silence_frames) {
                state = SILENCE;
                if (silence_len < t.len) {
                    s = deliver(&t, f, 0);
                } else {
                    t.len = 0, t.samples = 0;
                    silence_len = 0;
                }
            } else {
                t.len++, t.samples += (int64_t)cnt;
                silence_len++;
                if (t.len >= maximum) s = deliver(&t, f, 1);
            }
            break;
        }
    }
    if (s == CT_OK && state != SILENCE && t.len > 0 && t.len > silence_len) s = deliver(&t, frames, 0);
    if (s != CT_OK) {
        free(t.v);
        return s;
    }
    *out = t.v;
    *n_out = t.n;
    return CT_OK;
}
