/* profile_json.c — the --profile-json document (profile_json.h,
 * PRODUCT-DETAILS §2): the gem's keys in its order, from the pipeline's
 * measurements and the per-file records; fields the gem never records are
 * written as it writes them (null, 0 or 0.0).
 */
#include "output/profile_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/render.h"

static const char *k_timings[CT_PT_COUNT] = {
    "runtime_import_seconds", "serialization_wait_seconds", "input_validation_seconds", "decode_worker_seconds",
    "vad_worker_seconds", "vad_model_load_seconds", "vad_inference_seconds", "vad_postprocess_seconds",
    "preparation_wait_seconds", "asr_load_seconds", "asr_wall_seconds", "asr_feature_worker_seconds",
    "asr_discarded_feature_seconds", "asr_feature_wait_seconds", "asr_h2d_seconds",
    "asr_generation_call_wall_seconds", "asr_generate_device_seconds", "asr_generation_analysis_seconds",
    "asr_decode_seconds", "aligner_load_seconds", "emissions_seconds", "viterbi_seconds", "post_asr_seconds",
    "checkpoint_seconds", "progressive_output_seconds"};

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

json_t *ct_profile_quantiles(double *v, size_t n) {
    if (!n) return json_null();
    qsort(v, n, sizeof *v, dbl_cmp);
    static const double qs[3] = {0.50, 0.90, 0.99};
    static const char *names[3] = {"p50", "p90", "p99"};
    int ok = 1;
    json_t *o = json_object();
    ct_jset(o, "min", ct_jreal(v[0]), &ok);
    for (int i = 0; i < 3; i++) {
        double pos = (double)(n - 1) * qs[i];
        size_t f = (size_t)floor(pos), c = (size_t)ceil(pos);
        double val = v[f] + (v[c] - v[f]) * (pos - (double)f);
        ct_jset(o, names[i], ct_jreal(val), &ok);
    }
    ct_jset(o, "max", ct_jreal(v[n - 1]), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static const char *device_name(ct_device d) {
    return d == CT_DEVICE_CPU ? "cpu" : d == CT_DEVICE_CUDA ? "cuda" : d == CT_DEVICE_MPS ? "mps" : "auto";
}

static const char *precision_name(ct_precision p) {
    return p == CT_PRECISION_BF16 ? "bf16" : p == CT_PRECISION_FP16 ? "fp16" : p == CT_PRECISION_FP32 ? "fp32"
           : p == CT_PRECISION_INT8 ? "int8" : "auto";
}

static const char *backend_name(ct_audio_decoder d) {
    switch (d) {
    case CT_AUDIO_FFMPEG: return "ffmpeg";
    case CT_AUDIO_SNDFILE: return "sndfile";
    case CT_AUDIO_TORCHCODEC: return "torchcodec";
    case CT_AUDIO_LIBROSA: return "librosa";
    default: return "auto";
    }
}

static const char *existing_name(ct_existing e) {
    return e == CT_EXISTING_SKIP ? "skip" : e == CT_EXISTING_OVERWRITE ? "overwrite" : "error";
}

static json_t *opt_int(int v) { return v > 0 ? json_integer(v) : json_null(); }
static json_t *opt_real(double v) { return v > 0 ? ct_jreal(v) : json_null(); }

/* §2 items 6 and 7: every option in the gem's declaration order. */
static json_t *configuration(const ct_profile_input *in, int resolved, int *ok) {
    const ct_transcriber_options *o = in->options;
    const ct_output_context *ctx = in->ctx;
    json_t *c = json_object();
    const char *model = resolved ? ctx->model_id : in->model_requested ? in->model_requested : CT_DEFAULT_MODEL_ID;
    ct_jset(c, "model", ct_jstr_or_null(model), ok);
    ct_jset(c, "model_revision", ct_jstr_or_null(resolved ? ctx->model_revision : o->model_revision), ok);
    ct_jset(c, "adapter", ct_jstr_or_null(o->adapter), ok);
    ct_jset(c, "adapter_revision", ct_jstr_or_null(o->adapter_revision), ok);
    ct_jset(c, "language", ct_jstr_or_null(o->language), ok);
    ct_jset(c, "text_only", json_boolean(o->text_only), ok);
    ct_jset(c, "recursive", json_boolean(o->recursive), ok);
    ct_jset(c, "device", json_string(resolved && in->device ? in->device : device_name(o->device)), ok);
    ct_jset(c, "dtype", json_string(resolved && in->dtype ? in->dtype : precision_name(o->dtype)), ok);
    ct_jset(c, "audio_backend", json_string(backend_name(o->audio_backend)), ok);
    ct_jset(c, "audio_memory_gb", ct_jreal(o->audio_memory_gb), ok);
    ct_jset(c, "preprocess_workers", opt_int(o->preprocess_workers), ok);
    ct_jset(c, "pipeline_preparation", json_boolean(o->pipeline_preparation), ok);
    ct_jset(c, "vad", json_string(ct_vad_mode_name(o->vad)), ok);
    const char *engine = resolved && o->vad == CT_VAD_MODE_SILERO ? "onnx" : ct_vad_engine_name(o->vad_engine);
    ct_jset(c, "vad_engine", json_string(engine), ok);
    ct_jset(c, "vad_batch_size", json_integer(o->vad_batch_size), ok);
    ct_jset(c, "vad_block_frames", json_integer(o->vad_block_frames), ok);
    ct_jset(c, "vad_threads", opt_int(o->vad_threads), ok);
    ct_jset(c, "vad_merge", json_boolean(o->vad_merge), ok);
    ct_jset(c, "min_dur", ct_jreal(o->min_dur), ok);
    ct_jset(c, "max_dur", ct_jreal(o->max_dur), ok);
    ct_jset(c, "max_silence", ct_jreal(o->max_silence), ok);
    ct_jset(c, "energy_threshold", ct_jreal(o->energy_threshold), ok);
    ct_jset(c, "vad_threshold", ct_jreal(o->vad_threshold), ok);
    ct_jset(c, "min_silence_ms", json_integer(o->min_silence_ms), ok);
    ct_jset(c, "speech_pad_ms", json_integer(o->speech_pad_ms), ok);
    ct_jset(c, "batch_size", opt_int(o->batch_size), ok);
    ct_jset(c, "batch_max_size", opt_int(o->batch_max_size), ok);
    ct_jset(c, "batch_audio_seconds", opt_real(o->batch_audio_seconds), ok);
    ct_jset(c, "batch_vram_target", ct_jreal(o->batch_vram_target), ok);
    ct_jset(c, "adaptive_batch", json_boolean(o->adaptive_batch), ok);
    ct_jset(c, "pin_memory", json_boolean(resolved ? 0 : o->pin_memory), ok);
    ct_jset(c, "max_new_tokens", json_integer(o->max_new_tokens), ok);
    ct_jset(c, "max_retry_tokens", json_integer(o->max_retry_tokens), ok);
    ct_jset(c, "truncation_policy", json_string(o->truncation_policy == CT_TRUNCATION_WARN ? "warn" : "retry"), ok);
    ct_jset(c, "stop_repetition_loops", json_boolean(o->stop_repetition_loops), ok);
    if (o->benchmark_tokens_per_second > 0) /* ours; only when on, so the profile stays the original's otherwise */
        ct_jset(c, "benchmark_tokens_per_second", ct_jreal(o->benchmark_tokens_per_second), ok);
    ct_alignment al = resolved ? ct_timing_mode(o) : o->alignment;
    ct_jset(c, "alignment", json_string(ct_alignment_name(al)), ok);
    ct_jset(c, "align_batch_size", json_integer(o->align_batch_size), ok);
    ct_jset(c, "align_dtype", json_string(precision_name(o->align_dtype)), ok);
    ct_jset(c, "max_chars", json_integer(o->max_chars), ok);
    ct_jset(c, "max_cue_dur", ct_jreal(o->max_cue_dur), ok);
    ct_jset(c, "max_gap", ct_jreal(o->max_gap), ok);
    json_t *audio = json_array();
    for (size_t i = 0; i < in->n_audio; i++) ct_japp(audio, json_string(in->audio[i]), ok);
    ct_jset(c, "audio", audio, ok);
    json_t *formats = json_array();
    ct_format fl[CT_FORMAT_COUNT];
    int nf = ct_output_formats(o, fl);
    for (int i = 0; i < nf; i++) ct_japp(formats, json_string(ct_format_name(fl[i])), ok);
    ct_jset(c, "formats", formats, ok);
    ct_jset(c, "output_dir", ct_jstr_or_null(o->output_dir), ok);
    ct_jset(c, "existing", json_string(existing_name(o->existing)), ok);
    ct_jset(c, "profile_json", ct_jstr_or_null(o->profile_json), ok);
    ct_jset(c, "model_format", resolved ? json_string("dense") : json_null(), ok);
    ct_jset(c, "model_quantization", json_null(), ok);
    return c;
}

static json_t *models(const ct_profile_input *in, int *ok) {
    const ct_transcriber_options *o = in->options;
    const ct_output_context *ctx = in->ctx;
    const char *ver = ctx->package_version ? ctx->package_version : "";
    json_t *m = json_object();
    const char *id = ctx->model_id ? ctx->model_id : in->model_requested ? in->model_requested : CT_DEFAULT_MODEL_ID;
    ct_jset(m, "asr", ct_asr_model_json(id, ctx, ok), ok);
    if (o->vad == CT_VAD_MODE_SILERO) {
        json_t *v = json_object();
        ct_jset(v, "source", json_string("silero-vad"), ok);
        ct_jset(v, "source_version", json_string(CT_SILERO_SOURCE_VERSION), ok);
        ct_jset(v, "distribution", json_string("cohere-transcribe"), ok);
        ct_jset(v, "version", json_string(ver), ok);
        ct_jset(v, "torch_weight_asset", json_null(), ok);
        ct_jset(v, "onnx_weight_asset", json_string("cohere/transcribe/vad/silero_vad_v6.onnx"), ok);
        ct_jset(v, "packed_torch_implementation", json_null(), ok);
        ct_jset(m, "vad", v, ok);
    } else {
        ct_jset(m, "vad", json_null(), ok);
    }
    ct_jset(m, "aligner", ct_timing_mode(o) == CT_ALIGN_WORD ? ct_aligner_model_json(ver) : json_null(), ok);
    return m;
}

static json_t *environment(const ct_profile_input *in, int *ok) {
    json_t *e = json_object(), *pk = json_object();
    ct_jset(e, "python", json_null(), ok);
    ct_jset(e, "executable", ct_jstr_or_null(in->executable), ok);
    ct_jset(e, "platform", ct_jstr_or_null(in->platform), ok);
    ct_jset(e, "machine", ct_jstr_or_null(in->machine), ok);
    ct_jset(e, "processor", ct_jstr_or_null(in->processor), ok);
    ct_jset(e, "cpu_count", json_integer(in->cpu_count), ok);
    ct_jset(e, "device", ct_jstr_or_null(in->device), ok);
    ct_jset(e, "dtype", ct_jstr_or_null(in->dtype), ok);
    ct_jset(pk, "cohere-transcribe", json_string(in->ctx->package_version ? in->ctx->package_version : ""), ok);
    ct_jset(e, "packages", pk, ok);
    static const char *nulls[] = {"torch_cuda_build", "pytorch_alloc_conf", "pytorch_cuda_alloc_conf",
                                  "pytorch_effective_alloc_conf", "torch_intraop_threads", "torch_interop_threads"};
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++) ct_jset(e, nulls[i], json_null(), ok);
    if (in->device && !strcmp(in->device, "cuda")) {
        json_t *c = json_object();
        ct_jset(c, "device_index", json_null(), ok);
        ct_jset(c, "name", json_null(), ok);
        ct_jset(c, "compute_capability", json_null(), ok);
        ct_jset(c, "total_memory_gib", ct_jreal(in->cuda_total_gib), ok);
        ct_jset(c, "free_memory_at_profile_gib",
                ct_jreal(in->cuda_free_end_gib > 0 ? in->cuda_free_end_gib : in->cuda_free_start_gib), ok);
        ct_jset(c, "driver_visible_device_count", json_null(), ok);
        ct_jset(c, "cudnn_version", json_null(), ok);
        ct_jset(c, "allocator_backend", json_null(), ok);
        ct_jset(e, "cuda", c, ok);
    }
    return e;
}

/* Sorted unique strings as a JSON array. */
static json_t *unique_sorted(const char **v, size_t n, int *ok) {
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            const char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(v[i], v[i - 1]) != 0) ct_japp(a, json_string(v[i]), ok);
    return a;
}

