/* record.h — one file's transcription as the output stage sees it: what the
 * ASR checkpoint holds (segments, texts, token counts, stop lists, decode and
 * VAD provenance) plus the words and cues made from it. The pipeline fills
 * it; timing.c adds words, cues.c adds cues, render.c / transcript_json.c
 * turn it into bytes, state.c into the checkpoint and manifest.
 *
 * Strings are malloc'd and owned by the record (ct_file_record_clear frees
 * everything); NULL stands for JSON null where a field is nullable.
 */
#ifndef CT_OUTPUT_RECORD_H
#define CT_OUTPUT_RECORD_H

#include <stddef.h>

#include "cohere_transcribe.h"
#include "vad/vad.h"

typedef struct ct_rec_segment {
    int index;            /* ASR segment index (position in segment_times) */
    double start, end;    /* seconds */
    char *text;           /* Python-stripped; "" for a segment with no text */
    int generated_tokens; /* of the final attempt (EOS counted, PRODUCT-DETAILS §13.1) */
} ct_rec_segment;

typedef struct ct_rec_word {
    double start, end;
    char *text;
    int segment_index, segment_word_index;
    ct_timing_source source;
} ct_rec_word;

typedef struct ct_rec_cue {
    double start, end;
    char *text;
} ct_rec_cue;

typedef struct ct_file_record {
    char *source_path;             /* canonical absolute path */
    double duration;               /* decoded samples / 16000 (or the checkpoint's) */
    char *decode_backend;          /* "ffmpeg" / "libsndfile" / NULL */
    char *decode_fallback_reason;  /* NULL */
    /* VAD provenance (checkpoint fields vad_engine_actual ... vad_fallback_reason) */
    char *vad_engine_actual;       /* "onnx", "auditok", "none (fixed windows)" */
    char *vad_provider;            /* "CPUExecutionProvider" (silero) or NULL */
    char *vad_fallback_reason;     /* NULL, or the torch/jit mapping sentence */
    /* provider options are {"<provider>": {}} when vad_provider is set, else null */
    ct_span *speech_spans;         /* raw speech spans (before merge) */
    size_t n_speech_spans;
    ct_rec_segment *segments;      /* every ASR segment in index order, empty ones too */
    size_t n_segments;
    int *repetition_stopped;       /* sorted segment indices */
    size_t n_repetition_stopped;
    int *truncation_retried;
    size_t n_truncation_retried;
    int *token_limit;
    size_t n_token_limit;
    int fallback_alignment_segments;
    ct_rec_word *words;
    size_t n_words;
    ct_rec_cue *cues;
    size_t n_cues;
    char *generation_id;           /* 32 lowercase hex; reused from a checkpoint */
    int resumed;                   /* rebuilt from an ASR checkpoint */
} ct_file_record;

void ct_file_record_clear(ct_file_record *r);

#endif
