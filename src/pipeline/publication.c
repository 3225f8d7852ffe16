/* publication.c — the pipeline's side of the files on disk: discovery and
 * planning (stage 1, before any model load), the per-file decision (skip a
 * verified set, resume from an ASR checkpoint, or process), words and cues,
 * rendering, and the commit of each output set with its checkpoint and
 * manifest (PRODUCT-DETAILS §3, §4.2). The modules it drives:
 * pipeline/discover, pipeline/plan, output/{state,timing,cues,render,
 * transcript_json}, output/publish and output/lock. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "output/cues.h"
#include "output/lock.h"
#include "output/publish.h"
#include "output/pytext.h"
#include "output/render.h"
#include "output/state.h"
#include "output/timing.h"
#include "output/transcript_json.h"
#include "pipeline/discover.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/options.h"
#include "pipeline/plan.h"

/* What the pipeline keeps per run file beside its result. */
typedef struct ct_pipe_file {
    ct_source_snapshot src; /* taken when the file was decided */
    int have_src;
    ct_output_lock *lock;   /* held from the decision to the commit */
    /* the manifest as the last decision saw it, so that the admit hook can
     * tell a set another process published since (ct_pipe_admit) */
    int man_seen;
    struct stat man_st;
    int leftovers;          /* its folder holds what a killed commit of this set left */
    int checkpointed;       /* this run wrote its ASR checkpoint already (word timing, before the aligner) */
} ct_pipe_file;

struct ct_pipe_plan {
    ct_plan plan;
    ct_pipe_file *files;
    ct_format formats[CT_FORMAT_COUNT];
    int n_formats;
    char asr_key[65], render_key[65];
    char impl[65];
    const ct_artifacts *artifacts;
    ct_output_context ctx;
    ct_contract_inputs ci;
};

/* "<Class>: <message>", the original's per-file error text; our classes
 * name the status (docs/USAGE.md lists them). */
static const char *error_class(ct_status s) {
    switch (s) {
    case CT_ERR_INVALID_ARG: return "InvalidArgumentError";
    case CT_ERR_IO: return "IOError";
    case CT_ERR_FORMAT: return "FormatError";
    case CT_ERR_OOM: return "OutOfMemoryError";
    case CT_ERR_DEVICE: return "DeviceError";
    case CT_ERR_UNSUPPORTED: return "UnsupportedError";
    case CT_ERR_ABORTED: return "AbortedError";
    case CT_ERR_MISUSE: return "MisuseError";
    case CT_ERR_NOT_FOUND: return "NotFoundError";
    case CT_ERR_NETWORK: return "NetworkError";
    case CT_ERR_AUTH: return "AuthError";
    case CT_ERR_LIMIT: return "LimitError";
    case CT_ERR_BUSY: return "BusyError";
    default: return "InternalError";
    }
}

void ct_pipe_fail_file(ct_pipe *p, size_t fi, ct_status s, const char *msg) {
    ct_file_result *f = &p->run->files[fi];
    f->status = CT_FILE_FAILED;
    free(f->error);
    size_t n = strlen(msg) + 64;
    f->error = malloc(n);
    if (f->error) snprintf(f->error, n, "%s: %s", error_class(s), msg);
    if (p->plan && p->plan->files[fi].lock) {
        ct_output_lock_release(p->plan->files[fi].lock);
        p->plan->files[fi].lock = NULL;
    }
}

const char *ct_pipe_vad_fallback_reason(const ct_transcriber_options *o) {
    if (o->vad != CT_VAD_MODE_SILERO) return NULL;
    if (o->vad_engine == CT_VAD_ENGINE_TORCH)
        return "the requested Silero torch executor runs as the native implementation of the ONNX graph";
    if (o->vad_engine == CT_VAD_ENGINE_JIT)
        return "the requested Silero jit executor runs as the native implementation of the ONNX graph";
    return NULL;
}

