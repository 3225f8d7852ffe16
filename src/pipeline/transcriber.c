/* transcriber.c — the product's pipeline, the only place that knows the order
 * of a run: discover → plan outputs (before any model load) → decide per file
 * (skip a verified set, resume from an ASR checkpoint, or process) → load the
 * model once, lazily → prepare audio ahead in the prep pool → batched ASR
 * across files (asr_run.c) → words and cues → render → publish each file's
 * set (publication.c). The public handle's lifecycle lives here too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "compute/cpu/cpu_state.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/trace.h"
#include "pipeline/asr_run.h"
#include "pipeline/options.h"
#include "pipeline/pipeline_internal.h"
#include "prep/prep.h"
#include "vad/silero.h"

/* ---- the handle ----------------------------------------------------------- */

static char *dup_opt(ct_transcriber *t, int slot, const char *s) {
    if (!s) return NULL;
    t->own[slot] = strdup(s);
    return t->own[slot];
}

ct_status ct_transcriber_create(const ct_transcriber_options *o, ct_transcriber **out) {
    *out = NULL;
    if (!o) return ct_fail(CT_ERR_INVALID_ARG, "options are NULL");
    CT_TRY(ct_transcriber_options_check(o));
    ct_transcriber *t = calloc(1, sizeof *t);
    if (!t) return ct_fail(CT_ERR_OOM, "transcriber");
    /* first: ct_transcriber_free (also on the failure below) takes the lock */
    pthread_mutex_init(&t->mu, NULL);
    atomic_init(&t->cancel, 0);
    ct_breaker_init(&t->breaker);
    t->o = *o;
    int k = 0;
    t->o.model = dup_opt(t, k++, o->model);
    t->o.model_revision = dup_opt(t, k++, o->model_revision);
    t->o.adapter = dup_opt(t, k++, o->adapter);
    t->o.adapter_revision = dup_opt(t, k++, o->adapter_revision);
    t->o.language = dup_opt(t, k++, o->language ? o->language : "ar");
    t->o.output_dir = dup_opt(t, k++, o->output_dir);
    t->o.profile_json = dup_opt(t, k++, o->profile_json);
    t->o.vad_weights = dup_opt(t, k++, o->vad_weights);
    t->o.aligner_model = dup_opt(t, k++, o->aligner_model);
    t->o.aligner_revision = dup_opt(t, k++, o->aligner_revision);
    t->o.trace_path = dup_opt(t, k++, o->trace_path);
    if ((o->model && !t->o.model) || (o->model_revision && !t->o.model_revision) || (o->adapter && !t->o.adapter) ||
        (o->adapter_revision && !t->o.adapter_revision) || !t->o.language || (o->output_dir && !t->o.output_dir) ||
        (o->profile_json && !t->o.profile_json) || (o->vad_weights && !t->o.vad_weights) ||
        (o->aligner_model && !t->o.aligner_model) || (o->aligner_revision && !t->o.aligner_revision) ||
        (o->trace_path && !t->o.trace_path)) {
        ct_transcriber_free(t);
        return ct_fail(CT_ERR_OOM, "transcriber options");
    }
    *out = t;
    return CT_OK;
}

void ct_transcriber_set_progress(ct_transcriber *t, ct_progress_fn fn, void *user_data) {
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    t->progress = fn;
    t->progress_user = user_data;
    pthread_mutex_unlock(&t->mu);
}

const char *ct_transcriber_errmsg(const ct_transcriber *t) { return t ? t->errmsg : ""; }

void ct_transcriber_cancel(ct_transcriber *t) {
    if (t) atomic_store(&t->cancel, 1);
}

static void session_close(ct_transcriber *t) {
    double t0 = ct_now();
    int had_model = t->asr != NULL;
    ct_asr_free(t->asr);
    t->asr = NULL;
    /* at debug level (CT_LOG=debug): what closing costs after a run, which
     * a CLI pays before it exits (device memory, the model's mapping) */
    if (had_model) CT_LOGD("transcriber: model closed in %.3f s", ct_now() - t0);
    ct_aligner_free(t->aligner);
    t->aligner = NULL;
    ct_backend_free(t->align_be);
    t->align_be = NULL;
    ct_model_ref_clear(&t->aligner_ref);
    ct_model_ref_clear(&t->model);
    ct_silero_free(t->silero);
    t->silero = NULL;
    free(t->silero_path);
    t->silero_path = NULL;
}

