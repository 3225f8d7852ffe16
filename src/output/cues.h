/* cues.h — subtitle cues from words (PRODUCT-DETAILS §5.1–5.2): words are
 * grouped until the joined text would pass max_chars code points, the cue
 * would pass max_duration, the gap would pass max_gap, or a word ends a
 * sentence (. ! ? ؟ ، ؛ …); then each cue is stretched to at least 0.30 s
 * without passing the next cue's start or the media end.
 */
#ifndef CT_OUTPUT_CUES_H
#define CT_OUTPUT_CUES_H

#include "output/record.h"

#define CT_MIN_CUE_DURATION 0.30

typedef struct ct_cue_limits {
    int max_chars;         /* --max-chars (80) */
    double max_duration;   /* --max-cue-dur (6.0) */
    double max_gap;        /* --max-gap (0.6) */
    double min_duration;   /* 0.30 */
    double media_duration; /* the result duration; < 0 or NaN: none */
} ct_cue_limits;

/* Limits from the options, min 0.30 s, the given media duration. */
ct_cue_limits ct_cue_limits_from(const ct_transcriber_options *o, double media_duration);

/* Cues of words[0..n) into *out (malloc'd array, texts malloc'd). */
CT_NODISCARD ct_status ct_cues_build(const ct_rec_word *words, size_t n, const ct_cue_limits *lim,
                                     ct_rec_cue **out, size_t *count);

/* r->cues from r->words with r->duration as the media end (replaces them;
 * no cues when mode is CT_ALIGN_NONE). */
CT_NODISCARD ct_status ct_cues_build_record(ct_file_record *r, const ct_transcriber_options *o);

/* 1 if the code point ends a sentence for cue grouping. */
int ct_cue_sentence_end(uint32_t cp);

#endif
