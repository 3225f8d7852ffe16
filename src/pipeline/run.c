/* run.c — one call of ct_transcriber_run: stage 1 (discover, plan, decide
 * per file, all before any model load), stage 2 (resume from checkpoints,
 * then prepare + transcribe + publish the rest), statistics and profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "core/trace.h"
#include "pipeline/options.h"
#include "pipeline/pipeline_internal.h"

static void fill_stats(ct_pipe *p) {
    ct_run *run = p->run;
    ct_run_stats *st = &run->st;
    st->elapsed_seconds = ct_now() - p->t0;
    for (size_t i = 0; i < run->n_files; i++) {
        const ct_file_result *f = &run->files[i];
        if (f->status == CT_FILE_COMPLETED) st->files_completed++, st->audio_seconds += f->rec.duration;
        else if (f->status == CT_FILE_FAILED) st->files_failed++;
        else st->files_skipped++;
    }
    st->rtfx = st->elapsed_seconds > 0 ? st->audio_seconds / st->elapsed_seconds : 0.0;
    st->seconds_validation = p->seconds_validation;
    st->seconds_preparation_wait = p->seconds_prep_wait;
    st->seconds_asr_load = p->seconds_asr_load;
    st->seconds_asr = p->asr_stats.seconds;
    st->seconds_publication = p->seconds_publication;
    st->batches = p->asr_stats.batches;
    st->oom_retries = p->asr_stats.oom_retries;
    st->truncation_retries = p->asr_stats.truncation_retries;
    st->generated_tokens = p->asr_stats.generated_tokens;
    st->model_loaded = p->t->asr != NULL && p->asr_stats.n_calls > 0;
}

static ct_status run_locked(ct_pipe *p, const char *const *paths, size_t n) {
    ct_transcriber *t = p->t;
    CT_TRY(ct_pipe_resolve_device(&t->o, &p->device, &p->dtype));
    p->batch_size = ct_options_batch_size(&t->o, p->device);
    ct_pipe_model_identity(&t->o, &p->model_id, &p->model_revision);
    double v0 = ct_now();
    ct_pipe_progress(p, CT_PROGRESS_STAGE, "validating", NULL, 0, 0);
    CT_TRY(ct_pipe_plan(p, paths, n));
    ct_run *run = p->run;
    size_t *todo = malloc(sizeof *todo * (run->n_files ? run->n_files : 1));
    if (!todo) return ct_fail(CT_ERR_OOM, "run");
    size_t ntodo = 0;
    ct_status s = CT_OK;
    ct_pipe_action *act = calloc(run->n_files ? run->n_files : 1, sizeof *act);
    if (!act) {
        free(todo);
        return ct_fail(CT_ERR_OOM, "run");
    }
    for (size_t i = 0; i < run->n_files && s == CT_OK; i++) s = ct_pipe_decide(p, i, &act[i]);
    p->seconds_validation = ct_now() - v0;
    int any = 0;
    for (size_t i = 0; i < run->n_files; i++) any |= act[i] != CT_PIPE_DONE;
    if (s == CT_OK && any) ct_pipe_progress(p, CT_PROGRESS_STAGE, "transcribing", NULL, 0, 0);
    /* resumed sets first: no ASR model (word timing: the audio and the aligner) */
    for (size_t i = 0; i < run->n_files && s == CT_OK; i++) {
        if (atomic_load(&t->cancel)) {
            s = ct_fail(CT_ERR_ABORTED, "cancelled");
        } else if (act[i] == CT_PIPE_PROCESS) {
            todo[ntodo++] = i;
        } else {
            if (act[i] == CT_PIPE_RESUME && (s = ct_pipe_claim(p, i, &act[i])) == CT_OK) {
                if (act[i] == CT_PIPE_RESUME) s = ct_pipe_resume_file(p, i);
                else if (act[i] == CT_PIPE_PROCESS) {
                    todo[ntodo++] = i; /* the checkpoint went away meanwhile */
                    continue;
                }
            }
            p->files_done++;
            ct_pipe_progress(p, CT_PROGRESS_FILES, NULL, run->files[i].path, p->files_done, (long long)run->n_files);
        }
    }
    if (s == CT_OK) s = ct_pipe_process(p, todo, ntodo);
    free(todo);
    free(act);
    return s;
}

ct_status ct_transcriber_run(ct_transcriber *t, const char *const *paths, size_t n, ct_run **out) {
    if (out) *out = NULL;
    if (!t || !out) return ct_fail(CT_ERR_INVALID_ARG, "transcriber or result pointer is NULL");
    pthread_mutex_lock(&t->mu);
    if (t->closed) {
        pthread_mutex_unlock(&t->mu);
        ct_status s = ct_fail(CT_ERR_MISUSE, "the transcriber was closed");
        snprintf(t->errmsg, sizeof t->errmsg, "%s", ct_last_error());
        return s;
    }
    atomic_store(&t->cancel, 0);
    ct_run *run = calloc(1, sizeof *run);
    if (!run) {
        pthread_mutex_unlock(&t->mu);
        return ct_fail(CT_ERR_OOM, "run");
    }
    ct_pipe p = {.t = t, .run = run, .t0 = ct_now()};
    /* the timeline covers the whole run, planning included */
    ct_status s = t->o.trace_path ? ct_trace_start() : CT_OK;
    int tracing = t->o.trace_path && s == CT_OK;
    if (s == CT_OK) {
        ct_trace_thread("run");
        s = run_locked(&p, paths, n);
    }
    char keep[2048];
    snprintf(keep, sizeof keep, "%s", s == CT_OK ? "" : ct_last_error());
    fill_stats(&p);
    if (tracing && ct_trace_stop(t->o.trace_path) != CT_OK) {
        char m[2100];
        snprintf(m, sizeof m, "trace output failed: %s", ct_last_error());
        ct_run_add_error(run, m);
    }
    if (s == CT_OK || s == CT_ERR_ABORTED) {
        /* the profile is written even for an all-skipped run; its failure is a
         * run error, not a failure of the run */
        if (t->o.profile_json && ct_pipe_write_profile(&p) != CT_OK) {
            char m[2100];
            snprintf(m, sizeof m, "profile output failed: %s", ct_last_error());
            ct_run_add_error(run, m);
        }
    }
    ct_pipe_plan_free(&p);
    ct_asr_run_stats_clear(&p.asr_stats);
    if (s != CT_OK) {
        ct_fail(s, "%s", keep);
        snprintf(t->errmsg, sizeof t->errmsg, "%s", keep);
    } else {
        t->errmsg[0] = 0;
    }
    *out = run;
    pthread_mutex_unlock(&t->mu);
    return s;
}