static ct_status silero_path_for_artifacts(const ct_transcriber_options *o, char *buf, size_t cap, const char **out) {
    *out = NULL;
    if (o->vad != CT_VAD_MODE_SILERO) return CT_OK;
    if (o->vad_weights) {
        *out = o->vad_weights;
        return CT_OK;
    }
    ct_status s = ct_silero_default_path(buf, cap);
    if (s != CT_OK)
        return ct_fail_wrap(s, "Silero VAD weights not found (give %s, or another %s)",
                            o->cli_option_names ? "--vad-weights PATH" : "vad_weights",
                            o->cli_option_names ? "--vad mode" : "vad mode");
    *out = buf;
    return CT_OK;
}

/* One listing per output folder: the sets of this run that a killed commit
 * left entries for (recovered under their locks when their turn comes). */
static ct_status find_leftovers(struct ct_pipe_plan *pp) {
    for (size_t i = 0; i < pp->plan.n; i++) {
        const char *parent = pp->plan.files[i].parent;
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++) seen = strcmp(pp->plan.files[k].parent, parent) == 0;
        if (seen) continue;
        char **stems = NULL;
        size_t ns = 0;
        CT_TRY(ct_publish_pending_stems(parent, &stems, &ns));
        for (size_t j = 0; j < ns; j++) {
            for (size_t k = i; k < pp->plan.n; k++)
                if (!strcmp(pp->plan.files[k].parent, parent) && !strcmp(pp->plan.files[k].stem, stems[j]))
                    pp->files[k].leftovers = 1;
            free(stems[j]);
        }
        free(stems);
    }
    return CT_OK;
}

ct_status ct_pipe_plan(ct_pipe *p, const char *const *paths, size_t n) {
    const ct_transcriber_options *o = &p->t->o;
    struct ct_pipe_plan *pp = calloc(1, sizeof *pp);
    if (!pp) return ct_fail(CT_ERR_OOM, "plan");
    p->plan = pp;
    ct_input_list in = {0};
    CT_TRY(ct_discover_inputs(paths, n, o->recursive, &in));
    pp->n_formats = ct_options_formats(o, pp->formats);
    ct_plan_options po = {.output_dir = o->output_dir, .formats = pp->formats, .n_formats = pp->n_formats,
                          .existing = o->existing, .profile_json = o->profile_json};
    ct_status s = o->publish ? ct_plan_outputs(&in, &po, &pp->plan) : CT_OK;
    if (s == CT_OK) {
        p->run->files = calloc(in.n ? in.n : 1, sizeof *p->run->files);
        pp->files = calloc(in.n ? in.n : 1, sizeof *pp->files);
        if (!p->run->files || !pp->files) s = ct_fail(CT_ERR_OOM, "plan");
    }
    for (size_t i = 0; s == CT_OK && i < in.n; i++) {
        ct_file_result *f = &p->run->files[i];
        f->path = strdup(in.files[i].path);
        f->relative = strdup(in.files[i].relative);
        f->error = strdup("");
        f->model_id = p->model_id, f->model_revision = p->model_revision;
        f->device = p->device == CT_DEVICE_CUDA ? "cuda" : "cpu";
        f->dtype = ct_pipe_dtype_name(p->dtype);
        f->status = CT_FILE_FAILED; /* until it completes or is skipped */
        if (!f->path || !f->relative || !f->error) s = ct_fail(CT_ERR_OOM, "plan");
        p->run->n_files++;
    }
    ct_input_list_free(&in);
    if (s != CT_OK) return s;
    if (o->publish) CT_TRY(find_leftovers(pp));
    /* the contract keys and the transcript context, once per run */
    char sp[4096];
    const char *silero = NULL;
    if ((s = silero_path_for_artifacts(o, sp, sizeof sp, &silero)) != CT_OK) return s;
    CT_TRY(ct_artifacts_process(silero, &pp->artifacts));
    CT_TRY(ct_implementation_fingerprint(ct_version(), pp->artifacts, pp->impl));
    pp->ci = (ct_contract_inputs){.device = p->device == CT_DEVICE_CUDA ? "cuda" : "cpu",
                                  .dtype = ct_pipe_dtype_name(p->dtype),
                                  .batch_size = o->batch_size,
                                  .model_id = p->model_id,
                                  .model_revision = p->model_revision,
                                  .adapter_id = NULL,
                                  .adapter_revision = NULL,
                                  .implementation_sha256 = pp->impl};
    CT_TRY(ct_asr_contract_key(o, &pp->ci, pp->asr_key));
    CT_TRY(ct_render_contract_key(o, &pp->ci, pp->render_key));
    pp->ctx = (ct_output_context){.package_version = ct_version(), .artifacts = pp->artifacts,
                                  .model_id = p->model_id, .model_revision = p->model_revision};
    return CT_OK;
}

