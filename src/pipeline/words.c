/* words.c — the word-timing step of a run (--alignment word): the CTC
 * aligner's session (loaded once, beside the ASR model), one file's
 * alignment over its ASR segments, and a resumed file's re-decode for it.
 * transcriber.c calls these when a file is finished or resumed. */
#include <stdlib.h>

#include "align/align.h"
#include "audio/audio.h"
#include "compute/cpu/cpu_state.h"
#include "core/fs.h"
#include "core/trace.h"
#include "pipeline/options.h"
#include "pipeline/pipeline_internal.h"

/* The aligner's matrices: --align-dtype fp32 (the original's default) and
 * fp16 (CUDA only; the aligner runs on the CPU, in float32) keep float32;
 * bf16 asks for bf16 matrices and bf16 attention products; auto picks bf16
 * where the CPU multiplies bf16 natively (ct_cpu_auto_dtype), else fp32
 * (docs/PERFORMANCE.md, "Word aligner on CPU in bf16"). */
static ct_dtype aligner_weight_dtype(ct_precision p) {
    const char *why;
    if (p == CT_PRECISION_BF16) return CT_DTYPE_BF16;
    if (p == CT_PRECISION_AUTO) return ct_cpu_auto_dtype(&why) == CT_DTYPE_BF16 ? CT_DTYPE_BF16 : CT_DTYPE_F32;
    return CT_DTYPE_F32;
}

/* The CTC aligner runs where the ASR model runs: on the CPU backend, or on
 * the cuda backend (its own context and stream on the same device) with
 * bf16 activations and weights, f16 for --align-dtype fp16 (fp32 and auto
 * compute in bf16 there too: docs/USAGE.md). It is resolved like the ASR
 * model, through the Hub client and cache. */
ct_status ct_pipe_aligner_open(ct_pipe *p) {
    ct_transcriber *t = p->t;
    if (t->aligner) return CT_OK;
    double t0 = ct_now();
    CT_TRY(ct_aligner_resolve_ref(t->o.aligner_model, t->o.aligner_revision, NULL, &t->aligner_ref));
    ct_backend_options bo = ct_backend_default_options();
    bo.threads = t->o.threads;
    ct_w2v2_options wo = ct_w2v2_default_options();
    if (p->device == CT_DEVICE_CUDA) {
        bo.device_index = t->o.device_index;
        bo.act_dtype = t->o.align_dtype == CT_PRECISION_FP16 ? CT_DTYPE_F16 : CT_DTYPE_BF16;
        CT_TRY(ct_backend_create("cuda", &bo, &t->align_be));
        wo.weight_dtype = bo.act_dtype;
    } else {
        CT_TRY(ct_backend_create("cpu", &bo, &t->align_be));
        wo.weight_dtype = aligner_weight_dtype(t->o.align_dtype);
    }
    ct_status s = ct_aligner_open(t->aligner_ref.dir, t->align_be, &wo, &t->aligner);
    if (s != CT_OK) return ct_fail_wrap(s, "word aligner %s", t->aligner_ref.id);
    p->seconds_aligner_load += ct_now() - t0;
    ct_trace_span("load aligner", t0, ct_now(), NULL, NULL);
    return CT_OK;
}

/* Word timings of one decoded file (PRODUCT-DETAILS §9): CTC over the whole
 * file's emissions, uniform fallback per segment that cannot be aligned. */
static int record_has_text(const ct_file_record *r) {
    for (size_t i = 0; i < r->n_segments; i++)
        if (r->segments[i].text[0]) return 1;
    return 0;
}

