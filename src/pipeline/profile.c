/* profile.c — the run profile of --profile-json (PRODUCT-DETAILS §2,
 * schema_version 9): models, environment, requested and resolved options,
 * run totals, stage timings, VAD and ASR telemetry with the per-call batch
 * history, and one entry per file. Written once after all files, through
 * the atomic writer; a failure is a run error, not a failed run. Fields the
 * original fills from torch or CUDA allocator state that this engine does not
 * have are null, as the gem writes them (docs/OUTPUTS.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/fs.h"
#include "output/json.h"
#include "output/render.h"
#include "output/state.h"
#include "output/transcript_json.h"
#include "pipeline/pipeline_internal.h"

static const char *choice(int v, const char *const *names, int n) { return v >= 0 && v < n ? names[v] : NULL; }

static const char *const DEVICES[] = {"auto", "cpu", "cuda", "mps"};
static const char *const DTYPES[] = {"auto", "bf16", "fp16", "fp32"};
static const char *const AUDIO[] = {"auto", "ffmpeg", "sndfile", "torchcodec", "librosa"};
static const char *const EXISTING[] = {"error", "overwrite", "skip"};
static const char *const TRUNC[] = {"retry", "warn"};

static json_t *int_or_null(int v) { return v > 0 ? json_integer(v) : json_null(); }
static json_t *real_or_null(double v) { return v > 0 ? ct_jreal(v) : json_null(); }

/* The options in the gem's declaration order (§2 item 6). resolved: device,
 * dtype, vad_engine, model identity and alignment as the run used them. */
