/* energy.h — the energy VAD (`--vad auditok`, PRODUCT-DETAILS §7): 50 ms
 * windows, energy 20·log10(max(RMS, 1e-10)) of the samples scaled to 16-bit,
 * a window is active when its energy ≥ the threshold, and auditok's
 * StreamTokenizer (non-strict minimum length, trailing silence kept) turns
 * active windows into spans, cut at the maximum duration.
 */
#ifndef CT_VAD_ENERGY_H
#define CT_VAD_ENERGY_H

#include "vad/vad.h"

#define CT_ENERGY_WINDOW 800 /* trunc(0.05 * 16000) samples */

/* Energy in dB of one window of samples (floats in [-1, 1], clamped). */
double ct_vad_energy_db(const float *x, size_t n);

/* Spans in seconds (before validation) of n samples at 16 kHz, using
 * energy_threshold, min_dur, max_dur and max_silence of o. *out is
 * malloc'd (NULL when none). Bad parameters give CT_ERR_INVALID_ARG with
 * the original's messages. */
CT_NODISCARD ct_status ct_vad_energy_spans(const float *audio, size_t n, const ct_vad_options *o,
                                           ct_span **out, size_t *n_out);

#endif