void ct_transcriber_close(ct_transcriber *t) {
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    session_close(t);
    t->closed = 1;
    pthread_mutex_unlock(&t->mu);
}

void ct_transcriber_free(ct_transcriber *t) {
    if (!t) return;
    ct_transcriber_close(t);
    for (size_t i = 0; i < sizeof t->own / sizeof t->own[0]; i++) free(t->own[i]);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* ---- progress ------------------------------------------------------------- */

void ct_pipe_progress(ct_pipe *p, ct_progress_stage stage, const char *text, const char *path, long long cur,
                      long long total) {
    if (!p->t->progress) return;
    ct_progress ev = {.stage = stage, .text = text, .path = path, .current = cur, .total = total,
                      .files_done = p->files_done, .files_total = (int)p->run->n_files,
                      .files_prepared = p->files_prepared,
                      .segments_done = p->segments_done, .segments_total = p->segments_total,
                      .audio_seconds_done = p->audio_done, .elapsed_seconds = ct_now() - p->t0};
    p->t->progress(&ev, p->t->progress_user);
}

/* ---- the model session ---------------------------------------------------- */

static const char *device_name(ct_device d) { return d == CT_DEVICE_CUDA ? "cuda" : "cpu"; }

/* auto: CUDA when the build has it and a device answers, else the CPU. */
ct_status ct_pipe_resolve_device(const ct_transcriber_options *o, ct_device *dev, ct_precision *prec) {
    ct_device d = o->device;
    if (d == CT_DEVICE_MPS) return ct_fail(CT_ERR_UNSUPPORTED, "device mps is not supported: use cpu or cuda");
    if (d == CT_DEVICE_AUTO) /* int8 is a CPU path: auto picks the CPU for it */
        d = o->dtype != CT_PRECISION_INT8 && ct_asr_device_check("cuda", CT_DTYPE_BF16) == CT_OK ? CT_DEVICE_CUDA
                                                                                               : CT_DEVICE_CPU;
    ct_error_clear();
    /* asked for by name: refused now, before any file is looked at */
    if (d == CT_DEVICE_CUDA && o->device == CT_DEVICE_CUDA) {
        ct_precision p = ct_options_dtype(o, d, 1);
        ct_status s = ct_asr_device_check("cuda", p == CT_PRECISION_FP16 ? CT_DTYPE_F16 : p == CT_PRECISION_FP32
                                                                                     ? CT_DTYPE_F32 : CT_DTYPE_BF16);
        if (s != CT_OK)
            return ct_fail_wrap(s, "%s cuda was requested, but CUDA is not available to the native runtime",
                                o->cli_option_names ? "--device" : "device");
    }
    /* the GPU engine computes in bf16, which every device it supports has (sm_90) */
    CT_TRY(ct_options_check_device(o, d, 1));
    *dev = d, *prec = ct_options_dtype(o, d, 1);
    if (d == CT_DEVICE_CPU && o->dtype == CT_PRECISION_AUTO) { /* ours: the CPU's features decide */
        const char *why;
        *prec = ct_cpu_auto_dtype(&why) == CT_DTYPE_BF16 ? CT_PRECISION_BF16 : CT_PRECISION_FP32;
    }
    return CT_OK;
}

const char *ct_pipe_dtype_name(ct_precision p) {
    switch (p) {
    case CT_PRECISION_BF16: return "bf16";
    case CT_PRECISION_FP16: return "fp16";
    case CT_PRECISION_INT8: return "int8";
    default: return "fp32";
    }
}

static ct_dtype weight_dtype(ct_precision p) {
    /* int8: per-row Q8 on VNNI, per-block Q8_0 elsewhere (cpu_state.h) */
    return p == CT_PRECISION_BF16 ? CT_DTYPE_BF16 : p == CT_PRECISION_FP16 ? CT_DTYPE_F16
           : p == CT_PRECISION_INT8 ? ct_cpu_int8_dtype(NULL) : CT_DTYPE_F32;
}

/* The model's identity without loading it (contract keys, skip checks): the
 * id as given (or the default) and the revision as given, or the pinned
 * commit for the default model. */
void ct_pipe_model_identity(const ct_transcriber_options *o, const char **id, const char **rev) {
    *id = o->model ? o->model : CT_DEFAULT_MODEL;
    *rev = o->model_revision;
    if (!*rev && !strcmp(*id, CT_DEFAULT_MODEL)) *rev = CT_DEFAULT_MODEL_COMMIT;
}

/* The model's folder: a local directory checked, or a Hub snapshot fetched
 * into the cache. Done before any decoding, so that a missing model, one
 * without tokenizer.json, a quantized checkpoint or an adapter is a clear
 * error before work starts; the weights load later (session_open). */
static ct_status session_resolve(ct_pipe *p) {
    ct_transcriber *t = p->t;
    if (t->model.dir) return CT_OK;
    ct_status s = ct_model_resolve_ref(t->o.model, t->o.model_revision, NULL, &t->model);
    if (s != CT_OK) return ct_fail_wrap(s, "model %s", t->o.model ? t->o.model : CT_DEFAULT_MODEL);
    return CT_OK;
}

static ct_status session_open(ct_pipe *p) {
    ct_transcriber *t = p->t;
    if (t->asr) return CT_OK;
    ct_breaker_reset(&t->breaker);
    CT_TRY(session_resolve(p));
    double t0 = ct_now();
    ct_status s;
    if (p->device == CT_DEVICE_CUDA) CT_TRY(ct_asr_device_check("cuda", weight_dtype(p->dtype)));
    ct_asr_options ao = ct_asr_default_options();
    ao.device = device_name(p->device);
    ao.weight_dtype = weight_dtype(p->dtype);
    ao.threads = t->o.threads;
    ao.device_index = t->o.device_index;
    CT_TRY(ct_asr_open(t->model.dir, &ao, &t->asr));
    /* a language is one of the model's: its config's list, else its tokenizer's language tokens */
    s = ct_asr_check_language(t->asr, t->o.language);
    if (s != CT_OK) ct_fail_wrap(s, "%s", t->o.cli_option_names ? "--language" : "language");
    if (s != CT_OK) {
        ct_asr_free(t->asr);
        t->asr = NULL;
        return s;
    }
    p->seconds_asr_load += ct_now() - t0;
    ct_trace_span("load model", t0, ct_now(), NULL, NULL);
    return CT_OK;
}

static ct_status silero_open(ct_pipe *p) {
    ct_transcriber *t = p->t;
    if (t->silero || t->o.vad != CT_VAD_MODE_SILERO) return CT_OK;
    char buf[4096];
    const char *path = t->o.vad_weights;
    if (!path) {
        CT_TRY(ct_silero_default_path(buf, sizeof buf));
        path = buf;
    }
    char *resolved = NULL;
    CT_TRY(ct_vad_weights_resolve(path, NULL, &resolved));
    ct_status s = ct_silero_load(resolved, &t->silero);
    if (s != CT_OK) {
        free(resolved);
        return s;
    }
    t->silero_path = resolved;
    return CT_OK;
}

/* ---- preparation and ASR over groups of files ----------------------------- */

static ct_audio_backend audio_backend(ct_audio_decoder d) {
    return d == CT_AUDIO_FFMPEG || d == CT_AUDIO_TORCHCODEC ? CT_AUDIO_BACKEND_FFMPEG
           : d == CT_AUDIO_SNDFILE                          ? CT_AUDIO_BACKEND_SNDFILE
                                                            : CT_AUDIO_BACKEND_AUTO;
}

uint64_t ct_pipe_memory_cap(const ct_transcriber_options *o) {
    double b = floor(o->audio_memory_gb * 1073741824.0);
    return b < 1 ? 1 : (uint64_t)b;
}

static ct_prep_options prep_options(const ct_pipe *p) {
    const ct_transcriber_options *o = &p->t->o;
    ct_prep_options po = ct_prep_default_options();
    po.workers = o->preprocess_workers;
    if (!o->pipeline_preparation) po.lookahead = 1;
    /* For a GPU, preparation is the bottleneck (docs/PREP.md, "Feeding a
     * GPU"): by default the ASR loop takes the files as they are ready, not
     * behind the longest one (the publisher keeps input order for
     * everything a user sees). Word alignment keeps input order: it needs
     * each file's audio until the file is published, which out of order
     * would hold several files' PCM beyond the memory cap. On the CPU the
     * model is the bottleneck, and input order keeps the batches the same
     * from run to run. */
    po.any_order = o->pipeline_preparation && (o->file_order == CT_FILE_ORDER_READY ||
                                               (o->file_order == CT_FILE_ORDER_AUTO && p->device == CT_DEVICE_CUDA &&
                                                ct_options_alignment(o) != CT_ALIGN_WORD));
    po.memory_cap_bytes = ct_pipe_memory_cap(o);
    po.backend = audio_backend(o->audio_backend);
    /* the two enums share their values (cohere_transcribe.h, audio/audio.h) */
    po.resampler = (ct_audio_resampler)o->resampler;
    po.vad.mode = o->vad == CT_VAD_MODE_AUDITOK ? CT_VAD_AUDITOK : o->vad == CT_VAD_MODE_NONE ? CT_VAD_NONE
                                                                                           : CT_VAD_SILERO;
    po.vad.threshold = o->vad_threshold;
    po.vad.min_silence_ms = o->min_silence_ms;
    po.vad.speech_pad_ms = o->speech_pad_ms;
    po.vad.min_dur = o->min_dur;
    po.vad.max_dur = o->max_dur;
    po.vad.max_silence = o->max_silence;
    po.vad.energy_threshold = o->energy_threshold;
    po.vad.merge = o->vad_merge;
    po.silero = p->t->silero;
    po.vad_batch_size = o->vad_batch_size;
    po.vad_block_frames = o->vad_block_frames;
    po.vad_threads = o->vad_threads;
    return po;
}

/* Segments of one prepared file as engine slices: samples
 * [rhe(start·16000), rhe(end·16000)) clamped to the file (§13.3). */
static void slice(const ct_audio *a, const ct_span *sp, const float **pcm, size_t *n) {
    int64_t s = ct_round_half_even(sp->start * 16000.0), e = ct_round_half_even(sp->end * 16000.0);
    if (s < 0) s = 0;
    if (e > (int64_t)a->n) e = (int64_t)a->n;
    if (e < s) e = s;
    *pcm = a->samples + s;
    *n = (size_t)(e - s);
}

static const char *vad_engine_actual(ct_vad_policy v) {
    return v == CT_VAD_MODE_SILERO ? "onnx" : v == CT_VAD_MODE_AUDITOK ? "auditok" : "none (fixed windows)";
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static ct_status int_list(const ct_asr_seg *segs, size_t n, int which, int **out, size_t *count) {
    *out = malloc(sizeof(int) * (n ? n : 1));
    *count = 0;
    if (!*out) return ct_fail(CT_ERR_OOM, "record");
    for (size_t i = 0; i < n; i++) {
        int f = which == 0 ? segs[i].repetition_stopped : which == 1 ? segs[i].retried : segs[i].hit_limit;
        if (f) (*out)[(*count)++] = (int)i;
    }
    return CT_OK;
}

/* The record of a file from its prepared item and decoded segments. */
static ct_status build_record(ct_pipe *p, ct_file_result *f, const ct_prep_item *it, const ct_asr_seg *segs) {
    ct_file_record *r = &f->rec;
    const ct_transcriber_options *o = &p->t->o;
    r->source_path = strdup(f->path);
    r->duration = (double)it->audio->n / 16000.0;
    r->decode_backend = strdup(ct_audio_backend_name(it->audio->backend));
    r->decode_fallback_reason = it->audio->fallback_reason[0] ? strdup(it->audio->fallback_reason) : NULL;
    r->vad_engine_actual = strdup(vad_engine_actual(o->vad));
    r->vad_provider = o->vad == CT_VAD_MODE_SILERO ? strdup("CPUExecutionProvider") : NULL;
    r->vad_fallback_reason = dup_or_null(ct_pipe_vad_fallback_reason(o));
    size_t ns = it->vad.n_segments;
    r->speech_spans = malloc(sizeof(ct_span) * (it->vad.n_spans ? it->vad.n_spans : 1));
    r->segments = calloc(ns ? ns : 1, sizeof *r->segments);
    if (!r->source_path || !r->decode_backend || !r->vad_engine_actual || !r->speech_spans || !r->segments)
        return ct_fail(CT_ERR_OOM, "record");
    memcpy(r->speech_spans, it->vad.spans, sizeof(ct_span) * it->vad.n_spans);
    r->n_speech_spans = it->vad.n_spans;
    for (size_t i = 0; i < ns; i++) {
        ct_rec_segment *sg = &r->segments[i];
        sg->index = (int)i;
        sg->start = it->vad.segments[i].start;
        sg->end = it->vad.segments[i].end;
        sg->text = strdup(segs[i].text ? segs[i].text : "");
        sg->generated_tokens = segs[i].generated_tokens;
        if (!sg->text) return ct_fail(CT_ERR_OOM, "record");
        r->n_segments++;
    }
    CT_TRY(int_list(segs, ns, 0, &r->repetition_stopped, &r->n_repetition_stopped));
    CT_TRY(int_list(segs, ns, 1, &r->truncation_retried, &r->n_truncation_retried));
    CT_TRY(int_list(segs, ns, 2, &r->token_limit, &r->n_token_limit));
    return CT_OK;
}

/* Finish one file of a group: record, then words, cues, render, publish. */
static ct_status finish_file(ct_pipe *p, size_t fi, ct_prep_item *it, ct_asr_seg *segs) {
    ct_file_result *f = &p->run->files[fi];
    ct_status s = CT_OK;
    for (size_t i = 0; i < it->vad.n_segments && s == CT_OK; i++)
        if (segs[i].status != CT_OK) {
            s = segs[i].status;
            ct_fail(s, "segment %zu: %s", i, segs[i].error ? segs[i].error : ct_status_str(s));
        }
    if (s == CT_OK) {
        ct_file_record_clear(&f->rec);
        s = build_record(p, f, it, segs);
    }
    if (s == CT_OK && ct_options_alignment(&p->t->o) == CT_ALIGN_WORD) {
        s = ct_pipe_write_checkpoint(p, fi);
        if (s == CT_OK) s = ct_pipe_align_file(p, fi, it->audio->samples, it->audio->n);
    }
    if (s != CT_OK) {
        ct_pipe_fail_file(p, fi, s, ct_last_error());
        return CT_OK;
    }
    return ct_pipe_finish_file(p, fi);
}

/* A group: prepared files whose segments go through ASR together. */
typedef struct {
    ct_prep_item **items;
    size_t *file;   /* run index of each item */
    size_t n, cap;
    size_t segments;
    uint64_t bytes;
} group;

static void group_clear(group *g) {
    for (size_t i = 0; i < g->n; i++) ct_prep_item_free(g->items[i]);
    g->n = g->segments = 0;
    g->bytes = 0;
}

/* Live totals for displays: rows decoded so far, in any file. */
static void on_batch(void *user, int rows) {
    ct_pipe *p = user;
    p->segments_live += rows;
    long long keep = p->segments_done;
    p->segments_done = p->segments_live;
    ct_pipe_progress(p, CT_PROGRESS_BATCH, NULL, NULL, p->segments_live, p->segments_total);
    p->segments_done = keep;
}

/* Files leave ASR in the order their groups ran, which (with the pool's
 * any_order) need not be input order; they are finished (records, words,
 * cues, publication) and reported in input order, so the console, the
 * progress events and the order of commits are those of an in-order run.
 * A file's slot holds its prepared item and decoded segments from the end
 * of its group's ASR until every earlier file is finished. The pool's
 * look-ahead window bounds how many files can wait here (prep.h). */
typedef struct {
    ct_prep_item *it; /* WAITING: its item, NULL once finished */
    size_t fi;        /* run index */
    ct_asr_seg *segs; /* it->vad.n_segments results */
    enum { SLOT_OPEN, SLOT_WAITING, SLOT_DONE } state;
} pub_slot;

typedef struct {
    pub_slot *slot; /* by position in todo (ct_prep_item.index) */
    size_t n, next; /* the first position not yet finished */
} publisher;

static void slot_free(pub_slot *sl) {
    if (sl->segs && sl->it)
        for (size_t j = 0; j < sl->it->vad.n_segments; j++) ct_asr_seg_clear(&sl->segs[j]);
    free(sl->segs);
    ct_prep_item_free(sl->it);
    sl->segs = NULL;
    sl->it = NULL;
}

static void publisher_free(publisher *pb) {
    for (size_t i = 0; pb->slot && i < pb->n; i++) slot_free(&pb->slot[i]);
    free(pb->slot);
}

/* Finish the waiting files from pb->next on, in input order, up to the
 * first one whose ASR has not run. */
static ct_status publish_ready(ct_pipe *p, publisher *pb) {
    for (; pb->next < pb->n && pb->slot[pb->next].state != SLOT_OPEN; pb->next++) {
        pub_slot *sl = &pb->slot[pb->next];
        if (sl->state == SLOT_DONE) continue; /* skipped or resumed when it was claimed */
        ct_prep_item *it = sl->it;
        size_t fi = sl->fi;
        if (it->status != CT_OK) {
            ct_pipe_fail_file(p, fi, it->status, it->error);
        } else {
            if (it->vad.n_segments) /* a file without speech reports 0/0 once */
                ct_pipe_progress(p, CT_PROGRESS_ASR, NULL, p->run->files[fi].path, 0, (long long)it->vad.n_segments);
            p->segments_done += (long long)it->vad.n_segments;
            ct_pipe_progress(p, CT_PROGRESS_ASR, NULL, p->run->files[fi].path, (long long)it->vad.n_segments,
                             (long long)it->vad.n_segments);
            if (atomic_load(&p->t->cancel)) return ct_fail(CT_ERR_ABORTED, "cancelled");
            double t0 = ct_now();
            ct_status r = finish_file(p, fi, it, sl->segs);
            ct_trace_span("publish", t0, ct_now(), ct_trace_file(p->run->files[fi].path), "\"file\":%zu", pb->next);
            if (r == CT_ERR_ABORTED) return r;
        }
        slot_free(sl);
        sl->state = SLOT_DONE;
        p->files_done++;
        ct_pipe_progress(p, CT_PROGRESS_FILES, NULL, p->run->files[fi].path, p->files_done,
                         (long long)p->run->n_files);
    }
    return CT_OK;
}

/* ASR over the group's segments; its files then wait in pb for their turn
 * (publish_ready). A stopping failure (the breaker) fails the files
 * through their segments' statuses. */
static ct_status group_run(ct_pipe *p, group *g, publisher *pb) {
    if (!g->n) return CT_OK;
    size_t total = 0;
    for (size_t i = 0; i < g->n; i++)
        if (g->items[i]->status == CT_OK) total += g->items[i]->vad.n_segments;
    if (total) CT_TRY(session_open(p)); /* a no-op: loaded when preparation started (ct_pipe_process) */
    ct_asr_seg *segs = calloc(total ? total : 1, sizeof *segs);
    if (!segs) return ct_fail(CT_ERR_OOM, "asr: %zu segments", total);
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++) {
        ct_prep_item *it = g->items[i];
        if (it->status != CT_OK) continue;
        for (size_t j = 0; j < it->vad.n_segments; j++, k++) {
            slice(it->audio, &it->vad.segments[j], &segs[k].pcm, &segs[k].n);
            segs[k].language = p->t->o.language;
        }
    }
    ct_asr_run_options ro = {
        .batch_size = p->batch_size, .batch_max_size = p->t->o.batch_max_size,
        .batch_audio_seconds = p->t->o.batch_audio_seconds, .adaptive = p->t->o.adaptive_batch,
        .max_new_tokens = p->t->o.max_new_tokens, .max_retry_tokens = p->t->o.max_retry_tokens,
        .retry = p->t->o.truncation_policy == CT_TRUNCATION_RETRY,
        .stop_repetition_loops = p->t->o.stop_repetition_loops, .punctuation = p->t->o.punctuation,
        .dither = 1, .benchmark_tokens_per_second = p->t->o.benchmark_tokens_per_second,
        .cancel = &p->t->cancel, .on_batch = on_batch, .user = p};
    double t0 = ct_now();
    ct_status s = total ? ct_asr_run(p->t->asr, &p->t->breaker, segs, total, &ro, &p->asr_stats) : CT_OK;
    ct_trace_span("group", t0, ct_now(), NULL, "\"files\":%zu,\"segments\":%zu", g->n, total);
    p->segments_asr += (long long)total;
    p->segments_live = p->segments_asr;
    ct_status park = CT_OK; /* our own allocation, apart from what the engine returned */
    if (s == CT_ERR_ABORTED) goto done;
    k = 0;
    for (size_t i = 0; i < g->n && park == CT_OK; i++) {
        ct_prep_item *it = g->items[i];
        pub_slot *sl = &pb->slot[it->index];
        size_t m = it->status == CT_OK ? it->vad.n_segments : 0;
        sl->segs = calloc(m ? m : 1, sizeof *sl->segs);
        if (!sl->segs) {
            park = ct_fail(CT_ERR_OOM, "asr: results of %zu segments", m);
            break;
        }
        memcpy(sl->segs, segs + k, m * sizeof *segs); /* the texts move with them */
        memset(segs + k, 0, m * sizeof *segs);
        k += m;
        sl->it = it;
        sl->fi = g->file[i];
        sl->state = SLOT_WAITING;
        g->items[i] = NULL;
    }
    if (s == CT_ERR_DEVICE) s = CT_OK; /* recorded per file; the breaker fails later groups fast */
    if (park != CT_OK) s = park;
done:
    for (size_t i = 0; i < total; i++) ct_asr_seg_clear(&segs[i]);
    free(segs);
    group_clear(g);
    if (s == CT_ERR_ABORTED || park != CT_OK) return s;
    ct_status r = publish_ready(p, pb); /* the parked files, also when s is a stopping failure */
    return s != CT_OK ? s : r;
}

static ct_status group_add(ct_pipe *p, group *g, ct_prep_item *it, size_t fi) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        ct_prep_item **a = realloc(g->items, cap * sizeof *a);
        if (!a) return ct_fail(CT_ERR_OOM, "group");
        g->items = a;
        size_t *b = realloc(g->file, cap * sizeof *b);
        if (!b) return ct_fail(CT_ERR_OOM, "group");
        g->file = b;
        g->cap = cap;
    }
    g->items[g->n] = it;
    g->file[g->n++] = fi;
    if (it->status == CT_OK) {
        if (it->vad.n_probs) p->vad_files++, p->vad_frames += (long long)it->vad.n_probs;
        g->segments += it->vad.n_segments;
        g->bytes += (uint64_t)it->audio->n * sizeof(float);
    }
    return CT_OK;
}

