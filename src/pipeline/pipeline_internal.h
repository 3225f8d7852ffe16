/* pipeline_internal.h — the structures behind the public transcriber handle,
 * run and file results (include/cohere_transcribe.h), shared by the
 * pipeline's files: transcriber.c (orchestration), results.c (accessors). */
#ifndef CT_PIPELINE_INTERNAL_H
#define CT_PIPELINE_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>

#include "asr/asr.h"
#include "asr/breaker.h"
#include "cohere_transcribe.h"
#include "model/resolve.h"
#include "output/record.h"
#include "pipeline/asr_run.h"

struct ct_silero;

struct ct_transcriber {
    ct_transcriber_options o; /* strings point into owned copies below */
    char *own[16];            /* the copied option strings */
    pthread_mutex_t mu;       /* calls are serialized */
    atomic_int cancel;
    int closed;
    ct_progress_fn progress;
    void *progress_user;
    char errmsg[2048];
    /* the model session, made by the first run that needs it */
    ct_asr *asr;
    ct_model_ref model;
    ct_breaker breaker;
    struct ct_silero *silero;
    char *silero_path;
    /* the word aligner (alignment word), made by the first file that needs it */
    struct ct_aligner *aligner;
    ct_backend *align_be;
    ct_model_ref aligner_ref;
};

struct ct_file_result {
    ct_file_status status;
    char *path;     /* canonical */
    char *relative; /* relative to its input root */
    char *error;    /* "" when none */
    char *text;     /* segment texts joined by "\n" */
    ct_file_record rec;
    char **outputs; /* published paths (requested formats, in order) */
    size_t n_outputs;
    /* provenance strings */
    const char *model_id, *model_revision, *device, *dtype;
};

struct ct_run {
    ct_file_result *files;
    size_t n_files;
    ct_run_stats st;
    char **errors;
    size_t n_errors;
};

/* One run in progress: what every stage of transcriber.c / run.c /
 * publication.c reads and adds to. */
typedef struct ct_pipe {
    ct_transcriber *t;
    ct_run *run;
    double t0;
    ct_device device;     /* resolved */
    ct_precision dtype;   /* resolved */
    int batch_size;       /* resolved */
    const char *model_id, *model_revision; /* identity for contract keys and provenance */
    struct ct_pipe_plan *plan; /* publication.c: one entry per run file */
    /* progress totals */
    int files_done, files_prepared;
    long long segments_done, segments_total, segments_live;
    long long segments_asr; /* decoded, published or not (files wait for their turn: transcriber.c) */
    double audio_done;
    /* stage timings */
    double seconds_validation, seconds_prep_wait, seconds_asr_load, seconds_publication;
    double seconds_decode, seconds_vad, seconds_aligner_load, seconds_alignment;
    long long vad_files, vad_frames; /* Silero: files segmented, probability frames */
    ct_asr_run_stats asr_stats;
} ct_pipe;

/* transcriber.c */
void ct_pipe_progress(ct_pipe *p, ct_progress_stage stage, const char *text, const char *path, long long cur,
                      long long total);
ct_status ct_pipe_process(ct_pipe *p, const size_t *todo, size_t n);
/* A file whose ASR checkpoint was restored: with word timing, re-decode its
 * audio and align the checkpoint's segments first (no VAD, no ASR); then
 * ct_pipe_finish_file. CT_ERR_ABORTED (a cancel) and a run-stopping failure
 * (the aligner cannot be loaded) are returned, other failures are the file's. */
ct_status ct_pipe_resume_file(ct_pipe *p, size_t fi);
/* Python's round(): to nearest, ties to even (the default rounding mode),
 * as the original turns seconds into sample indices. */
static inline int64_t ct_round_half_even(double x) { return (int64_t)nearbyint(x); }
/* words.c: the aligner, loaded once (a failure stops the run); one file's
 * words over its record's segments (its PCM as the ASR saw it). */
ct_status ct_pipe_aligner_open(ct_pipe *p);
ct_status ct_pipe_align_file(ct_pipe *p, size_t fi, const float *pcm, size_t n_samples);
void ct_pipe_model_identity(const ct_transcriber_options *o, const char **id, const char **rev);
const char *ct_pipe_dtype_name(ct_precision p);
uint64_t ct_pipe_memory_cap(const ct_transcriber_options *o);
/* Segments at which group k of a run closes (transcriber.c gives why). */
size_t ct_pipe_group_segments(int batch_size, size_t k);
ct_status ct_pipe_resolve_device(const ct_transcriber_options *o, ct_device *dev, ct_precision *prec);

/* publication.c: discovery + planning (stage 1), and per file what to do */
typedef enum {
    CT_PIPE_PROCESS = 0, /* decode, transcribe, publish */
    CT_PIPE_RESUME = 1,  /* a valid ASR checkpoint: render and publish only */
    CT_PIPE_DONE = 2     /* nothing to do: skipped (verified), failed, or left to another process */
} ct_pipe_action;
ct_status ct_pipe_plan(ct_pipe *p, const char *const *paths, size_t n);
/* Preflight at planning, without the lock. */
ct_status ct_pipe_decide(ct_pipe *p, size_t fi, ct_pipe_action *action);
/* When the file's turn comes: take the set's lock and decide again under it
 * (held until the file is published or failed). */
ct_status ct_pipe_claim(ct_pipe *p, size_t fi, ct_pipe_action *action);
/* The prep pool's admit hook for file fi (a worker thread, before the
 * decode): takes the set's lock early; nonzero = do not decode (another
 * process holds the set, or published it since planning). The claim then
 * settles the file as usual. */
int ct_pipe_admit(ct_pipe *p, size_t fi);
void ct_pipe_plan_free(ct_pipe *p);
/* The implementation object of transcripts and profiles (new reference),
 * and the planned profile path. */
struct json_t;
struct json_t *ct_pipe_implementation(const ct_pipe *p);
struct ct_output_context;
const struct ct_output_context *ct_pipe_output_context(const ct_pipe *p);
const char *ct_pipe_profile_path(const ct_pipe *p);
/* profile.c */
ct_status ct_pipe_write_profile(ct_pipe *p);

/* publication.c: planning, skip/resume decisions, words/cues, render, commit */
ct_status ct_pipe_finish_record(ct_pipe *p, size_t fi);
ct_status ct_pipe_publish(ct_pipe *p, size_t fi);
/* Word timing: commit the ASR checkpoint alone before the aligner runs (the
 * lock stays held; ct_pipe_publish then does not write it again). */
ct_status ct_pipe_write_checkpoint(ct_pipe *p, size_t fi);
/* finish_record + publish, and the file's status from the outcome;
 * CT_ERR_ABORTED (a cancel) is returned, other failures are the file's. */
ct_status ct_pipe_finish_file(ct_pipe *p, size_t fi);
void ct_pipe_fail_file(ct_pipe *p, size_t fi, ct_status s, const char *msg);
const char *ct_pipe_vad_fallback_reason(const ct_transcriber_options *o);

/* results.c */
ct_status ct_run_add_error(ct_run *run, const char *msg);
void ct_file_result_clear(ct_file_result *f);

#endif