static json_t *configuration(const ct_pipe *p, int resolved, int *ok) {
    const ct_transcriber_options *o = &p->t->o;
    json_t *c = json_object();
    ct_jset(c, "model", ct_jstr_or_null(resolved ? p->model_id : o->model ? o->model : CT_DEFAULT_MODEL), ok);
    ct_jset(c, "model_revision", ct_jstr_or_null(resolved ? p->model_revision : o->model_revision), ok);
    ct_jset(c, "adapter", ct_jstr_or_null(o->adapter), ok);
    ct_jset(c, "adapter_revision", ct_jstr_or_null(o->adapter_revision), ok);
    ct_jset(c, "language", json_string(o->language), ok);
    ct_jset(c, "text_only", json_boolean(o->text_only), ok);
    ct_jset(c, "recursive", json_boolean(o->recursive), ok);
    ct_jset(c, "device", json_string(resolved ? DEVICES[p->device] : choice(o->device, DEVICES, 4)), ok);
    ct_jset(c, "dtype", json_string(resolved ? ct_pipe_dtype_name(p->dtype) : choice(o->dtype, DTYPES, 4)), ok);
    ct_jset(c, "audio_backend", json_string(choice(o->audio_backend, AUDIO, 5)), ok);
    ct_jset(c, "audio_memory_gb", ct_jreal(o->audio_memory_gb), ok);
    ct_jset(c, "preprocess_workers", int_or_null(o->preprocess_workers), ok);
    ct_jset(c, "pipeline_preparation", json_boolean(o->pipeline_preparation), ok);
    ct_jset(c, "vad", json_string(ct_vad_mode_name(o->vad)), ok);
    ct_jset(c, "vad_engine",
            json_string(resolved && o->vad == CT_VAD_MODE_SILERO ? "onnx" : ct_vad_engine_name(o->vad_engine)), ok);
    ct_jset(c, "vad_batch_size", json_integer(o->vad_batch_size), ok);
    ct_jset(c, "vad_block_frames", json_integer(o->vad_block_frames), ok);
    ct_jset(c, "vad_threads", int_or_null(o->vad_threads), ok);
    ct_jset(c, "vad_merge", json_boolean(o->vad_merge), ok);
    ct_jset(c, "min_dur", ct_jreal(o->min_dur), ok);
    ct_jset(c, "max_dur", ct_jreal(o->max_dur), ok);
    ct_jset(c, "max_silence", ct_jreal(o->max_silence), ok);
    ct_jset(c, "energy_threshold", ct_jreal(o->energy_threshold), ok);
    ct_jset(c, "vad_threshold", ct_jreal(o->vad_threshold), ok);
    ct_jset(c, "min_silence_ms", json_integer(o->min_silence_ms), ok);
    ct_jset(c, "speech_pad_ms", json_integer(o->speech_pad_ms), ok);
    ct_jset(c, "batch_size", int_or_null(o->batch_size), ok);
    ct_jset(c, "batch_max_size", int_or_null(o->batch_max_size), ok);
    ct_jset(c, "batch_audio_seconds", real_or_null(o->batch_audio_seconds), ok);
    ct_jset(c, "batch_vram_target", ct_jreal(o->batch_vram_target), ok);
    ct_jset(c, "adaptive_batch", json_boolean(o->adaptive_batch), ok);
    ct_jset(c, "pin_memory", json_boolean(resolved ? 0 : o->pin_memory), ok);
    ct_jset(c, "max_new_tokens", json_integer(o->max_new_tokens), ok);
    ct_jset(c, "max_retry_tokens", json_integer(o->max_retry_tokens), ok);
    ct_jset(c, "truncation_policy", json_string(choice(o->truncation_policy, TRUNC, 2)), ok);
    ct_jset(c, "stop_repetition_loops", json_boolean(o->stop_repetition_loops), ok);
    ct_jset(c, "alignment", json_string(ct_alignment_name(resolved ? ct_timing_mode(o) : o->alignment)), ok);
    ct_jset(c, "align_batch_size", json_integer(o->align_batch_size), ok);
    ct_jset(c, "align_dtype", json_string(ct_pipe_dtype_name(o->align_dtype)), ok);
    ct_jset(c, "max_chars", json_integer(o->max_chars), ok);
    ct_jset(c, "max_cue_dur", ct_jreal(o->max_cue_dur), ok);
    ct_jset(c, "max_gap", ct_jreal(o->max_gap), ok);
    json_t *audio = json_array();
    for (size_t i = 0; i < p->run->n_files; i++) ct_japp(audio, json_string(p->run->files[i].path), ok);
    ct_jset(c, "audio", audio, ok);
    json_t *fmts = json_array();
    int n = 0;
    ct_format def[3] = {CT_FORMAT_TXT, CT_FORMAT_SRT, CT_FORMAT_VTT};
    const ct_format *f = o->formats;
    if (o->n_formats) n = o->n_formats;
    else f = def, n = ct_timing_mode(o) == CT_ALIGN_NONE ? 1 : 3;
    for (int i = 0; i < n; i++) ct_japp(fmts, json_string(ct_format_name(f[i])), ok);
    ct_jset(c, "formats", fmts, ok);
    ct_jset(c, "output_dir", ct_jstr_or_null(o->output_dir), ok);
    ct_jset(c, "existing", json_string(EXISTING[o->existing]), ok);
    ct_jset(c, "profile_json", ct_jstr_or_null(o->profile_json), ok);
    ct_jset(c, "model_format", resolved ? json_string("dense") : json_null(), ok);
    ct_jset(c, "model_quantization", json_null(), ok);
    return c;
}

static const char *cpu_name(char *buf, size_t cap) {
    buf[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return buf;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ') c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, cap, "%s", c);
            }
            break;
        }
    fclose(f);
    return buf;
}

static json_t *environment(const ct_pipe *p, int *ok) {
    json_t *e = json_object();
    struct utsname u;
    char plat[512] = "", cpu[256], exe[4096];
    if (uname(&u) == 0) snprintf(plat, sizeof plat, "%s-%s-%s", u.sysname, u.release, u.machine);
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = 0;
    ct_jset(e, "python", json_null(), ok);
    ct_jset(e, "executable", json_string(exe), ok);
    ct_jset(e, "platform", json_string(plat), ok);
    ct_jset(e, "machine", json_string(uname(&u) == 0 ? u.machine : ""), ok);
    ct_jset(e, "processor", json_string(cpu_name(cpu, sizeof cpu)), ok);
    ct_jset(e, "cpu_count", json_integer(sysconf(_SC_NPROCESSORS_ONLN)), ok);
    ct_jset(e, "device", json_string(p->device == CT_DEVICE_CUDA ? "cuda" : "cpu"), ok);
    ct_jset(e, "dtype", json_string(ct_pipe_dtype_name(p->dtype)), ok);
    json_t *pk = json_object();
    ct_jset(pk, "cohere-transcribe", json_string(ct_version()), ok);
    ct_jset(e, "packages", pk, ok);
    static const char *const nulls[] = {"torch_cuda_build", "pytorch_alloc_conf", "pytorch_cuda_alloc_conf",
                                        "pytorch_effective_alloc_conf", "torch_intraop_threads",
                                        "torch_interop_threads"};
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++) ct_jset(e, nulls[i], json_null(), ok);
    return e;
}

