/* timestamps.h — Silero's speech-timestamp state machine (silero-vad 6.2.1
 * get_speech_timestamps, PRODUCT-DETAILS §8.2–§8.5): per-frame probabilities
 * to speech spans in samples, with hysteresis, minimum speech and silence,
 * the split of over-long speech at its widest silence, and padding; then the
 * conversion to seconds.
 */
#ifndef CT_VAD_TIMESTAMPS_H
#define CT_VAD_TIMESTAMPS_H

#include "vad/vad.h"

/* Spans in samples for n_samples of audio whose 512-sample frames have the
 * given probabilities (n_probs must be ceil(n_samples/512); each finite in
 * [0, 1]). *out is malloc'd (NULL when there are none). Uses threshold,
 * min_dur, max_dur, min_silence_ms, speech_pad_ms and the two max-speech
 * settings of o. */
CT_NODISCARD ct_status ct_vad_silero_spans(const float *probs, size_t n_probs, size_t n_samples,
                                           const ct_vad_options *o, ct_sample_span **out, size_t *n_out);

/* §8.5: to seconds (start = max(0, s/16000), end = min(N/16000, e/16000)),
 * rows with end ≤ start dropped. out has room for n spans. Returns the count. */
size_t ct_vad_samples_to_seconds(ct_span *out, const ct_sample_span *spans, size_t n, size_t n_samples);

#endif