static json_t *vad_section(const ct_profile_input *in, int *ok) {
    const ct_transcriber_options *o = in->options;
    json_t *v = json_object();
    const char **req = calloc(in->n_files + 1, sizeof *req), **act = calloc(in->n_files + 1, sizeof *act);
    size_t nr = 0, na = 0;
    if (!req || !act) *ok = 0;
    for (size_t i = 0; req && act && i < in->n_files; i++) {
        const ct_file_record *r = in->files[i].record;
        if (!r) continue;
        if (o->vad == CT_VAD_MODE_SILERO) req[nr++] = ct_vad_engine_name(o->vad_engine);
        if (r->vad_engine_actual) act[na++] = r->vad_engine_actual;
    }
    ct_jset(v, "requested_engines", unique_sorted(req, nr, ok), ok);
    ct_jset(v, "actual_engines", unique_sorted(act, na, ok), ok);
    free(req);
    free(act);
    ct_jset(v, "torch_device", in->prepared_groups > 0 ? json_string("cpu") : json_null(), ok);
    ct_jset(v, "torch_intraop_threads", opt_int(in->vad_intraop_threads), ok);
    ct_jset(v, "configured_file_batch_size", json_integer(o->vad_batch_size), ok);
    ct_jset(v, "configured_block_frames", json_integer(o->vad_block_frames), ok);
    ct_jset(v, "effective_block_frames", opt_int(in->effective_block_frames), ok);
    ct_jset(v, "prepared_groups", json_integer(in->prepared_groups), ok);
    ct_jset(v, "model_calls", json_integer(in->model_calls), ok);
    ct_jset(v, "valid_frames", json_integer(in->valid_frames), ok);
    ct_jset(v, "padded_frames", json_integer(in->padded_frames), ok);
    double ratio = in->padded_frames > 0 ? 1.0 - (double)in->valid_frames / (double)in->padded_frames : 0.0;
    ct_jset(v, "padding_ratio", ct_jreal(ratio), ok);
    ct_jset(v, "max_files_per_call", json_integer(in->model_calls > 0 ? 1 : 0), ok);
    return v;
}

