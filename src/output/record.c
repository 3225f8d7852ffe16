/* record.c — freeing a file record (record.h). */
#include "output/record.h"

#include <stdlib.h>
#include <string.h>

void ct_file_record_clear(ct_file_record *r) {
    if (!r) return;
    free(r->source_path);
    free(r->decode_backend);
    free(r->decode_fallback_reason);
    free(r->vad_engine_actual);
    free(r->vad_provider);
    free(r->vad_fallback_reason);
    free(r->speech_spans);
    for (size_t i = 0; i < r->n_segments; i++) free(r->segments[i].text);
    free(r->segments);
    free(r->repetition_stopped);
    free(r->truncation_retried);
    free(r->token_limit);
    for (size_t i = 0; i < r->n_words; i++) free(r->words[i].text);
    free(r->words);
    for (size_t i = 0; i < r->n_cues; i++) free(r->cues[i].text);
    free(r->cues);
    free(r->generation_id);
    memset(r, 0, sizeof *r);
}
