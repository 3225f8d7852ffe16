/* viterbi.h — CTC forced alignment (a port of torchaudio's CPU forced_align,
 * PRODUCT-DETAILS §9.7 step 4) and what turns its path into word times:
 * merge repeats, token spans with <star> and blank padding, words with start
 * and end (steps 5–8). The Python twin's alignment_utils / text_utils are the
 * oracle (tests/unit/test_align_viterbi.c). */
#ifndef CT_ALIGN_VITERBI_H
#define CT_ALIGN_VITERBI_H

#include <stddef.h>
#include <stdint.h>

#include "align/text.h"
#include "core/error.h"

/* Viterbi path over T frames of log-probabilities logp (T, C) float32 for L
 * targets (none equal to blank, all in [0, C)). path (T): the label of the
 * best state per frame, ties broken as torchaudio does. T < L + R (R = adjacent
 * equal targets), L = 0, a blank or out-of-range target → CT_ERR_INVALID_ARG
 * with torchaudio's reason (the segment falls back to uniform timing). */
ct_status ct_ctc_forced_align(int32_t *path, const float *logp, int T, int C, const int32_t *targets, int L,
                              int blank);

/* One run of equal labels: frames [start, end] inclusive. */
typedef struct ct_ctc_seg {
    int label, start, end;
} ct_ctc_seg;

/* merge_repeats: segs needs room for T entries; returns how many. */
int ct_ctc_merge_repeats(ct_ctc_seg *segs, const int32_t *path, int T);

/* Word times of one segment relative to its first frame (§9.7 steps 5–8):
 * rel_start/rel_end (t->n_words) in seconds, stride_ms per frame. *ok = 0 when
 * the twin would raise (token letters not met in order, spans missing, a word
 * literally "<star>"): the caller then uses the uniform fallback; *why says
 * why (static text). Errors other than OOM never come back as a status. */
ct_status ct_ctc_word_times(const ct_ctc_seg *segs, int n_segs, const ct_align_text *t, const ct_align_vocab *v,
                            double stride_ms, double *rel_start, double *rel_end, int *ok, const char **why);

/* Steps 4–8 on the T rows of one segment: forced alignment then word times.
 * *ok = 0 (with *why) for every case the twin turns into the fallback. */
ct_status ct_ctc_align_segment(const float *logp, int T, int C, const ct_align_text *t, const ct_align_vocab *v,
                               double stride_ms, double *rel_start, double *rel_end, int *ok, const char **why);

#endif