static json_t *batch_entry(const ct_profile_batch *b, int *ok) {
    json_t *e = json_object();
    if (b->oom) {
        ct_jset(e, "event", json_string("oom"), ok);
        ct_jset(e, "segments", json_integer(b->segments), ok);
        ct_jset(e, "max_new_tokens", json_integer(b->max_new_tokens), ok);
        return e;
    }
    ct_jset(e, "segments", json_integer(b->segments), ok);
    ct_jset(e, "processor_rows", json_integer(b->processor_rows), ok);
    ct_jset(e, "max_new_tokens", json_integer(b->max_new_tokens), ok);
    ct_jset(e, "generated_tokens", json_integer(b->generated_tokens), ok);
    json_t *rows = json_array();
    for (size_t i = 0; i < b->n_rows; i++) ct_japp(rows, json_integer(b->tokens_by_row[i]), ok);
    ct_jset(e, "generated_tokens_by_row", rows, ok);
    ct_jset(e, "prepare_seconds", ct_jreal(b->prepare_seconds), ok);
    ct_jset(e, "h2d_seconds", ct_jreal(b->h2d_seconds), ok);
    ct_jset(e, "generation_call_wall_seconds", ct_jreal(b->generation_call_wall_seconds), ok);
    ct_jset(e, "generate_device_seconds", ct_jreal(b->generate_device_seconds), ok);
    ct_jset(e, "generation_analysis_seconds", ct_jreal(b->generation_analysis_seconds), ok);
    ct_jset(e, "padded_audio_seconds", ct_jreal(b->padded_audio_seconds), ok);
    ct_jset(e, "padding_ratio", ct_jreal(b->padding_ratio), ok);
    ct_jset(e, "peak_allocated_gib", json_null(), ok);
    ct_jset(e, "peak_reserved_gib", json_null(), ok);
    return e;
}

