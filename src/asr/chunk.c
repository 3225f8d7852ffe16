/* chunk.c — energy-based split of long audio into <= 35 s chunks, the rule
 * of CohereAsrFeatureExtractor._split_audio_chunks_energy (see chunk.h).
 * It only finds boundaries; it does not copy or resample audio.
 */
#include "asr/chunk.h"

#include <math.h>
#include <stdlib.h>

ct_chunk_options ct_chunk_default_options(void) {
    ct_chunk_options o;
    o.sample_rate = 16000;
    o.max_clip_s = 35.0;
    o.overlap_s = 5.0;
    o.energy_window = 1600;
    return o;
}

/* Python's int(round(v)) for the non-negative values used here
 * (round half to even), at least 1 as the reference clamps it. */
static size_t round_samples(double v) {
    double r = nearbyint(v); /* default rounding mode: half to even */
    return r < 1.0 ? 1 : (size_t)r;
}

/* _find_split_point_energy(waveform, s, e) */
static size_t quietest(const float *x, size_t s, size_t e, size_t win) {
    size_t len = e - s;
    if (len <= win) return (s + e) / 2;
    double best = INFINITY;
    size_t at = s;
    for (size_t i = 0; i < len - win; i += win) {
        const float *w = x + s + i;
        double acc = 0.0;
        for (size_t k = 0; k < win; k++) acc += (double)w[k] * (double)w[k];
        double rms = sqrt(acc / (double)win);
        if (rms < best) {
            best = rms;
            at = s + i;
        }
    }
    return at;
}

ct_status ct_chunk_split(const ct_chunk_options *opts, const float *x, size_t n,
                         ct_chunk_span **spans, size_t *count) {
    if (!spans || !count) return ct_fail(CT_ERR_INVALID_ARG, "chunk: spans/count is NULL");
    *spans = NULL;
    *count = 0;
    ct_chunk_options o = opts ? *opts : ct_chunk_default_options();
    if (o.sample_rate <= 0 || !(o.max_clip_s > 0.0) || !(o.overlap_s >= 0.0) ||
        o.overlap_s > o.max_clip_s || o.energy_window <= 0 || o.max_clip_s > 86400.0)
        return ct_fail(CT_ERR_INVALID_ARG, "chunk: bad options (rate %d, max %g s, overlap %g s, window %d)",
                       o.sample_rate, o.max_clip_s, o.overlap_s, o.energy_window);
    if (n == 0) return CT_OK;
    if (!x) return ct_fail(CT_ERR_INVALID_ARG, "chunk: samples are NULL");

    size_t chunk = round_samples(o.max_clip_s * o.sample_rate);
    size_t ctx = round_samples(o.overlap_s * o.sample_rate);
    size_t win = (size_t)o.energy_window;
    /* __call__ keeps a clip whole when duration <= max_clip_s - overlap_s,
     * and _split_audio_chunks_energy when n <= chunk */
    double fast = o.max_clip_s - o.overlap_s;
    if (fast < 0.0) fast = 0.0;
    size_t cap = (double)n / (double)o.sample_rate <= fast || n <= chunk ? 1 : n / (chunk > ctx ? chunk - ctx : 1) + 2;
    ct_chunk_span *out = malloc(sizeof *out * cap);
    if (!out) return ct_fail(CT_ERR_OOM, "chunk: out of memory");
    size_t k = 0;
    if (cap == 1) {
        out[k++] = (ct_chunk_span){0, n};
    } else {
        size_t idx = 0;
        while (idx < n) {
            if (idx + chunk >= n) {
                out[k++] = (ct_chunk_span){idx, n};
                break;
            }
            size_t s = idx + chunk > ctx ? idx + chunk - ctx : 0;
            if (s < idx) s = idx;
            size_t e = idx + chunk < n ? idx + chunk : n;
            size_t split = e <= s ? idx + chunk : quietest(x, s, e, win);
            if (split > n) split = n;
            if (split < idx + 1) split = idx + 1;
            if (k == cap) { /* cannot happen: every chunk but the last is >= chunk - ctx */
                free(out);
                return ct_fail(CT_ERR_INTERNAL, "chunk: more chunks than planned");
            }
            out[k++] = (ct_chunk_span){idx, split};
            idx = split;
        }
    }
    *spans = out;
    *count = k;
    return CT_OK;
}