typedef struct {
    ct_pipe *p;
    const size_t *todo;
} admit_ctx;

static int admit(void *user, size_t index) { /* prep.h's hook: the set's lock before the decode */
    admit_ctx *a = user;
    return ct_pipe_admit(a->p, a->todo[index]);
}

/* Segments that close group k (0, 1, ...): the batch size, doubling per
 * group up to four batches. Four batches per group give the scheduler
 * lengths to sort across (less padding) while the prep pool prepares the
 * next group. The first groups are smaller so that the device starts as
 * soon as one batch is prepared, instead of waiting for four (with
 * --batch-size 128 that wait was 3.4 s of a 7.1 s run on the GPU machine,
 * docs/PERFORMANCE.md); by the time the ramp reaches four batches the pool
 * is that far ahead. The rule counts segments only, so a corpus always
 * splits into the same groups and batches, however fast it is prepared. */
size_t ct_pipe_group_segments(int batch_size, size_t k) {
    size_t b = batch_size > 0 ? (size_t)batch_size : 1, want = b;
    for (size_t i = 0; i < k && want < 4 * b; i++) want *= 2;
    return want < 4 * b ? want : 4 * b;
}

/* Decode, segment and transcribe the files todo[0..n) (run indices). Groups
 * close at ct_pipe_group_segments segments, or half the PCM cap, so the prep
 * pool keeps preparing the next group meanwhile. */