static json_t *durations(const ct_profile_input *in, int inferred_only, int *ok) {
    size_t n = 0;
    for (size_t i = 0; i < in->n_files; i++)
        if (in->files[i].record && !(inferred_only && in->files[i].record->resumed)) n += in->files[i].record->n_segments;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        *ok = 0;
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < in->n_files; i++) {
        const ct_file_record *r = in->files[i].record;
        if (!r || (inferred_only && r->resumed)) continue;
        for (size_t s = 0; s < r->n_segments; s++) v[k++] = fmax(r->segments[s].end - r->segments[s].start, 0.0);
    }
    json_t *q = ct_profile_quantiles(v, k);
    free(v);
    return q;
}

static json_t *asr_section(const ct_profile_input *in, int *ok) {
    json_t *a = json_object();
    int any = in->batches > 0;
    ct_jset(a, "batches", json_integer(in->batches), ok);
    ct_jset(a, "processor_rows", json_integer(in->processor_rows), ok);
    ct_jset(a, "generated_tokens", json_integer(in->generated_tokens), ok);
    ct_jset(a, "valid_feature_frames", json_null(), ok);
    ct_jset(a, "padded_feature_frames", json_null(), ok);
    ct_jset(a, "discarded_processor_rows", json_integer(0), ok);
    ct_jset(a, "discarded_valid_feature_frames", json_integer(0), ok);
    ct_jset(a, "discarded_padded_feature_frames", json_integer(0), ok);
    ct_jset(a, "padding_ratio", json_null(), ok);
    ct_jset(a, "effective_batch_min", any ? json_integer(in->effective_batch_min) : json_null(), ok);
    ct_jset(a, "effective_batch_max", any ? json_integer(in->effective_batch_max) : json_null(), ok);
    ct_jset(a, "final_batch_size", any ? json_integer(in->final_batch_size) : json_null(), ok);
    ct_jset(a, "final_batch_cap", any ? json_integer(in->final_batch_cap) : json_null(), ok);
    ct_jset(a, "oom_retries", json_integer(in->oom_retries), ok);
    ct_jset(a, "truncation_retries", json_integer(in->truncation_retries), ok);
    ct_jset(a, "discarded_feature_batches", json_integer(0), ok);
    ct_jset(a, "pin_memory_fallbacks", json_integer(0), ok);
    ct_jset(a, "all_segment_duration_seconds", durations(in, 0, ok), ok);
    ct_jset(a, "inferred_segment_duration_seconds", durations(in, 1, ok), ok);
    json_t *h = json_array();
    for (size_t i = 0; i < in->n_history; i++) ct_japp(h, batch_entry(&in->history[i], ok), ok);
    ct_jset(a, "batch_history", h, ok);
    ct_jset(a, "checkpoint_resumed_files", json_integer(in->checkpoint_resumed_files), ok);
    ct_jset(a, "checkpoint_written_files", json_integer(in->checkpoint_written_files), ok);
    return a;
}