static json_t *timings(const ct_pipe *p, int *ok) {
    const ct_asr_run_stats *a = &p->asr_stats;
    struct { const char *k; double v; int null; } t[] = {
        {"runtime_import_seconds", 0, 0}, {"serialization_wait_seconds", 0, 0},
        {"input_validation_seconds", p->seconds_validation, 0}, {"decode_worker_seconds", p->seconds_decode, 0},
        {"vad_worker_seconds", p->seconds_vad, 0}, {"vad_model_load_seconds", 0, 0},
        {"vad_inference_seconds", p->seconds_vad, 0}, {"vad_postprocess_seconds", 0, 0},
        {"preparation_wait_seconds", p->seconds_prep_wait, 0}, {"asr_load_seconds", p->seconds_asr_load, 0},
        {"asr_wall_seconds", a->seconds, 0}, {"asr_feature_worker_seconds", a->seconds_mel, 0},
        {"asr_discarded_feature_seconds", 0, 0}, {"asr_feature_wait_seconds", 0, 0}, {"asr_h2d_seconds", 0, 0},
        {"asr_generation_call_wall_seconds", a->seconds, 0},
        {"asr_generate_device_seconds", a->seconds_encoder + a->seconds_decoder, 0},
        {"asr_generation_analysis_seconds", 0, 0}, {"asr_decode_seconds", 0, 1}, {"aligner_load_seconds", 0, 0},
        {"emissions_seconds", 0, 0}, {"viterbi_seconds", 0, 0}, {"post_asr_seconds", 0, 0},
        {"checkpoint_seconds", 0, 0}, {"progressive_output_seconds", p->seconds_publication, 0}};
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) ct_jset(o, t[i].k, t[i].null ? json_null() : ct_jreal(t[i].v), ok);
    return o;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* {min, p50, p90, p99, max}: linear interpolation at (n−1)·q; null when empty. */
static json_t *quantiles(double *v, size_t n, int *ok) {
    if (!n) return json_null();
    qsort(v, n, sizeof *v, cmp_double);
    json_t *o = json_object();
    const char *names[] = {"min", "p50", "p90", "p99", "max"};
    double qs[] = {0, 0.5, 0.9, 0.99, 1};
    for (int i = 0; i < 5; i++) {
        double pos = (double)(n - 1) * qs[i];
        size_t lo = (size_t)floor(pos), hi = (size_t)ceil(pos);
        double val = v[lo] + (v[hi] - v[lo]) * (pos - (double)lo);
        ct_jset(o, names[i], ct_jreal(val), ok);
    }
    return o;
}