void ct_pipe_plan_free(ct_pipe *p) {
    struct ct_pipe_plan *pp = p->plan;
    if (!pp) return;
    for (size_t i = 0; pp->files && i < p->run->n_files; i++) {
        ct_source_snapshot_clear(&pp->files[i].src);
        if (pp->files[i].lock) ct_output_lock_release(pp->files[i].lock);
    }
    free(pp->files);
    ct_plan_free(&pp->plan);
    free(pp);
    p->plan = NULL;
}

static ct_status open_parent(const ct_planned_file *pf, int *fd) {
    *fd = open(pf->parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0) return ct_fail(CT_ERR_IO, "Cannot open output directory %s", pf->parent);
    return CT_OK;
}

/* Skip (verified set), resume (valid checkpoint) or process: §3.7. Run at
 * planning without the lock (so that an all-skipped run loads nothing), and
 * again under the lock when the file's turn comes (ct_pipe_claim), since
 * another process may have finished the set in between. */
static ct_status decide(ct_pipe *p, size_t fi, ct_pipe_action *action) {
    const ct_transcriber_options *o = &p->t->o;
    struct ct_pipe_plan *pp = p->plan;
    ct_file_result *f = &p->run->files[fi];
    ct_pipe_file *pf = &pp->files[fi];
    *action = CT_PIPE_PROCESS;
    ct_source_snapshot_clear(&pf->src);
    pf->have_src = 0;
    ct_status s = ct_source_snapshot_take(f->path, &pf->src);
    if (s != CT_OK) {
        ct_pipe_fail_file(p, fi, s, ct_last_error());
        *action = CT_PIPE_DONE;
        return CT_OK;
    }
    pf->have_src = 1;
    if (!o->publish) return CT_OK;
    const ct_planned_file *pl = &pp->plan.files[fi];
    int dfd;
    CT_TRY(open_parent(pl, &dfd));
    char reason[CT_REASON_MAX] = "";
    int ok = 0;
    pf->man_seen = fstatat(dfd, pl->manifest_name, &pf->man_st, AT_SYMLINK_NOFOLLOW) == 0;
    if (o->existing == CT_EXISTING_SKIP) {
        int all = 1;
        for (int k = 0; k < pl->n_outputs; k++)
            all &= faccessat(dfd, pl->output_names[k], F_OK, AT_SYMLINK_NOFOLLOW) == 0;
        if (all) {
            ct_verify_request vr = {.asr_key = pp->asr_key, .render_key = pp->render_key, .source = &pf->src,
                                    .formats = pl->formats, .names = (const char *const *)pl->output_names,
                                    .n = (size_t)pl->n_outputs};
            s = ct_manifest_verify(dfd, pl->manifest_name, &vr, &ok, reason, NULL);
            if (s == CT_OK && ok) {
                close(dfd);
                f->status = CT_FILE_SKIPPED;
                free(f->error);
                f->error = strdup("verified output generation is complete");
                for (size_t k = 0; k < f->n_outputs; k++) free(f->outputs[k]);
                free(f->outputs);
                f->n_outputs = 0;
                f->outputs = calloc((size_t)pl->n_outputs, sizeof *f->outputs);
                for (int k = 0; f->outputs && k < pl->n_outputs; k++)
                    if ((f->outputs[k] = strdup(pl->output_paths[k]))) f->n_outputs++;
                *action = CT_PIPE_DONE;
                return CT_OK;
            }
        }
    } else if (o->existing == CT_EXISTING_ERROR) {
        /* an output that appeared after planning fails this file only (§3.7) */
        for (int k = 0; k < pl->n_outputs; k++)
            if (faccessat(dfd, pl->output_names[k], F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
                close(dfd);
                ct_fail(CT_ERR_INVALID_ARG, "Output already exists:\n  %s\nUse existing: 'overwrite' or existing: 'skip'.",
                        pl->output_paths[k]);
                ct_pipe_fail_file(p, fi, CT_ERR_INVALID_ARG, ct_last_error());
                *action = CT_PIPE_DONE;
                return CT_OK;
            }
    }
    /* a valid ASR checkpoint saves the decoding (render options are not in
     * it); word timing resumes from it too: the aligner then runs on the
     * re-decoded audio with the checkpoint's segments (ct_pipe_resume_file) */
    ct_file_record_clear(&f->rec);
    pf->checkpointed = 0;
    s = ct_checkpoint_restore(dfd, pl->checkpoint_name, pp->asr_key, &pf->src, &f->rec, &ok, reason);
    if (s == CT_OK && ok) *action = CT_PIPE_RESUME;
    else ct_file_record_clear(&f->rec);
    close(dfd);
    return s;
}

/* Planning's decision sees a set as it is on disk; where the folder listing
 * found what a killed commit left, resolve it first (under the lock, as the
 * claim does), or a set about to be skipped would keep those entries, and
 * one whose renames were all done before the kill would be judged on the
 * new members that recovery then rolls back (issue 12's kill test found
 * both). A busy lock: its owner is committing the set and resolves it. */
ct_status ct_pipe_decide(ct_pipe *p, size_t fi, ct_pipe_action *action) {
    ct_pipe_file *pf = p->plan ? &p->plan->files[fi] : NULL;
    if (p->t->o.publish && pf && pf->leftovers && !pf->lock) {
        const ct_planned_file *pl = &p->plan->plan.files[fi];
        ct_output_lock *lock = NULL;
        if (ct_output_lock_acquire(pl->parent, pl->stem, &lock) == CT_OK) {
            ct_bound_dir d = {.fd = -1};
            ct_recovery rec;
            ct_status s = ct_bound_dir_open(pl->parent, &d);
            if (s == CT_OK) s = ct_bound_dir_expect(&d, pl->parent_dev, pl->parent_ino);
            if (s == CT_OK) s = ct_publish_recover(&d, pl->stem, &rec);
            ct_bound_dir_close(&d);
            ct_output_lock_release(lock);
            if (s != CT_OK) { /* the file's error, as its claim would report it */
                ct_pipe_fail_file(p, fi, s, ct_last_error());
                *action = CT_PIPE_DONE;
                return CT_OK;
            }
            pf->leftovers = 0;
        }
        ct_error_clear();
    }
    return decide(p, fi, action);
}

ct_status ct_pipe_claim(ct_pipe *p, size_t fi, ct_pipe_action *action) {
    struct ct_pipe_plan *pp = p->plan;
    if (!p->t->o.publish) return decide(p, fi, action);
    const ct_planned_file *pl = &pp->plan.files[fi];
    ct_pipe_file *pf = &pp->files[fi];
    if (!pf->lock) {
        ct_status s = ct_output_lock_acquire(pl->parent, pl->stem, &pf->lock);
        if (s == CT_ERR_BUSY) { /* left to its owner; the run goes on with the rest */
            ct_file_result *f = &p->run->files[fi];
            f->status = CT_FILE_BUSY;
            free(f->error);
            f->error = strdup(ct_last_error());
            *action = CT_PIPE_DONE;
            return CT_OK;
        }
        if (s != CT_OK) {
            ct_pipe_fail_file(p, fi, s, ct_last_error());
            *action = CT_PIPE_DONE;
            return CT_OK;
        }
    }
    /* what a killed commit of this set left behind, resolved to the old or
     * the new complete set before anything reads it (docs/DURABILITY.md) */
    ct_bound_dir d = {.fd = -1};
    ct_recovery rec;
    ct_status s = ct_bound_dir_open(pl->parent, &d);
    if (s == CT_OK) s = ct_bound_dir_expect(&d, pl->parent_dev, pl->parent_ino);
    /* a full recovery where the folder listing found leftovers of this set;
     * elsewhere only the few stats that find an interrupted commit's journal */
    if (s == CT_OK)
        s = pf->leftovers ? ct_publish_recover(&d, pl->stem, &rec) : ct_publish_recover_if_needed(&d, pl->stem, &rec);
    ct_bound_dir_close(&d);
    if (s != CT_OK) {
        ct_pipe_fail_file(p, fi, s, ct_last_error());
        *action = CT_PIPE_DONE;
        return CT_OK;
    }
    s = decide(p, fi, action);
    if (*action == CT_PIPE_DONE && pf->lock) {
        ct_output_lock_release(pf->lock);
        pf->lock = NULL;
    }
    return s;
}

/* Issue 12: several processes on one corpus must not each decode every file
 * (the prep pool decodes ahead of the claim). Taking the lock at admission
 * makes the lock's owner the only decoder; a set whose manifest was
 * replaced since the decision was published by another process meanwhile,
 * and its claim will find it verified without a decode. Only file fi's
 * entries are touched: the consumer reads them once the item is posted. */
int ct_pipe_admit(ct_pipe *p, size_t fi) {
    if (!p->t->o.publish) return 0;
    const ct_planned_file *pl = &p->plan->plan.files[fi];
    ct_pipe_file *pf = &p->plan->files[fi];
    if (!pf->lock) {
        ct_status s = ct_output_lock_acquire(pl->parent, pl->stem, &pf->lock);
        if (s != CT_OK) {
            pf->lock = NULL;
            return s == CT_ERR_BUSY; /* the claim reports it, or the error */
        }
    }
    char path[8192];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/%s", pl->parent, pl->manifest_name);
    if (n < 0 || (size_t)n >= sizeof path) return 0;
    int seen = lstat(path, &st) == 0;
    if (seen != pf->man_seen) return seen;
    return seen && (st.st_ino != pf->man_st.st_ino || st.st_dev != pf->man_st.st_dev ||
                    st.st_ctim.tv_sec != pf->man_st.st_ctim.tv_sec || st.st_ctim.tv_nsec != pf->man_st.st_ctim.tv_nsec);
}

/* Words, cues and the file's text, for a record just decoded or restored. */
ct_status ct_pipe_finish_record(ct_pipe *p, size_t fi) {
    const ct_transcriber_options *o = &p->t->o;
    ct_file_result *f = &p->run->files[fi];
    ct_file_record *r = &f->rec;
    if (!r->source_path && !(r->source_path = strdup(f->path))) return ct_fail(CT_ERR_OOM, "record");
    /* word timing: the aligner made the words already (transcriber.c) */
    if (ct_timing_mode(o) != CT_ALIGN_WORD) CT_TRY(ct_timing_build_words(r, ct_timing_mode(o), o->vad_merge));
    CT_TRY(ct_cues_build_record(r, o));
    ct_jbuf txt = {0};
    for (size_t i = 0; i < r->n_segments; i++) {
        size_t off, len;
        ct_py_strip_range(r->segments[i].text, strlen(r->segments[i].text), &off, &len);
        if (!len) continue;
        if ((txt.len && ct_jbuf_puts(&txt, "\n") != CT_OK) || ct_jbuf_put(&txt, r->segments[i].text + off, len) != CT_OK) {
            ct_jbuf_free(&txt);
            return ct_fail(CT_ERR_OOM, "text");
        }
    }
    free(f->text);
    f->text = txt.len ? ct_jbuf_take(&txt, NULL) : strdup("");
    ct_jbuf_free(&txt);
    return f->text ? CT_OK : ct_fail(CT_ERR_OOM, "text");
}

/* The file's ASR checkpoint, committed alone (§4.4) into the bound parent. */
static ct_status write_checkpoint(ct_pipe *p, size_t fi, ct_bound_dir *dir) {
    struct ct_pipe_plan *pp = p->plan;
    ct_file_result *f = &p->run->files[fi];
    const ct_planned_file *pl = &pp->plan.files[fi];
    ct_pipe_file *pf = &pp->files[fi];
    CT_TRY(ct_record_ensure_generation_id(&f->rec));
    json_t *payload = NULL;
    ct_jbuf ck = {0};
    ct_status s = ct_checkpoint_payload(&f->rec, pp->asr_key, &pf->src, ct_unix_now(), &payload);
    if (s == CT_OK) s = ct_state_envelope(payload, &ck);
    json_decref(payload);
    ct_publish_member m = {pl->checkpoint_name, ck.data, ck.len};
    ct_publish_request rq = {.dir = dir, .members = &m, .n = 1, .source_path = f->path, .snapshot = &pf->src,
                             .cancel = &p->t->cancel, .lock = pf->lock};
    if (s == CT_OK) s = ct_publish_state(&rq, NULL);
    ct_jbuf_free(&ck);
    if (s == CT_OK) pf->checkpointed = 1;
    return s;
}

/* Word timing (§4.2 step 3): the checkpoint is committed as soon as the ASR
 * is done, before the aligner runs, so that a file whose alignment or
 * publication fails (or whose process is killed meanwhile) resumes without
 * decoding. The set's lock stays held. */
ct_status ct_pipe_write_checkpoint(ct_pipe *p, size_t fi) {
    if (!p->t->o.publish) return CT_OK;
    const ct_planned_file *pl = &p->plan->plan.files[fi];
    double t0 = ct_now();
    ct_bound_dir dir = {.fd = -1};
    ct_status s = ct_bound_dir_open(pl->parent, &dir);
    if (s == CT_OK) s = ct_bound_dir_expect(&dir, pl->parent_dev, pl->parent_ino);
    if (s == CT_OK) s = write_checkpoint(p, fi, &dir);
    if (s != CT_OK && dir.fd >= 0 && p->plan->files[fi].lock) {
        /* what the failed write left, removed under the lock (as ct_pipe_publish does) */
        char keep[2048];
        snprintf(keep, sizeof keep, "%s", ct_last_error());
        ct_recovery rec;
        (void)ct_publish_recover(&dir, pl->stem, &rec);
        ct_fail(s, "%s", keep);
    }
    ct_bound_dir_close(&dir);
    p->seconds_publication += ct_now() - t0;
    return s;
}

/* Render every format and the manifest, then commit them as one set after
 * the ASR checkpoint (§4.2: checkpoint first, so a failed publication
 * resumes without decoding). */
ct_status ct_pipe_publish(ct_pipe *p, size_t fi) {
    const ct_transcriber_options *o = &p->t->o;
    if (!o->publish) return CT_OK;
    struct ct_pipe_plan *pp = p->plan;
    ct_file_result *f = &p->run->files[fi];
    ct_file_record *r = &f->rec;
    const ct_planned_file *pl = &pp->plan.files[fi];
    ct_pipe_file *pf = &pp->files[fi];
    double t0 = ct_now();
    CT_TRY(ct_record_ensure_generation_id(r));
    ct_bound_dir dir = {.fd = -1};
    ct_status s = ct_bound_dir_open(pl->parent, &dir);
    if (s == CT_OK) s = ct_bound_dir_expect(&dir, pl->parent_dev, pl->parent_ino);
    int leftovers = 0; /* committed, but its cleanup failed */
    json_t *payload = NULL;
    ct_jbuf bytes[CT_FORMAT_COUNT + 1];
    memset(bytes, 0, sizeof bytes);
    ct_publish_member mem[CT_FORMAT_COUNT + 1];
    ct_output_member om[CT_FORMAT_COUNT];
    if (s == CT_OK && !r->resumed && !pf->checkpointed) s = write_checkpoint(p, fi, &dir);
    int n = pl->n_outputs;
    if (s != CT_OK) goto done;
    for (int k = 0; k < n && s == CT_OK; k++) {
        s = ct_render_format(r, pl->formats[k], o, &pp->ctx, &bytes[k]);
        om[k] = (ct_output_member){.format = pl->formats[k], .name = pl->output_names[k], .data = bytes[k].data,
                                   .len = bytes[k].len};
    }
    if (s == CT_OK) s = ct_manifest_payload(r, pp->asr_key, pp->render_key, &pf->src, ct_unix_now(), om, (size_t)n, &payload);
    if (s == CT_OK) s = ct_state_envelope(payload, &bytes[n]);
    if (s != CT_OK) goto done;
    for (int k = 0; k < n; k++) mem[k] = (ct_publish_member){pl->output_names[k], bytes[k].data, bytes[k].len};
    mem[n] = (ct_publish_member){pl->manifest_name, bytes[n].data, bytes[n].len};
    ct_publish_request rq = {.dir = &dir, .members = mem, .n = (size_t)n + 1, .source_path = f->path,
                             .snapshot = &pf->src, .cancel = &p->t->cancel, .lock = pf->lock};
    int committed = 0;
    s = ct_publish_set(&rq, &committed);
    if (s != CT_OK && committed) { /* the new set is in place; only cleanup failed: published, and said */
        ct_log(CT_LOG_WARN, "%s: %s", f->path, ct_last_error());
        s = CT_OK;
        leftovers = 1;
    }
    if (s != CT_OK) goto done;
    f->outputs = calloc((size_t)n, sizeof *f->outputs);
    if (!f->outputs) {
        s = ct_fail(CT_ERR_OOM, "outputs");
        goto done;
    }
    for (int k = 0; k < n; k++)
        if ((f->outputs[k] = strdup(pl->output_paths[k]))) f->n_outputs++;
done:
    if ((s != CT_OK || leftovers) && dir.fd >= 0 && pf->lock) {
        /* A commit that failed after its commit point (cleanup), or whose
         * rollback was incomplete, leaves entries that only recovery
         * removes; run it now, still under the set's lock, so that the run
         * leaves no temporary, backup, marker or journal behind (issue 12).
         * Best effort: if it fails too, the next run's claim retries. The
         * commit's own error is the one reported. */
        char keep[2048];
        snprintf(keep, sizeof keep, "%s", ct_last_error());
        ct_recovery rec;
        (void)ct_publish_recover(&dir, pl->stem, &rec);
        if (s != CT_OK) ct_fail(s, "%s", keep);
    }
    ct_bound_dir_close(&dir);
    json_decref(payload);
    for (int k = 0; k <= CT_FORMAT_COUNT; k++) ct_jbuf_free(&bytes[k]);
    if (pf->lock) {
        ct_output_lock_release(pf->lock);
        pf->lock = NULL;
    }
    p->seconds_publication += ct_now() - t0;
    return s;
}

ct_status ct_pipe_finish_file(ct_pipe *p, size_t fi) {
    ct_file_result *f = &p->run->files[fi];
    ct_status s = ct_pipe_finish_record(p, fi);
    if (s == CT_OK) s = ct_pipe_publish(p, fi);
    if (s == CT_ERR_ABORTED) {
        ct_pipe_fail_file(p, fi, s, ct_last_error());
        return s;
    }
    if (s != CT_OK) {
        ct_pipe_fail_file(p, fi, s, ct_last_error());
    } else {
        f->status = CT_FILE_COMPLETED;
        free(f->error);
        f->error = strdup("");
        p->audio_done += f->rec.duration;
    }
    return CT_OK;
}

json_t *ct_pipe_implementation(const ct_pipe *p) { return ct_implementation_json(&p->plan->ctx); }

const ct_output_context *ct_pipe_output_context(const ct_pipe *p) { return &p->plan->ctx; }

const char *ct_pipe_profile_path(const ct_pipe *p) {
    return p->plan && p->plan->plan.profile_path ? p->plan->plan.profile_path : p->t->o.profile_json;
}
