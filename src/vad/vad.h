/* vad.h — speech segmentation: options, span types, validation, merging,
 * and the entry point that turns 16 kHz mono audio into segments with one
 * of the three modes (Silero VAD, energy VAD, fixed windows).
 *
 * Behaviour follows PRODUCT.md §4 and PRODUCT-DETAILS.md §7–§8. Spans in
 * seconds are [start, end) pairs of doubles; "raw speech spans" are the
 * VAD's output, "segments" what the model transcribes (the same unless
 * --vad-merge joins spans).
 */
#ifndef CT_VAD_VAD_H
#define CT_VAD_VAD_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define CT_VAD_RATE 16000
/* No segment may be longer than the model's window. */
#define CT_VAD_MAX_SEGMENT_S 35.0

typedef enum ct_vad_mode { CT_VAD_SILERO = 0, CT_VAD_AUDITOK = 1, CT_VAD_NONE = 2 } ct_vad_mode;

typedef struct ct_span {
    double start, end; /* seconds */
} ct_span;

typedef struct ct_sample_span {
    int64_t start, end; /* samples */
} ct_sample_span;

typedef struct ct_vad_options {
    ct_vad_mode mode;        /* --vad: silero */
    double threshold;        /* --vad-threshold: 0.5 */
    double min_silence_ms;   /* --min-silence-ms: 300 */
    double speech_pad_ms;    /* --speech-pad-ms: 60 */
    double min_dur;          /* --min-dur: 0.5 s */
    double max_dur;          /* --max-dur: 30 s */
    double max_silence;      /* --max-silence: 0.6 s (energy VAD) */
    double energy_threshold; /* --energy-threshold: 50 dB (energy VAD) */
    int merge;               /* --vad-merge: off (Silero only) */
    /* Fixed in the product (98 ms, on); exposed for tests of the state
     * machine's other branches. */
    double min_silence_at_max_speech_ms;
    int use_max_poss_sil_at_max_speech;
} ct_vad_options;

ct_vad_options ct_vad_default_options(void);

/* The option rules of PRODUCT.md §2 (0 ≤ min ≤ max ≤ 35, max ≥ 1 for fixed
 * windows, max_silence < max_dur, finite values, threshold in [0, 1]). */
CT_NODISCARD ct_status ct_vad_check_options(const ct_vad_options *o);

/* validate (PRODUCT-DETAILS §7), in place: bounds finite and not inverted,
 * inside [−tol, duration + tol] (tol = 2 samples), clamped to the audio,
 * empty rows dropped, in order without overlap, none longer than
 * max_duration (+ tol) nor CT_VAD_MAX_SEGMENT_S. *n is updated. */
CT_NODISCARD ct_status ct_vad_validate(ct_span *spans, size_t *n, double duration, double max_duration);

/* --vad-merge: consecutive spans joined greedily while the joined span is
 * ≤ max_dur (+1e-9); out has room for n spans (may alias spans). */
size_t ct_vad_merge(ct_span *out, const ct_span *spans, size_t n, double max_dur);

/* Result of segmenting one file. probs: Silero mode only (else NULL). */
typedef struct ct_vad_result {
    double duration;
    float *probs;
    size_t n_probs;
    ct_span *spans; /* raw speech spans (validated) */
    size_t n_spans;
    ct_span *segments; /* what gets transcribed (validated) */
    size_t n_segments;
} ct_vad_result;

struct ct_silero;

/* Segment one file. silero: the loaded model (Silero mode only). */
CT_NODISCARD ct_status ct_vad_segment(const float *audio, size_t n, const ct_vad_options *o,
                                      const struct ct_silero *silero, ct_vad_result *out);

struct ct_tasks;

/* The same, with Silero's frame-independent work spread over the pool's
 * helpers (ct_silero_probs_tasks): bit-identical results. tasks NULL: as
 * ct_vad_segment. Other modes ignore tasks (they are cheap). */
CT_NODISCARD ct_status ct_vad_segment_tasks(const float *audio, size_t n, const ct_vad_options *o,
                                            const struct ct_silero *silero, struct ct_tasks *tasks,
                                            ct_vad_result *out);

/* Segment `batch` files at once (Silero mode: their frames advance together
 * through the network; other modes: one after another). out[b] receives
 * file b's result; on failure every out[b] is left empty and the message
 * names the file's index. */
CT_NODISCARD ct_status ct_vad_segment_batch(const float *const *audio, const size_t *n, int batch,
                                            const ct_vad_options *o, const struct ct_silero *silero,
                                            ct_vad_result *out);

/* Segments from already computed probabilities (Silero mode); the same as
 * ct_vad_segment after the network. probs is copied into the result. */
CT_NODISCARD ct_status ct_vad_segment_probs(const float *probs, size_t n_probs, size_t n,
                                            const ct_vad_options *o, ct_vad_result *out);

void ct_vad_result_free(ct_vad_result *r);

#endif
