/* state_contract.c — the ASR and render contract keys (state.h,
 * PRODUCT-DETAILS §3.6) and this build's implementation fingerprint: the
 * same documents as the original, fingerprinting our artifacts instead of
 * its source files (docs/OUTPUTS.md says why).
 */
#include "output/state.h"

#include <stdlib.h>
#include <string.h>

#include "output/render.h"

ct_status ct_implementation_fingerprint(const char *package_version, const ct_artifacts *a, char hex[65]) {
    ct_output_context ctx = {.package_version = package_version, .artifacts = a};
    json_t *impl = ct_implementation_json(&ctx);
    if (!impl) return ct_fail(CT_ERR_OOM, "contract: out of memory");
    ct_status st = ct_json_fingerprint(impl, hex);
    json_decref(impl);
    return st;
}

static const char *audio_backend_name(ct_audio_decoder d) {
    /* Resolved: torchcodec is ffmpeg and librosa is auto, as in the original. */
    switch (d) {
    case CT_AUDIO_FFMPEG:
    case CT_AUDIO_TORCHCODEC: return "ffmpeg";
    case CT_AUDIO_SNDFILE: return "sndfile";
    default: return "auto";
    }
}

static const char *precision_name(ct_precision p) {
    switch (p) {
    case CT_PRECISION_BF16: return "bf16";
    case CT_PRECISION_FP16: return "fp16";
    case CT_PRECISION_FP32: return "fp32";
    case CT_PRECISION_INT8: return "int8";
    default: return "auto";
    }
}

static json_t *opt_int(int v, int cond) { return cond ? json_integer(v) : json_null(); }
static json_t *opt_real(double v, int cond) { return cond ? ct_jreal(v) : json_null(); }

ct_status ct_asr_contract_json(const ct_transcriber_options *o, const ct_contract_inputs *in, json_t **out) {
    *out = NULL;
    int ok = 1;
    int silero = o->vad == CT_VAD_MODE_SILERO, auditok = o->vad == CT_VAD_MODE_AUDITOK;
    json_t *c = json_object();
    ct_jset(c, "language", ct_jstr_or_null(o->language), &ok);
    ct_jset(c, "device", ct_jstr_or_null(in->device), &ok);
    ct_jset(c, "dtype", ct_jstr_or_null(in->dtype), &ok);
    ct_jset(c, "audio_backend", json_string(audio_backend_name(o->audio_backend)), &ok);
    ct_jset(c, "vad", json_string(ct_vad_mode_name(o->vad)), &ok);
    ct_jset(c, "vad_engine", silero ? json_string(ct_vad_engine_name(o->vad_engine)) : json_null(), &ok);
    ct_jset(c, "vad_batch_size", opt_int(o->vad_batch_size, silero), &ok);
    ct_jset(c, "vad_block_frames", opt_int(o->vad_block_frames, silero), &ok);
    ct_jset(c, "vad_threads", opt_int(o->vad_threads, silero && o->vad_threads > 0), &ok);
    ct_jset(c, "vad_merge", silero ? json_boolean(o->vad_merge) : json_null(), &ok);
    ct_jset(c, "min_dur", opt_real(o->min_dur, o->vad != CT_VAD_MODE_NONE), &ok);
    ct_jset(c, "max_dur", ct_jreal(o->max_dur), &ok);
    ct_jset(c, "max_silence", opt_real(o->max_silence, auditok), &ok);
    ct_jset(c, "energy_threshold", opt_real(o->energy_threshold, auditok), &ok);
    ct_jset(c, "vad_threshold", opt_real(o->vad_threshold, silero), &ok);
    ct_jset(c, "min_silence_ms", opt_int(o->min_silence_ms, silero), &ok);
    ct_jset(c, "speech_pad_ms", opt_int(o->speech_pad_ms, silero), &ok);
    ct_jset(c, "batch_size", opt_int(in->batch_size, in->batch_size > 0), &ok);
    ct_jset(c, "batch_max_size", opt_int(o->batch_max_size, o->batch_max_size > 0), &ok);
    ct_jset(c, "batch_audio_seconds", opt_real(o->batch_audio_seconds, o->batch_audio_seconds > 0), &ok);
    ct_jset(c, "batch_vram_target", ct_jreal(o->batch_vram_target), &ok);
    ct_jset(c, "adaptive_batch", json_boolean(o->adaptive_batch), &ok);
    ct_jset(c, "pin_memory", json_false(), &ok); /* always false after resolution */
    ct_jset(c, "audio_memory_gb", ct_jreal(o->audio_memory_gb), &ok);
    ct_jset(c, "pipeline_preparation", json_boolean(o->pipeline_preparation), &ok);
    ct_jset(c, "max_new_tokens", json_integer(o->max_new_tokens), &ok);
    ct_jset(c, "max_retry_tokens", json_integer(o->max_retry_tokens), &ok);
    ct_jset(c, "truncation_policy", json_string(o->truncation_policy == CT_TRUNCATION_WARN ? "warn" : "retry"),
            &ok);
    ct_jset(c, "stop_repetition_loops", json_boolean(o->stop_repetition_loops), &ok);
    /* Our addition: the prompt's punctuation flag changes the text. */
    ct_jset(c, "punctuation", json_boolean(o->punctuation), &ok);
    /* Benchmark mode's outputs must never pass for a real run's (a later
     * run without it re-transcribes them): the key exists only when it is on,
     * so every other contract stays the original's. */
    if (o->benchmark_tokens_per_second > 0)
        ct_jset(c, "benchmark_tokens_per_second", ct_jreal(o->benchmark_tokens_per_second), &ok);

    json_t *asr = json_object();
    ct_jset(asr, "id", ct_jstr_or_null(in->model_id), &ok);
    ct_jset(asr, "revision", ct_jstr_or_null(in->model_revision), &ok);
    ct_jset(asr, "format", json_string("dense"), &ok);
    ct_jset(asr, "quantization", json_null(), &ok);
    if (in->adapter_id) {
        json_t *ad = json_object();
        ct_jset(ad, "id", json_string(in->adapter_id), &ok);
        ct_jset(ad, "revision", ct_jstr_or_null(in->adapter_revision), &ok);
        ct_jset(asr, "adapter", ad, &ok);
    } else {
        ct_jset(asr, "adapter", json_null(), &ok);
    }
    json_t *models = json_object();
    ct_jset(models, "asr", asr, &ok);
    ct_jset(models, "silero_version", json_string(CT_SILERO_SOURCE_VERSION), &ok);

    json_t *doc = json_object();
    ct_jset(doc, "contract_schema_version", json_integer(CT_CONTRACT_SCHEMA_VERSION), &ok);
    ct_jset(doc, "configuration", c, &ok);
    ct_jset(doc, "models", models, &ok);
    ct_jset(doc, "implementation_sha256", ct_jstr_or_null(in->implementation_sha256), &ok);
    if (!ok) {
        json_decref(doc);
        return ct_fail(CT_ERR_INVALID_ARG, "ASR contract: a value could not be stored (NaN or out of memory)");
    }
    *out = doc;
    return CT_OK;
}