static json_t *asr_section(const ct_pipe *p, int *ok) {
    const ct_asr_run_stats *a = &p->asr_stats;
    json_t *o = json_object();
    long long rows = 0;
    for (size_t i = 0; i < a->n_calls; i++) rows += a->calls[i].oom ? 0 : a->calls[i].rows;
    ct_jset(o, "batches", json_integer(a->batches), ok);
    ct_jset(o, "processor_rows", json_integer(rows), ok);
    ct_jset(o, "generated_tokens", json_integer(a->generated_tokens), ok);
    static const char *const nulls0[] = {"valid_feature_frames", "padded_feature_frames"};
    for (int i = 0; i < 2; i++) ct_jset(o, nulls0[i], json_null(), ok);
    ct_jset(o, "discarded_processor_rows", json_integer(0), ok);
    ct_jset(o, "discarded_valid_feature_frames", json_integer(0), ok);
    ct_jset(o, "discarded_padded_feature_frames", json_integer(0), ok);
    ct_jset(o, "padding_ratio", json_null(), ok);
    ct_jset(o, "effective_batch_min", json_integer(a->effective_batch_min), ok);
    ct_jset(o, "effective_batch_max", json_integer(a->effective_batch_max), ok);
    ct_jset(o, "final_batch_size", json_integer(p->batch_size), ok);
    ct_jset(o, "final_batch_cap", json_integer(a->final_cap ? a->final_cap : p->batch_size), ok);
    ct_jset(o, "oom_retries", json_integer(a->oom_retries), ok);
    ct_jset(o, "truncation_retries", json_integer(a->truncation_retries), ok);
    ct_jset(o, "discarded_feature_batches", json_integer(0), ok);
    ct_jset(o, "pin_memory_fallbacks", json_integer(0), ok);
    size_t n = 0, m = 0;
    for (size_t i = 0; i < p->run->n_files; i++) n += p->run->files[i].rec.n_segments;
    double *all = malloc(sizeof *all * (n ? n : 1)), *inf = malloc(sizeof *inf * (n ? n : 1));
    if (!all || !inf) {
        *ok = 0;
        free(all), free(inf);
        return o;
    }
    n = 0;
    for (size_t i = 0; i < p->run->n_files; i++) {
        const ct_file_record *r = &p->run->files[i].rec;
        for (size_t k = 0; k < r->n_segments; k++) {
            double d = r->segments[k].end - r->segments[k].start;
            all[n++] = d > 0 ? d : 0;
            if (!r->resumed) inf[m++] = d > 0 ? d : 0;
        }
    }
    ct_jset(o, "all_segment_duration_seconds", quantiles(all, n, ok), ok);
    ct_jset(o, "inferred_segment_duration_seconds", quantiles(inf, m, ok), ok);
    free(all), free(inf);
    json_t *h = json_array();
    for (size_t i = 0; i < a->n_calls; i++) {
        const ct_asr_call *c = &a->calls[i];
        json_t *e = json_object();
        if (c->oom) {
            ct_jset(e, "event", json_string("oom"), ok);
            ct_jset(e, "segments", json_integer(c->rows), ok);
            ct_jset(e, "max_new_tokens", json_integer(c->max_new_tokens), ok);
        } else {
            ct_jset(e, "segments", json_integer(c->rows), ok);
            ct_jset(e, "processor_rows", json_integer(c->rows), ok);
            ct_jset(e, "max_new_tokens", json_integer(c->max_new_tokens), ok);
            ct_jset(e, "generated_tokens", json_integer(c->generated_tokens), ok);
            ct_jset(e, "generated_tokens_by_row", json_null(), ok);
            ct_jset(e, "prepare_seconds", ct_jreal(0), ok);
            ct_jset(e, "h2d_seconds", ct_jreal(0), ok);
            ct_jset(e, "generation_call_wall_seconds", ct_jreal(c->seconds), ok);
            ct_jset(e, "generate_device_seconds", ct_jreal(c->seconds), ok);
            ct_jset(e, "generation_analysis_seconds", ct_jreal(0), ok);
            ct_jset(e, "padded_audio_seconds", ct_jreal(c->padded_audio_seconds), ok);
            ct_jset(e, "padding_ratio", json_null(), ok);
            ct_jset(e, "peak_allocated_gib", json_null(), ok);
            ct_jset(e, "peak_reserved_gib", json_null(), ok);
        }
        ct_japp(h, e, ok);
    }
    ct_jset(o, "batch_history", h, ok);
    int resumed = 0, written = 0;
    for (size_t i = 0; i < p->run->n_files; i++) {
        const ct_file_result *f = &p->run->files[i];
        resumed += f->rec.resumed;
        written += f->status == CT_FILE_COMPLETED && !f->rec.resumed;
    }
    ct_jset(o, "checkpoint_resumed_files", json_integer(resumed), ok);
    ct_jset(o, "checkpoint_written_files", json_integer(written), ok);
    return o;
}

static json_t *int_array(const int *v, size_t n, int *ok) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) ct_japp(a, json_integer(v[i]), ok);
    return a;
}

