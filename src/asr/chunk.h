/* chunk.h — the reference's long-audio split (MODEL.md "Long audio in the
 * reference"), as transformers 5.17's CohereAsrFeatureExtractor does it.
 *
 * A clip of at most (max_clip_s - overlap_s) seconds (30 s) stays whole.
 * A longer one is cut into chunks of at most max_clip_s (35 s): from the
 * chunk start idx, if idx + 35 s reaches the end the rest is the last chunk;
 * otherwise the cut is searched in [idx + 35 s - 5 s, idx + 35 s): that
 * stretch is scanned in windows of 1600 samples starting at its first
 * sample, stepping by 1600, for window starts i < len - 1600 (so a window
 * ending exactly at the stretch's end is not tried); the cut is the start of
 * the window with the lowest RMS (the first one on ties). A stretch of at
 * most 1600 samples is cut in its middle. Clips of 30-35 s come back as one
 * chunk.
 *
 * RMS here is computed in double; the reference sums float32 squares, so
 * two windows whose RMS agree to ~1e-7 relative could be ordered
 * differently (exact ties, e.g. digital silence, pick the first in both).
 */
#ifndef CT_ASR_CHUNK_H
#define CT_ASR_CHUNK_H

#include <stddef.h>

#include "core/error.h"

typedef struct ct_chunk_options {
    int sample_rate;       /* 16000 */
    double max_clip_s;     /* 35.0 (max_audio_clip_s) */
    double overlap_s;      /* 5.0 (overlap_chunk_second): the search stretch */
    int energy_window;     /* 1600 (min_energy_window_samples) */
} ct_chunk_options;

typedef struct ct_chunk_span {
    size_t start, end; /* samples [start, end) */
} ct_chunk_span;

ct_chunk_options ct_chunk_default_options(void);

/* Spans of x[0..n) (n > 0) in order, covering it exactly; *spans is
 * malloc'd (free() it), *count >= 1. n == 0 gives no spans. */
ct_status ct_chunk_split(const ct_chunk_options *opts, const float *x, size_t n,
                         ct_chunk_span **spans, size_t *count);

#endif
