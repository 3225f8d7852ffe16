/* fixed.h — fixed windows (`--vad none`): max(1, round-half-even(max_dur ·
 * 16000))-sample windows end to end, the last one cut at the end of the
 * audio; no windows for empty audio. Requires max_dur ≥ 1 s.
 */
#ifndef CT_VAD_FIXED_H
#define CT_VAD_FIXED_H

#include "vad/vad.h"

/* *out is malloc'd (NULL when n == 0). */
CT_NODISCARD ct_status ct_vad_fixed_spans(size_t n, double max_dur, ct_span **out, size_t *n_out);

#endif