static json_t *ints(const int *v, size_t n, int *ok) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) ct_japp(a, json_integer(v[i]), ok);
    return a;
}

static json_t *file_entry(const ct_profile_file *f, int *ok) {
    const ct_file_record *r = f->record;
    json_t *e = json_object();
    ct_jset(e, "path", ct_jstr_or_null(f->path), ok);
    ct_jset(e, "relative_path", ct_jstr_or_null(f->relative_path), ok);
    ct_jset(e, "duration_seconds", f->duration_known ? ct_jreal(f->duration) : json_null(), ok);
    double raw = 0, sel = 0;
    long long tokens = 0;
    for (size_t i = 0; r && i < r->n_speech_spans; i++) raw += fmax(0.0, r->speech_spans[i].end - r->speech_spans[i].start);
    for (size_t i = 0; r && i < r->n_segments; i++) {
        sel += fmax(0.0, r->segments[i].end - r->segments[i].start);
        if (r->segments[i].generated_tokens > 0) tokens += r->segments[i].generated_tokens;
    }
    ct_jset(e, "segment_count", json_integer(r ? (json_int_t)r->n_segments : 0), ok);
    ct_jset(e, "raw_speech_span_count", json_integer(r ? (json_int_t)r->n_speech_spans : 0), ok);
    ct_jset(e, "raw_speech_seconds", ct_jreal(raw), ok);
    ct_jset(e, "selected_audio_seconds", ct_jreal(sel), ok);
    ct_jset(e, "decode_backend", ct_jstr_or_null(r ? r->decode_backend : NULL), ok);
    ct_jset(e, "decode_fallback_reason", ct_jstr_or_null(r ? r->decode_fallback_reason : NULL), ok);
    ct_jset(e, "vad_engine", ct_jstr_or_null(r ? r->vad_engine_actual : NULL), ok);
    ct_jset(e, "vad_provider", ct_jstr_or_null(r ? r->vad_provider : NULL), ok);
    ct_jset(e, "vad_provider_options", ct_provider_options_json(r ? r->vad_provider : NULL), ok);
    ct_jset(e, "vad_fallback_reason", ct_jstr_or_null(r ? r->vad_fallback_reason : NULL), ok);
    ct_jset(e, "generated_tokens", json_integer(tokens), ok);
    ct_jset(e, "repetition_stopped_segments", ints(r ? r->repetition_stopped : NULL, r ? r->n_repetition_stopped : 0, ok), ok);
    ct_jset(e, "truncation_retried_segments", ints(r ? r->truncation_retried : NULL, r ? r->n_truncation_retried : 0, ok), ok);
    ct_jset(e, "token_limit_segments", ints(r ? r->token_limit : NULL, r ? r->n_token_limit : 0, ok), ok);
    ct_jset(e, "fallback_alignment_segments", json_integer(r ? r->fallback_alignment_segments : 0), ok);
    json_t *outs = json_array();
    for (size_t i = 0; i < f->n_outputs; i++) ct_japp(outs, json_string(f->outputs[i]), ok);
    ct_jset(e, "outputs", outs, ok);
    ct_jset(e, "resumed_from_asr_checkpoint", json_boolean(r && r->resumed), ok);
    ct_jset(e, "published", json_boolean(f->published), ok);
    ct_jset(e, "error", ct_jstr_or_null(f->error), ok);
    return e;
}

