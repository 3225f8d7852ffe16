/* generate_dev.h — the greedy loop with its state on the device
 * (generate_dev.c), called by ct_generate_greedy (generate.c) once the
 * request is checked; not for other callers. */
#ifndef CT_ASR_GENERATE_DEV_H
#define CT_ASR_GENERATE_DEV_H

#include "asr/generate.h"

/* Rows 0..B−1 of st, prompts (B, P) host; budget and at_budget as the host
 * loop computes them; rows zeroed by the caller. graph: capture the step
 * once and replay it (the backend must have graphs). */
ct_status ct_generate_greedy_dev(const ct_asr_weights *w, ct_backend *be, ct_decoder_state *st, ct_arena *ws,
                                 const int32_t *prompts, int P, const ct_generate_options *opts, int budget,
                                 ct_stop_reason at_budget, int graph, ct_generate_row *rows);

#endif