ct_status ct_pipe_process(ct_pipe *p, const size_t *todo, size_t n) {
    if (!n) return CT_OK;
    CT_TRY(session_resolve(p));
    CT_TRY(silero_open(p));
    /* word timing needs the aligner for every file: a missing or unreachable
     * one fails the run here, before any decoding, not file by file */
    if (ct_options_alignment(&p->t->o) == CT_ALIGN_WORD) CT_TRY(ct_pipe_aligner_open(p));
    ct_prep_options po = prep_options(p);
    admit_ctx actx = {p, todo};
    po.admit = admit, po.admit_user = &actx;
    const char **paths = malloc(sizeof *paths * n);
    if (!paths) return ct_fail(CT_ERR_OOM, "paths");
    for (size_t i = 0; i < n; i++) paths[i] = p->run->files[todo[i]].path;
    ct_prep *prep = NULL;
    ct_status s = ct_prep_create(paths, n, &po, &prep);
    free(paths);
    if (s != CT_OK) return s;
    ct_prep_stats ps;
    ct_prep_get_stats(prep, &ps);
    char msg[256];
    uint64_t cap = ct_pipe_memory_cap(&p->t->o);
    int pipelined = p->t->o.pipeline_preparation && n > 1;
    uint64_t group_cap = pipelined ? (cap / 2 > 0 ? cap / 2 : 1) : cap;
    if (pipelined && group_cap > 512ull << 20) group_cap = 512ull << 20;
    snprintf(msg, sizeof msg, "    preparing (workers=%d, next-group=%s, PCM group cap=%llu bytes)", ps.workers,
             pipelined ? "on" : "off", (unsigned long long)group_cap);
    ct_pipe_progress(p, CT_PROGRESS_MESSAGE, msg, NULL, 0, 0);
    /* The weights load now, in this thread, while the pool's workers decode
     * and segment the first files: the original does the same (it submits
     * the first group's preparation, then loads the ASR model). Loading at
     * the first full group instead put the whole load (1.4–1.6 s for the
     * full model on the GPU machine) after the first group's preparation. */
    s = session_open(p);
    if (s != CT_OK) {
        ct_prep_free(prep);
        return s;
    }
    group g = {0};
    size_t groups = 0;
    publisher pb = {.slot = calloc(n, sizeof(pub_slot)), .n = n};
    if (!pb.slot) s = ct_fail(CT_ERR_OOM, "publisher");
    for (size_t i = 0; s == CT_OK; i++) {
        if (atomic_load(&p->t->cancel)) {
            s = ct_fail(CT_ERR_ABORTED, "cancelled");
            break;
        }
        ct_prep_item *it = NULL;
        double w0 = ct_now();
        s = ct_prep_next(prep, &it);
        double w1 = ct_now();
        p->seconds_prep_wait += w1 - w0;
        ct_trace_span("wait prep", w0, w1, it ? ct_trace_file(it->path) : NULL, "\"file\":%zu",
                      it ? it->index : (size_t)0);
        if (s != CT_OK || !it) break;
        size_t fi = todo[it->index];
        ct_pipe_action a = CT_PIPE_PROCESS;
        s = ct_pipe_claim(p, fi, &a); /* the set's lock, held until it is published or failed */
        if (s == CT_OK && a != CT_PIPE_PROCESS) {
            size_t at = it->index;
            ct_prep_item_free(it);
            if (a == CT_PIPE_RESUME) s = ct_pipe_resume_file(p, fi);
            p->files_done++;
            ct_pipe_progress(p, CT_PROGRESS_FILES, NULL, p->run->files[fi].path, p->files_done,
                             (long long)p->run->n_files);
            pb.slot[at].state = SLOT_DONE;
            if (s == CT_OK) s = publish_ready(p, &pb); /* it may have been the one the others waited for */
            continue;
        }
        if (s == CT_OK && it->not_admitted) {
            /* declined at admission (another process held or had just
             * published the set) but ours after all: decode it here */
            ct_prep_item *mine = NULL;
            ct_prep_options one = po;
            one.admit = NULL;
            s = ct_prep_file(it->path, it->index, &one, p->t->silero, &mine);
            ct_prep_item_free(it);
            it = mine;
        }
        if (s != CT_OK) {
            ct_prep_item_free(it);
            break;
        }
        if (it->status == CT_OK) p->segments_total += (long long)it->vad.n_segments;
        p->files_prepared++;
        s = group_add(p, &g, it, fi);
        if (s != CT_OK) {
            ct_prep_item_free(it);
            break;
        }
        if (g.segments >= ct_pipe_group_segments(p->batch_size, groups) || g.bytes >= group_cap) {
            s = group_run(p, &g, &pb);
            groups++;
        }
    }
    if (s == CT_OK) s = group_run(p, &g, &pb);
    else group_clear(&g);
    if (s == CT_OK && pb.next < pb.n) s = ct_fail(CT_ERR_INTERNAL, "transcriber: file %zu never left preparation", pb.next);
    publisher_free(&pb);
    free(g.items);
    free(g.file);
    ct_prep_get_stats(prep, &ps);
    p->seconds_decode += ps.decode_seconds;
    p->seconds_vad += ps.vad_seconds;
    ct_prep_free(prep);
    return s;
}
