/* profile_json.h — the run profile (--profile-json, schema_version 9,
 * PRODUCT-DETAILS §2) as a document, from what the pipeline measured: the
 * caller fills a ct_profile_input (timings, VAD and ASR counters, batch
 * history, one entry per file with its record) and gets a tree or bytes.
 * Keys and their order are the gem's.
 */
#ifndef CT_OUTPUT_PROFILE_JSON_H
#define CT_OUTPUT_PROFILE_JSON_H

#include "output/json.h"
#include "output/record.h"
#include "output/transcript_json.h"

#define CT_PROFILE_SCHEMA_VERSION 9

/* §2 item 9, in order ("<name>_seconds"). */
typedef enum ct_profile_timing {
    CT_PT_RUNTIME_IMPORT, CT_PT_SERIALIZATION_WAIT, CT_PT_INPUT_VALIDATION, CT_PT_DECODE_WORKER,
    CT_PT_VAD_WORKER, CT_PT_VAD_MODEL_LOAD, CT_PT_VAD_INFERENCE, CT_PT_VAD_POSTPROCESS, CT_PT_PREPARATION_WAIT,
    CT_PT_ASR_LOAD, CT_PT_ASR_WALL, CT_PT_ASR_FEATURE_WORKER, CT_PT_ASR_DISCARDED_FEATURE, CT_PT_ASR_FEATURE_WAIT,
    CT_PT_ASR_H2D, CT_PT_ASR_GENERATION_CALL_WALL, CT_PT_ASR_GENERATE_DEVICE, CT_PT_ASR_GENERATION_ANALYSIS,
    CT_PT_ASR_DECODE, /* written as null (never recorded by the gem) */
    CT_PT_ALIGNER_LOAD, CT_PT_EMISSIONS, CT_PT_VITERBI, CT_PT_POST_ASR, CT_PT_CHECKPOINT, CT_PT_PROGRESSIVE_OUTPUT,
    CT_PT_COUNT
} ct_profile_timing;

/* One native ASR call (batch_history entry). */
typedef struct ct_profile_batch {
    int oom; /* 1: {"event": "oom", "segments", "max_new_tokens"} only */
    int segments, processor_rows, max_new_tokens;
    long long generated_tokens;
    const int *tokens_by_row;
    size_t n_rows;
    double prepare_seconds, h2d_seconds, generation_call_wall_seconds, generate_device_seconds,
        generation_analysis_seconds, padded_audio_seconds, padding_ratio;
} ct_profile_batch;

typedef struct ct_profile_file {
    const ct_file_record *record; /* NULL: failed before anything was known */
    const char *path, *relative_path;
    int duration_known;           /* 0: duration_seconds null (a skipped file without a probe) */
    double duration;
    const char *const *outputs;
    size_t n_outputs;
    int published;
    const char *error;            /* "<Class>: <message>" or NULL */
    ct_file_status status;
} ct_profile_file;

typedef struct ct_profile_input {
    double created_unix_seconds;
    const ct_output_context *ctx;  /* implementation, resolved model id/revision */
    const ct_transcriber_options *options; /* as requested */
    const char *model_requested;   /* the model option as given (NULL: the default id) */
    const char *const *audio;      /* every result's canonical path */
    size_t n_audio;
    /* resolved values */
    const char *device, *dtype;    /* "cpu"/"cuda", "fp32"/"bf16"/"fp16" */
    /* environment */
    const char *executable, *platform, *machine, *processor;
    int cpu_count;
    double cuda_total_gib, cuda_free_start_gib, cuda_free_end_gib; /* CUDA only */
    /* run */
    double elapsed_seconds;
    double timings[CT_PT_COUNT];
    /* vad */
    int vad_intraop_threads;       /* > 0, else null */
    int effective_block_frames;    /* <= 0: null */
    int prepared_groups, model_calls;
    long long valid_frames, padded_frames;
    /* asr */
    int batches, processor_rows;
    long long generated_tokens;
    int effective_batch_min, effective_batch_max, final_batch_size, final_batch_cap;
    int oom_retries, truncation_retries;
    const ct_profile_batch *history;
    size_t n_history;
    int checkpoint_resumed_files, checkpoint_written_files;
    /* files, input order */
    const ct_profile_file *files;
    size_t n_files;
} ct_profile_input;

CT_NODISCARD ct_status ct_profile_json_tree(const ct_profile_input *in, json_t **out);
CT_NODISCARD ct_status ct_profile_json(const ct_profile_input *in, ct_jbuf *out);

/* {min, p50, p90, p99, max} of values (sorted in place), linear
 * interpolation at (n−1)·q; json null when n == 0. */
json_t *ct_profile_quantiles(double *values, size_t n);

#endif
