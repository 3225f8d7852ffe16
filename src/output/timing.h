/* timing.h — word timings from segments (PRODUCT-DETAILS §6): uniform over
 * the segment, uniform over the raw speech spans inside it (--vad-merge),
 * and the uniform fallback word alignment uses for a failed segment.
 *
 * Word mode (CTC) is made elsewhere (src/align/): it builds its own words
 * (source CT_TIMING_CTC, or CT_TIMING_UNIFORM_FALLBACK through
 * ct_timing_uniform_words) and hands them to the record with
 * ct_timing_adopt_words; cues and rendering do not care where words came
 * from.
 */
#ifndef CT_OUTPUT_TIMING_H
#define CT_OUTPUT_TIMING_H

#include <stddef.h>

#include "output/record.h"

/* A growable word array (what ct_file_record.words holds). */
typedef struct ct_word_list {
    ct_rec_word *v;
    size_t n, cap;
} ct_word_list;
void ct_word_list_free(ct_word_list *l);

/* Tokens of text (Python split) spread evenly over [start, end]: token k of
 * N gets [start + k·d, start + (k+1)·d] with d = max(0, end − start) / N.
 * Used for uniform_segment and uniform_fallback. Appends to out. */
CT_NODISCARD ct_status ct_timing_uniform_words(const char *text, double start, double end, int segment_index,
                                               ct_timing_source source, ct_word_list *out);

/* Largest-remainder token counts over spans (the gem's arithmetic:
 * exact_i = N × (d_i ÷ T), remainders to the larger fraction, then the
 * longer span, then the lower index). counts has n entries; all 0 when
 * N == 0 or the total duration is 0. */
void ct_timing_proportional_counts(size_t tokens, const ct_span *spans, size_t n, int *counts);

/* The raw speech spans overlapping [start, end], clipped to it, empty
 * clips dropped; *out malloc'd (NULL when none). */
CT_NODISCARD ct_status ct_timing_spans_within(const ct_span *spans, size_t n, double start, double end,
                                              ct_span **out, size_t *count);

/* Tokens distributed over spans (each span's share evenly over its own
 * duration, segment_word_index running across spans); source
 * uniform_speech_spans. Appends to out. */
CT_NODISCARD ct_status ct_timing_span_words(const char *text, const ct_span *spans, size_t n,
                                            int segment_index, ct_word_list *out);

/* The words of timing mode `segment` for every segment of r (uniform over
 * the speech spans inside a segment when vad_merge is on and any overlaps,
 * else over the segment), or none for CT_ALIGN_NONE; replaces r->words.
 * CT_ALIGN_WORD is refused here (CT_ERR_INVALID_ARG): its words come from
 * the aligner through ct_timing_adopt_words. */
CT_NODISCARD ct_status ct_timing_build_words(ct_file_record *r, ct_alignment mode, int vad_merge);

/* Replace r->words by the list's words (ownership moves; l is emptied). */
void ct_timing_adopt_words(ct_file_record *r, ct_word_list *l);

#endif