ct_status ct_profile_json_tree(const ct_profile_input *in, json_t **out) {
    *out = NULL;
    int ok = 1;
    json_t *d = json_object();
    ct_jset(d, "schema_version", json_integer(CT_PROFILE_SCHEMA_VERSION), &ok);
    ct_jset(d, "created_unix_seconds", ct_jreal(in->created_unix_seconds), &ok);
    ct_jset(d, "implementation", ct_implementation_json(in->ctx), &ok);
    ct_jset(d, "models", models(in, &ok), &ok);
    ct_jset(d, "environment", environment(in, &ok), &ok);
    ct_jset(d, "configuration", configuration(in, 0, &ok), &ok);
    ct_jset(d, "resolved_configuration", configuration(in, 1, &ok), &ok);
    int good = 0, bad = 0;
    double audio = 0;
    for (size_t i = 0; i < in->n_files; i++) {
        const ct_profile_file *f = &in->files[i];
        if (f->status == CT_FILE_FAILED) bad++;
        else good++;
        if (f->status == CT_FILE_COMPLETED && f->duration_known) audio += f->duration;
    }
    json_t *run = json_object();
    ct_jset(run, "elapsed_seconds", ct_jreal(in->elapsed_seconds), &ok);
    ct_jset(run, "successful_files", json_integer(good), &ok);
    ct_jset(run, "failed_files", json_integer(bad), &ok);
    ct_jset(run, "successful_audio_seconds", ct_jreal(audio), &ok);
    ct_jset(run, "real_time_factor_x", ct_jreal(in->elapsed_seconds > 0 ? audio / in->elapsed_seconds : 0.0), &ok);
    ct_jset(d, "run", run, &ok);
    json_t *t = json_object();
    for (int i = 0; i < CT_PT_COUNT; i++)
        ct_jset(t, k_timings[i], i == CT_PT_ASR_DECODE ? json_null() : ct_jreal(in->timings[i]), &ok);
    ct_jset(d, "timings", t, &ok);
    ct_jset(d, "vad", vad_section(in, &ok), &ok);
    ct_jset(d, "asr", asr_section(in, &ok), &ok);
    int cuda = in->device && !strcmp(in->device, "cuda");
    json_t *cm = json_object();
    ct_jset(cm, "total_gib", cuda ? ct_jreal(in->cuda_total_gib) : json_null(), &ok);
    ct_jset(cm, "free_start_gib", cuda ? ct_jreal(in->cuda_free_start_gib) : json_null(), &ok);
    ct_jset(cm, "free_end_gib", cuda ? ct_jreal(in->cuda_free_end_gib) : json_null(), &ok);
    ct_jset(cm, "peak_allocated_gib", json_null(), &ok);
    ct_jset(cm, "peak_reserved_gib", json_null(), &ok);
    ct_jset(d, "cuda_memory", cm, &ok);
    json_t *files = json_array();
    for (size_t i = 0; i < in->n_files; i++) ct_japp(files, file_entry(&in->files[i], &ok), &ok);
    ct_jset(d, "files", files, &ok);
    if (!ok) {
        json_decref(d);
        return ct_fail(CT_ERR_INVALID_ARG, "profile json: a value could not be stored (NaN or out of memory)");
    }
    *out = d;
    return CT_OK;
}

ct_status ct_profile_json(const ct_profile_input *in, ct_jbuf *out) {
    json_t *d;
    CT_TRY(ct_profile_json_tree(in, &d));
    ct_status st = ct_json_dump_pretty(d, out);
    json_decref(d);
    return st;
}
