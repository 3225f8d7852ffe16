/* pipeline_internal.h — the structures behind the public transcriber handle,
 * run and file results (include/cohere_transcribe.h), shared by the
 * pipeline's files: transcriber.c (orchestration), results.c (accessors). */
#ifndef CT_PIPELINE_INTERNAL_H
#define CT_PIPELINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "asr/asr.h"
#include "asr/breaker.h"
#include "cohere_transcribe.h"
#include "model/resolve.h"
#include "output/record.h"

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

/* results.c */
ct_status ct_run_add_error(ct_run *run, const char *msg);
void ct_file_result_clear(ct_file_result *f);

#endif