static int fmt_cmp(const void *a, const void *b) {
    return strcmp(ct_format_name(*(const ct_format *)a), ct_format_name(*(const ct_format *)b));
}

ct_status ct_render_contract_json(const ct_transcriber_options *o, const ct_contract_inputs *in, json_t **out) {
    *out = NULL;
    int ok = 1;
    ct_alignment timing = ct_timing_mode(o);
    json_t *c = json_object();
    ct_jset(c, "alignment", json_string(ct_alignment_name(timing)), &ok);
    ct_jset(c, "align_batch_size", json_integer(o->align_batch_size), &ok);
    ct_jset(c, "align_dtype", json_string(precision_name(o->align_dtype)), &ok);
    /* The requested formats, sorted, duplicates kept out. */
    ct_format f[CT_FORMAT_COUNT];
    int n = ct_output_formats(o, f);
    qsort(f, (size_t)n, sizeof f[0], fmt_cmp);
    json_t *fa = json_array();
    for (int i = 0; i < n; i++) ct_japp(fa, json_string(ct_format_name(f[i])), &ok);
    ct_jset(c, "formats", fa, &ok);
    ct_jset(c, "max_chars", json_integer(o->max_chars), &ok);
    ct_jset(c, "max_cue_dur", ct_jreal(o->max_cue_dur), &ok);
    ct_jset(c, "max_gap", ct_jreal(o->max_gap), &ok);
    json_t *models = json_object();
    ct_jset(models, "align_revision", timing == CT_ALIGN_WORD ? json_string(CT_ALIGN_MODEL_REVISION) : json_null(),
            &ok);
    json_t *doc = json_object();
    ct_jset(doc, "contract_schema_version", json_integer(CT_CONTRACT_SCHEMA_VERSION), &ok);
    ct_jset(doc, "configuration", c, &ok);
    ct_jset(doc, "models", models, &ok);
    ct_jset(doc, "output_schema_version", json_integer(CT_OUTPUT_SCHEMA_VERSION), &ok);
    ct_jset(doc, "implementation_sha256", ct_jstr_or_null(in->implementation_sha256), &ok);
    if (!ok) {
        json_decref(doc);
        return ct_fail(CT_ERR_INVALID_ARG, "render contract: a value could not be stored (NaN or out of memory)");
    }
    *out = doc;
    return CT_OK;
}

ct_status ct_asr_contract_key(const ct_transcriber_options *o, const ct_contract_inputs *in, char hex[65]) {
    json_t *d;
    CT_TRY(ct_asr_contract_json(o, in, &d));
    ct_status st = ct_json_fingerprint(d, hex);
    json_decref(d);
    return st;
}

ct_status ct_render_contract_key(const ct_transcriber_options *o, const ct_contract_inputs *in, char hex[65]) {
    json_t *d;
    CT_TRY(ct_render_contract_json(o, in, &d));
    ct_status st = ct_json_fingerprint(d, hex);
    json_decref(d);
    return st;
}
