/* test_output_util.h — helpers the test_output_*.c programs share: the
 * documented option defaults (PRODUCT.md §2) and small record builders.
 */
#ifndef CT_TEST_OUTPUT_UTIL_H
#define CT_TEST_OUTPUT_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "output/record.h"

static inline ct_transcriber_options test_default_options(void) {
    ct_transcriber_options o;
    memset(&o, 0, sizeof o);
    o.language = "ar";
    o.punctuation = 1;
    o.publish = 1;
    o.recursive = 1;
    o.audio_memory_gb = 4.0;
    o.pipeline_preparation = 1;
    o.vad = CT_VAD_MODE_SILERO;
    o.vad_batch_size = 16;
    o.vad_block_frames = 512;
    o.min_dur = 0.5;
    o.max_dur = 30.0;
    o.max_silence = 0.6;
    o.energy_threshold = 50;
    o.vad_threshold = 0.5;
    o.min_silence_ms = 300;
    o.speech_pad_ms = 60;
    o.batch_vram_target = 0.9;
    o.max_new_tokens = 445;
    o.max_retry_tokens = 896;
    o.stop_repetition_loops = 1;
    o.alignment = CT_ALIGN_SEGMENT;
    o.align_batch_size = 4;
    o.align_dtype = CT_PRECISION_FP32;
    o.max_chars = 80;
    o.max_cue_dur = 6.0;
    o.max_gap = 0.6;
    return o;
}

static inline char *test_strdup(const char *s) { return s ? strdup(s) : NULL; }

/* Append a segment to r (text copied). */
static inline void test_add_segment(ct_file_record *r, double start, double end, const char *text, int tokens) {
    r->segments = realloc(r->segments, (r->n_segments + 1) * sizeof *r->segments);
    r->segments[r->n_segments] = (ct_rec_segment){(int)r->n_segments, start, end, strdup(text), tokens};
    r->n_segments++;
}

static inline void test_add_span(ct_file_record *r, double start, double end) {
    r->speech_spans = realloc(r->speech_spans, (r->n_speech_spans + 1) * sizeof *r->speech_spans);
    r->speech_spans[r->n_speech_spans++] = (ct_span){start, end};
}

static inline void test_add_word(ct_file_record *r, double start, double end, const char *text) {
    r->words = realloc(r->words, (r->n_words + 1) * sizeof *r->words);
    r->words[r->n_words] = (ct_rec_word){start, end, strdup(text), 0, (int)r->n_words, CT_TIMING_CTC};
    r->n_words++;
}

#endif