ct_status ct_pipe_align_file(ct_pipe *p, size_t fi, const float *pcm, size_t n_samples) {
    ct_file_record *r = &p->run->files[fi].rec;
    if (!record_has_text(r) || !n_samples) return CT_OK; /* no text: no words, no emissions */
    CT_TRY(ct_pipe_aligner_open(p));
    ct_align_segment *segs = calloc(r->n_segments, sizeof *segs);
    if (!segs) return ct_fail(CT_ERR_OOM, "alignment");
    for (size_t i = 0; i < r->n_segments; i++)
        segs[i] = (ct_align_segment){r->segments[i].start, r->segments[i].end, r->segments[i].text};
    ct_pipe_progress(p, CT_PROGRESS_ALIGNMENT, NULL, p->run->files[fi].path, 0, (long long)r->n_segments);
    ct_align_options ao = ct_align_default_options();
    ao.batch_size = p->t->o.align_batch_size;
    ao.language = p->t->o.language;
    double t0 = ct_now();
    ct_rec_word *words = NULL;
    size_t nw = 0;
    int fallback = 0;
    ct_status s = ct_align_file(p->t->aligner, pcm, n_samples, segs, r->n_segments, &ao, &words, &nw, &fallback);
    p->seconds_alignment += ct_now() - t0;
    ct_trace_span("align", t0, ct_now(), ct_trace_file(p->run->files[fi].path), "\"segments\":%zu,\"words\":%zu",
                  r->n_segments, nw);
    free(segs);
    if (s != CT_OK) return s;
    for (size_t i = 0; i < r->n_words; i++) free(r->words[i].text);
    free(r->words);
    r->words = words, r->n_words = nw;
    r->fallback_alignment_segments = fallback;
    ct_pipe_progress(p, CT_PROGRESS_ALIGNMENT, NULL, p->run->files[fi].path, (long long)r->n_segments,
                     (long long)r->n_segments);
    return CT_OK;
}

/* The audio of a resumed file, for its alignment: decoded again with the
 * backend its checkpoint records, and exactly as long as the ASR saw it
 * (§3.5: the original's reload_audio_for_alignment; its messages). */
static ct_status redecode(ct_pipe *p, size_t fi, ct_audio **out) {
    const ct_file_result *f = &p->run->files[fi];
    const ct_file_record *r = &f->rec;
    ct_audio_options ao = ct_audio_default_options();
    if (!r->decode_backend || ct_audio_backend_parse(r->decode_backend, &ao.backend) != CT_OK ||
        ao.backend == CT_AUDIO_BACKEND_AUTO)
        return ct_fail(CT_ERR_FORMAT, "Cannot re-decode %s for word alignment without a concrete ASR backend",
                       f->path);
    ao.memory_cap_bytes = ct_pipe_memory_cap(&p->t->o);
    ao.cancel_flag = &p->t->cancel;
    double t0 = ct_now();
    ct_status s = ct_audio_decode(f->path, &ao, out);
    p->seconds_decode += ct_now() - t0;
    if (s != CT_OK) return s;
    const int64_t want = ct_round_half_even(r->duration * 16000.0);
    if ((int64_t)(*out)->n != want) {
        s = ct_fail(CT_ERR_FORMAT, "Decoded sample count changed between ASR and alignment for %s: %zu != %lld",
                    f->path, (*out)->n, (long long)want);
        ct_audio_free(*out);
        *out = NULL;
    }
    return s;
}

ct_status ct_pipe_resume_file(ct_pipe *p, size_t fi) {
    if (ct_options_alignment(&p->t->o) == CT_ALIGN_WORD && record_has_text(&p->run->files[fi].rec)) {
        /* the aligner first: one that cannot be loaded fails the run, as in ct_pipe_process */
        CT_TRY(ct_pipe_aligner_open(p));
        ct_audio *a = NULL;
        ct_status s = redecode(p, fi, &a);
        if (s == CT_OK) s = ct_pipe_align_file(p, fi, a->samples, a->n);
        ct_audio_free(a);
        if (s != CT_OK) {
            ct_pipe_fail_file(p, fi, s, ct_last_error());
            return s == CT_ERR_ABORTED ? s : CT_OK;
        }
    }
    return ct_pipe_finish_file(p, fi);
}