static json_t *file_entry(const ct_pipe *p, const ct_file_result *f, int *ok) {
    const ct_file_record *r = &f->rec;
    json_t *e = json_object();
    double raw = 0, sel = 0;
    long long tokens = 0;
    for (size_t i = 0; i < r->n_speech_spans; i++) raw += r->speech_spans[i].end - r->speech_spans[i].start;
    for (size_t i = 0; i < r->n_segments; i++) {
        double d = r->segments[i].end - r->segments[i].start;
        sel += d > 0 ? d : 0;
        tokens += r->segments[i].generated_tokens;
    }
    ct_jset(e, "path", json_string(f->path), ok);
    ct_jset(e, "relative_path", ct_jstr_or_null(f->relative), ok);
    ct_jset(e, "duration_seconds", ct_jreal(r->duration), ok);
    ct_jset(e, "segment_count", json_integer((json_int_t)r->n_segments), ok);
    ct_jset(e, "raw_speech_span_count", json_integer((json_int_t)r->n_speech_spans), ok);
    ct_jset(e, "raw_speech_seconds", ct_jreal(raw), ok);
    ct_jset(e, "selected_audio_seconds", ct_jreal(sel), ok);
    ct_jset(e, "decode_backend", ct_jstr_or_null(r->decode_backend), ok);
    ct_jset(e, "decode_fallback_reason", ct_jstr_or_null(r->decode_fallback_reason), ok);
    ct_jset(e, "vad_engine", ct_jstr_or_null(r->vad_engine_actual), ok);
    ct_jset(e, "vad_provider", ct_jstr_or_null(r->vad_provider), ok);
    ct_jset(e, "vad_provider_options", ct_provider_options_json(r->vad_provider), ok);
    ct_jset(e, "vad_fallback_reason", ct_jstr_or_null(r->vad_fallback_reason), ok);
    ct_jset(e, "generated_tokens", json_integer(tokens), ok);
    ct_jset(e, "repetition_stopped_segments", int_array(r->repetition_stopped, r->n_repetition_stopped, ok), ok);
    ct_jset(e, "truncation_retried_segments", int_array(r->truncation_retried, r->n_truncation_retried, ok), ok);
    ct_jset(e, "token_limit_segments", int_array(r->token_limit, r->n_token_limit, ok), ok);
    ct_jset(e, "fallback_alignment_segments", json_integer(r->fallback_alignment_segments), ok);
    json_t *outs = json_array();
    for (size_t i = 0; i < f->n_outputs; i++) ct_japp(outs, json_string(f->outputs[i]), ok);
    ct_jset(e, "outputs", outs, ok);
    ct_jset(e, "resumed_from_asr_checkpoint", json_boolean(r->resumed), ok);
    ct_jset(e, "published", json_boolean(f->status == CT_FILE_COMPLETED && p->t->o.publish), ok);
    ct_jset(e, "error", f->status == CT_FILE_FAILED && f->error && f->error[0] ? json_string(f->error) : json_null(), ok);
    return e;
}

static json_t *models(const ct_pipe *p, int *ok) {
    const ct_transcriber_options *o = &p->t->o;
    json_t *m = json_object(), *asr = json_object();
    ct_jset(asr, "id", json_string(p->model_id), ok);
    ct_jset(asr, "revision", ct_jstr_or_null(p->model_revision), ok);
    ct_jset(asr, "format", json_string("dense"), ok);
    ct_jset(asr, "quantization", json_null(), ok);
    ct_jset(asr, "adapter", json_null(), ok);
    ct_jset(m, "asr", asr, ok);
    if (o->vad == CT_VAD_MODE_SILERO) {
        json_t *v = json_object();
        ct_jset(v, "source", json_string("silero-vad"), ok);
        ct_jset(v, "source_version", json_string(CT_SILERO_SOURCE_VERSION), ok);
        ct_jset(v, "distribution", json_string("cohere-transcribe"), ok);
        ct_jset(v, "version", json_string(ct_version()), ok);
        ct_jset(v, "torch_weight_asset", json_null(), ok);
        ct_jset(v, "onnx_weight_asset", json_string("silero_vad.onnx"), ok);
        ct_jset(v, "packed_torch_implementation", json_null(), ok);
        ct_jset(m, "vad", v, ok);
    } else {
        ct_jset(m, "vad", json_null(), ok);
    }
    ct_jset(m, "aligner", json_null(), ok);
    return m;
}

