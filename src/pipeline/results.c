/* results.c — the read side of a run (include/cohere_transcribe.h): per-file
 * results through accessors, run statistics and run-level errors. Accessors
 * are total: an index out of range gives an empty value, never a crash. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "pipeline/pipeline_internal.h"

ct_status ct_run_add_error(ct_run *run, const char *msg) {
    char **p = realloc(run->errors, (run->n_errors + 1) * sizeof *p);
    if (!p) return ct_fail(CT_ERR_OOM, "run errors");
    run->errors = p;
    if (!(p[run->n_errors] = strdup(msg))) return ct_fail(CT_ERR_OOM, "run errors");
    run->n_errors++;
    return CT_OK;
}

void ct_file_result_clear(ct_file_result *f) {
    free(f->path);
    free(f->relative);
    free(f->error);
    free(f->text);
    ct_file_record_clear(&f->rec);
    for (size_t i = 0; i < f->n_outputs; i++) free(f->outputs[i]);
    free(f->outputs);
    memset(f, 0, sizeof *f);
}

void ct_run_free(ct_run *run) {
    if (!run) return;
    for (size_t i = 0; i < run->n_files; i++) ct_file_result_clear(&run->files[i]);
    free(run->files);
    for (size_t i = 0; i < run->n_errors; i++) free(run->errors[i]);
    free(run->errors);
    free(run);
}

void ct_run_get_stats(const ct_run *run, ct_run_stats *st) {
    if (run) *st = run->st;
    else memset(st, 0, sizeof *st);
}

size_t ct_run_error_count(const ct_run *run) { return run ? run->n_errors : 0; }
const char *ct_run_error(const ct_run *run, size_t i) { return run && i < run->n_errors ? run->errors[i] : ""; }
size_t ct_run_file_count(const ct_run *run) { return run ? run->n_files : 0; }
const ct_file_result *ct_run_file(const ct_run *run, size_t i) {
    return run && i < run->n_files ? &run->files[i] : NULL;
}

static const char *nz(const char *s) { return s ? s : ""; }

ct_file_status ct_file_get_status(const ct_file_result *f) { return f ? f->status : CT_FILE_FAILED; }
const char *ct_file_path(const ct_file_result *f) { return f ? nz(f->path) : ""; }
const char *ct_file_error(const ct_file_result *f) { return f ? nz(f->error) : ""; }
const char *ct_file_text(const ct_file_result *f) { return f ? nz(f->text) : ""; }
double ct_file_duration(const ct_file_result *f) { return f ? f->rec.duration : 0.0; }
size_t ct_file_segment_count(const ct_file_result *f) { return f ? f->rec.n_segments : 0; }

ct_segment ct_file_segment(const ct_file_result *f, size_t i) {
    ct_segment s = {0, 0, 0, "", 0};
    if (!f || i >= f->rec.n_segments) return s;
    const ct_rec_segment *r = &f->rec.segments[i];
    s.index = r->index, s.start = r->start, s.end = r->end, s.text = nz(r->text);
    s.generated_tokens = r->generated_tokens;
    return s;
}

size_t ct_file_word_count(const ct_file_result *f) { return f ? f->rec.n_words : 0; }

ct_word ct_file_word(const ct_file_result *f, size_t i) {
    ct_word w = {0, 0, "", 0, 0, CT_TIMING_UNIFORM_SEGMENT};
    if (!f || i >= f->rec.n_words) return w;
    const ct_rec_word *r = &f->rec.words[i];
    w.start = r->start, w.end = r->end, w.text = nz(r->text), w.segment_index = r->segment_index;
    w.segment_word_index = r->segment_word_index, w.source = r->source;
    return w;
}

size_t ct_file_cue_count(const ct_file_result *f) { return f ? f->rec.n_cues : 0; }

ct_cue ct_file_cue(const ct_file_result *f, size_t i) {
    ct_cue c = {0, 0, ""};
    if (!f || i >= f->rec.n_cues) return c;
    c.start = f->rec.cues[i].start, c.end = f->rec.cues[i].end, c.text = nz(f->rec.cues[i].text);
    return c;
}

size_t ct_file_output_count(const ct_file_result *f) { return f ? f->n_outputs : 0; }
const char *ct_file_output(const ct_file_result *f, size_t i) {
    return f && i < f->n_outputs ? f->outputs[i] : "";
}

ct_provenance ct_file_provenance(const ct_file_result *f) {
    ct_provenance p;
    memset(&p, 0, sizeof p);
    if (!f) return p;
    p.model_id = f->model_id, p.model_revision = f->model_revision, p.model_format = "dense";
    p.device = f->device, p.dtype = f->dtype;
    p.decode_backend = f->rec.decode_backend;
    p.vad_engine = f->rec.vad_engine_actual;
    p.resumed_from_checkpoint = f->rec.resumed;
    p.fallback_alignment_segments = f->rec.fallback_alignment_segments;
    p.n_repetition_stopped = f->rec.n_repetition_stopped, p.repetition_stopped = f->rec.repetition_stopped;
    p.n_truncation_retried = f->rec.n_truncation_retried, p.truncation_retried = f->rec.truncation_retried;
    p.n_token_limit = f->rec.n_token_limit, p.token_limit = f->rec.token_limit;
    return p;
}