ct_status ct_pipe_write_profile(ct_pipe *p) {
    int ok = 1;
    const ct_run *run = p->run;
    json_t *d = json_object();
    ct_jset(d, "schema_version", json_integer(9), &ok);
    ct_jset(d, "created_unix_seconds", ct_jreal(ct_unix_now()), &ok);
    ct_jset(d, "implementation", ct_pipe_implementation(p), &ok);
    ct_jset(d, "models", models(p, &ok), &ok);
    ct_jset(d, "environment", environment(p, &ok), &ok);
    ct_jset(d, "configuration", configuration(p, 0, &ok), &ok);
    ct_jset(d, "resolved_configuration", configuration(p, 1, &ok), &ok);
    json_t *r = json_object();
    double succ = 0;
    int okf = 0, bad = 0;
    for (size_t i = 0; i < run->n_files; i++) {
        const ct_file_result *f = &run->files[i];
        if (f->status == CT_FILE_FAILED) bad++;
        else okf++;
        if (f->status == CT_FILE_COMPLETED) succ += f->rec.duration;
    }
    ct_jset(r, "elapsed_seconds", ct_jreal(run->st.elapsed_seconds), &ok);
    ct_jset(r, "successful_files", json_integer(okf), &ok);
    ct_jset(r, "failed_files", json_integer(bad), &ok);
    ct_jset(r, "successful_audio_seconds", ct_jreal(succ), &ok);
    ct_jset(r, "real_time_factor_x", ct_jreal(run->st.elapsed_seconds > 0 ? succ / run->st.elapsed_seconds : 0.0),
            &ok);
    ct_jset(d, "run", r, &ok);
    ct_jset(d, "timings", timings(p, &ok), &ok);
    json_t *v = json_object();
    int silero = p->t->o.vad == CT_VAD_MODE_SILERO;
    json_t *req = json_array(), *act = json_array();
    ct_japp(req, json_string(ct_vad_engine_name(p->t->o.vad_engine)), &ok);
    ct_japp(act, json_string(silero ? "onnx" : p->t->o.vad == CT_VAD_MODE_AUDITOK ? "auditok" : "none (fixed windows)"),
            &ok);
    ct_jset(v, "requested_engines", req, &ok);
    ct_jset(v, "actual_engines", act, &ok);
    ct_jset(v, "torch_device", silero ? json_string("cpu") : json_null(), &ok);
    ct_jset(v, "torch_intraop_threads", json_null(), &ok);
    ct_jset(v, "configured_file_batch_size", json_integer(p->t->o.vad_batch_size), &ok);
    ct_jset(v, "configured_block_frames", json_integer(p->t->o.vad_block_frames), &ok);
    ct_jset(v, "effective_block_frames", silero ? json_integer(512) : json_null(), &ok);
    ct_jset(v, "prepared_groups", json_integer(p->vad_files), &ok);
    ct_jset(v, "model_calls", json_integer(p->vad_files), &ok);
    ct_jset(v, "valid_frames", json_integer(p->vad_frames), &ok);
    ct_jset(v, "padded_frames", json_integer(p->vad_frames), &ok);
    ct_jset(v, "padding_ratio", ct_jreal(0.0), &ok);
    ct_jset(v, "max_files_per_call", json_integer(p->vad_files ? 1 : 0), &ok);
    ct_jset(d, "vad", v, &ok);
    ct_jset(d, "asr", asr_section(p, &ok), &ok);
    json_t *cm = json_object();
    static const char *const cmk[] = {"total_gib", "free_start_gib", "free_end_gib", "peak_allocated_gib",
                                      "peak_reserved_gib"};
    for (int i = 0; i < 5; i++) ct_jset(cm, cmk[i], json_null(), &ok);
    ct_jset(d, "cuda_memory", cm, &ok);
    json_t *files = json_array();
    for (size_t i = 0; i < run->n_files; i++) ct_japp(files, file_entry(p, &run->files[i], &ok), &ok);
    ct_jset(d, "files", files, &ok);
    ct_status s = ok ? CT_OK : ct_fail(CT_ERR_OOM, "profile");
    ct_jbuf b = {0};
    if (s == CT_OK) s = ct_json_dump_pretty(d, &b);
    json_decref(d);
    if (s == CT_OK) {
        const char *path = ct_pipe_profile_path(p);
        s = ct_fs_write_atomic(path, b.data, b.len);
        if (s != CT_OK) ct_fail_wrap(s, "Cannot write %s", path);
    }
    ct_jbuf_free(&b);
    return s;
}
