/* options.c — ct_transcriber_default_options and ct_transcriber_options_check:
 * every configuration rule of the original (PRODUCT-DETAILS §10.5) in the
 * gem's check order, each message written once and naming options as flags
 * (--max-dur) or as fields (max_dur) per o->cli_option_names; plus the
 * effective values the pipeline derives from the options (options.h). Checks
 * that need a device or a model happen later, in the pipeline. */
#include "pipeline/options.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/resolve.h"

ct_transcriber_options ct_transcriber_default_options(void) {
    ct_transcriber_options o;
    memset(&o, 0, sizeof o);
    o.model = NULL; /* the pinned default model */
    o.language = "ar";
    o.punctuation = 1;
    o.publish = 1;
    o.recursive = 1;
    o.existing = CT_EXISTING_ERROR;
    o.device = CT_DEVICE_AUTO;
    o.dtype = CT_PRECISION_AUTO;
    o.audio_backend = CT_AUDIO_AUTO;
    o.audio_memory_gb = 4.0;
    o.cpu_wait = CT_CPU_WAIT_AUTO;
    o.pipeline_preparation = 1;
    o.vad = CT_VAD_MODE_SILERO;
    o.vad_engine = CT_VAD_ENGINE_AUTO;
    o.vad_batch_size = 16;
    o.vad_block_frames = 512;
    o.min_dur = 0.5;
    o.max_dur = 30.0;
    o.max_silence = 0.6;
    o.energy_threshold = 50.0;
    o.vad_threshold = 0.5;
    o.min_silence_ms = 300;
    o.speech_pad_ms = 60;
    o.batch_vram_target = 0.9;
    o.max_new_tokens = 445;
    o.max_retry_tokens = 896;
    o.truncation_policy = CT_TRUNCATION_RETRY;
    o.stop_repetition_loops = 1;
    o.alignment = CT_ALIGN_SEGMENT;
    o.align_batch_size = 4;
    o.align_dtype = CT_PRECISION_FP32;
    o.max_chars = 80;
    o.max_cue_dur = 6.0;
    o.max_gap = 0.6;
    return o;
}

/* ---- names ------------------------------------------------------------------ */

const char *ct_options_name(const ct_transcriber_options *o, const char *field, char *buf) {
    if (!o->cli_option_names) {
        snprintf(buf, 64, "%s", field);
        return buf;
    }
    size_t n = 0;
    buf[n++] = '-';
    buf[n++] = '-';
    for (const char *p = field; *p && n + 1 < 64; p++) buf[n++] = *p == '_' ? '-' : *p;
    buf[n] = '\0';
    return buf;
}

const char *ct_options_name_value(const ct_transcriber_options *o, const char *field,
                                  const char *value, char *buf) {
    char name[64];
    snprintf(buf, 96, "%s%s%s", ct_options_name(o, field, name), o->cli_option_names ? " " : "=",
             value);
    return buf;
}

/* Compound-literal buffers live to the end of the enclosing block, which is
 * the return statement that formats the message. */
#define N(field) ct_options_name(o, field, (char[64]){0})
#define NV(field, value) ct_options_name_value(o, field, value, (char[96]){0})

#define ENUM_NAME(fn, type, ...)                                            \
    const char *fn(type v) {                                                \
        static const char *const names[] = {__VA_ARGS__};                   \
        return (int)v >= 0 && (size_t)v < sizeof names / sizeof *names ? names[v] : "?"; \
    }
ENUM_NAME(ct_opt_device_name, ct_device, "auto", "cpu", "cuda", "mps")
ENUM_NAME(ct_opt_precision_name, ct_precision, "auto", "bf16", "fp16", "fp32", "int8")
ENUM_NAME(ct_opt_vad_name, ct_vad_policy, "silero", "auditok", "none")
ENUM_NAME(ct_opt_vad_engine_name, ct_vad_engine, "auto", "torch", "onnx", "jit")
ENUM_NAME(ct_opt_audio_backend_name, ct_audio_decoder, "auto", "ffmpeg", "sndfile", "torchcodec", "librosa")
ENUM_NAME(ct_opt_existing_name, ct_existing, "error", "overwrite", "skip")
ENUM_NAME(ct_opt_alignment_name, ct_alignment, "segment", "word", "none")
ENUM_NAME(ct_opt_truncation_name, ct_truncation, "retry", "warn")
ENUM_NAME(ct_opt_format_name, ct_format, "txt", "srt", "vtt", "json")

/* ---- effective values --------------------------------------------------------- */

int ct_options_text_mode(const ct_transcriber_options *o) {
    return o->text_only || o->alignment == CT_ALIGN_NONE;
}

ct_alignment ct_options_alignment(const ct_transcriber_options *o) {
    return o->text_only ? CT_ALIGN_NONE : o->alignment;
}

int ct_options_formats(const ct_transcriber_options *o, ct_format out[CT_FORMAT_COUNT]) {
    if (o->n_formats <= 0) {
        out[0] = CT_FORMAT_TXT;
        if (ct_options_text_mode(o)) return 1;
        out[1] = CT_FORMAT_SRT;
        out[2] = CT_FORMAT_VTT;
        return 3;
    }
    int n = 0;
    for (int i = 0; i < o->n_formats && i < CT_FORMAT_COUNT; i++) {
        int dup = 0;
        for (int j = 0; j < n; j++) dup |= out[j] == o->formats[i];
        if (!dup) out[n++] = o->formats[i];
    }
    return n;
}

int ct_options_batch_size(const ct_transcriber_options *o, ct_device resolved) {
    if (o->batch_size > 0) return o->batch_size;
    return resolved == CT_DEVICE_CUDA ? 24 : 4;
}

ct_precision ct_options_dtype(const ct_transcriber_options *o, ct_device resolved, int cuda_bf16) {
    if (o->dtype != CT_PRECISION_AUTO) return o->dtype;
    if (resolved == CT_DEVICE_CUDA) return cuda_bf16 ? CT_PRECISION_BF16 : CT_PRECISION_FP16;
    return CT_PRECISION_FP32;
}

ct_status ct_options_check_device(const ct_transcriber_options *o, ct_device resolved, int cuda_bf16) {
    if (ct_options_alignment(o) == CT_ALIGN_WORD && o->align_dtype == CT_PRECISION_FP16 &&
        resolved != CT_DEVICE_CUDA)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s is supported only with CUDA", NV("align_dtype", "fp16"));
    if (resolved == CT_DEVICE_CUDA && o->dtype == CT_PRECISION_INT8)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s runs on the CPU only; use %s", NV("dtype", "int8"),
                       NV("device", "cpu"));
    if (resolved == CT_DEVICE_CUDA && o->dtype == CT_PRECISION_BF16 && !cuda_bf16)
        return ct_fail(CT_ERR_UNSUPPORTED, "This CUDA device does not support BF16; use %s",
                       NV("dtype", "fp16"));
    return CT_OK;
}

/* ---- model references ------------------------------------------------------------ */

/* Python's str.strip() emptiness for ASCII-range whitespace (the Unicode
 * spaces cannot start a valid id or a path that exists anyway). */
static int blank(const char *s) {
    for (; *s; s++)
        if (!(*s == ' ' || (*s >= '\t' && *s <= '\r') || (*s >= 0x1C && *s <= 0x1F))) return 0;
    return 1;
}

static int surrounding_space(const char *s) {
    size_t n = strlen(s);
    unsigned char a = (unsigned char)s[0], z = (unsigned char)s[n - 1];
    return a == ' ' || (a >= '\t' && a <= '\r') || z == ' ' || (z >= '\t' && z <= '\r');
}

/* ct_model_spec_kind with its messages' "--model" spelled as this option. */
static ct_status reference_kind(const ct_transcriber_options *o, const char *field, const char *spec,
                                int *is_local) {
    if (blank(spec))
        return ct_fail(CT_ERR_INVALID_ARG,
                       "%s must be a non-empty Hugging Face repository ID or local directory", N(field));
    ct_status st = ct_model_spec_kind(spec, is_local);
    if (st == CT_OK) return CT_OK;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ct_last_error());
    const char *rest = strncmp(msg, "--model", 7) == 0 ? msg + 7 : NULL;
    if (!rest) return st;
    return ct_fail(st, "%s%s", N(field), rest);
}

ct_status ct_options_model_kind(const ct_transcriber_options *o, int *is_local) {
    *is_local = 0;
    if (!o->model) return CT_OK; /* the default model is a Hub id */
    return reference_kind(o, "model", o->model, is_local);
}

static ct_status check_revision(const ct_transcriber_options *o, const char *field, const char *rev) {
    if (!*rev || blank(rev) || surrounding_space(rev))
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be a non-empty revision without surrounding whitespace",
                       N(field));
    return CT_OK;
}

/* ---- the check --------------------------------------------------------------------- */

static ct_status check_models(const ct_transcriber_options *o) {
    int model_local = 0, adapter_local = 0;
    CT_TRY(ct_options_model_kind(o, &model_local));
    if (o->model_revision) CT_TRY(check_revision(o, "model_revision", o->model_revision));
    if (model_local && o->model_revision)
        return ct_fail(CT_ERR_INVALID_ARG, "%s cannot be used with a local model directory",
                       N("model_revision"));
    if (o->adapter) CT_TRY(reference_kind(o, "adapter", o->adapter, &adapter_local));
    if (o->adapter_revision) {
        if (!o->adapter)
            return ct_fail(CT_ERR_INVALID_ARG, "%s requires %s", N("adapter_revision"), N("adapter"));
        CT_TRY(check_revision(o, "adapter_revision", o->adapter_revision));
    }
    if (adapter_local && o->adapter_revision)
        return ct_fail(CT_ERR_INVALID_ARG, "%s cannot be used with a local adapter directory",
                       N("adapter_revision"));
    return CT_OK;
}

/* C fixes the types, so of the original's type checks only "a boolean"
 * (0 or 1) and "one of" (an enum in range) can fail. */
static ct_status check_types(const ct_transcriber_options *o) {
    const struct { const char *field; int v; } bools[] = {
        {"text_only", o->text_only},         {"recursive", o->recursive},
        {"pipeline_preparation", o->pipeline_preparation}, {"vad_merge", o->vad_merge},
        {"adaptive_batch", o->adaptive_batch}, {"pin_memory", o->pin_memory},
        {"stop_repetition_loops", o->stop_repetition_loops}, {"punctuation", o->punctuation},
        {"publish", o->publish},
    };
    for (size_t i = 0; i < sizeof bools / sizeof *bools; i++)
        if (bools[i].v != 0 && bools[i].v != 1)
            return ct_fail(CT_ERR_INVALID_ARG, "%s must be a boolean", N(bools[i].field));
    if (o->language) {
        /* Any tag the model's config lists is accepted; which ones it lists
         * is known once the model is resolved. Here: the shape of a tag. */
        int ok = *o->language && strlen(o->language) <= 32;
        for (const char *p = o->language; *p; p++)
            ok &= (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                  *p == '-' || *p == '_';
        if (!ok)
            return ct_fail(CT_ERR_INVALID_ARG,
                           "%s must be a language tag the model lists (letters, digits, '-', '_'; "
                           "ar or en for the default model)",
                           N("language"));
    }
    /* the original's order, choices sorted as it prints them */
    const struct { const char *field; int v, n; const char *sorted; } enums[] = {
        {"existing", (int)o->existing, 3, "error, overwrite, skip"},
        {"device", (int)o->device, 4, "auto, cpu, cuda, mps"},
        {"dtype", (int)o->dtype, 5, "auto, bf16, fp16, fp32"}, /* + int8, ours (not listed: the original's message) */
        {"audio_backend", (int)o->audio_backend, 5, "auto, ffmpeg, librosa, sndfile, torchcodec"},
        {"resampler", (int)o->resampler, 3, "auto, fir, sinc"},
        {"file_order", (int)o->file_order, 3, "auto, input, ready"}, /* ours */
        {"vad", (int)o->vad, 3, "auditok, none, silero"},
        {"vad_engine", (int)o->vad_engine, 4, "auto, jit, onnx, torch"},
        {"truncation_policy", (int)o->truncation_policy, 2, "retry, warn"},
        {"alignment", (int)o->alignment, 3, "none, segment, word"},
    };
    for (size_t i = 0; i < sizeof enums / sizeof *enums; i++)
        if (enums[i].v < 0 || enums[i].v >= enums[i].n)
            return ct_fail(CT_ERR_INVALID_ARG, "%s must be one of: %s", N(enums[i].field), enums[i].sorted);
    if (o->align_dtype != CT_PRECISION_FP32 && o->align_dtype != CT_PRECISION_FP16 &&
        o->align_dtype != CT_PRECISION_BF16 && o->align_dtype != CT_PRECISION_AUTO) /* ours, not listed */
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be one of: fp16, fp32", N("align_dtype"));
    if (o->n_formats < 0 || o->n_formats > CT_FORMAT_COUNT)
        return ct_fail(CT_ERR_INVALID_ARG, "%s lists at most %d formats", N("formats"), CT_FORMAT_COUNT);
    for (int i = 0; i < o->n_formats; i++)
        if ((int)o->formats[i] < 0 || (int)o->formats[i] >= CT_FORMAT_COUNT)
            return ct_fail(CT_ERR_INVALID_ARG, "%s must be one of: json, srt, txt, vtt", N("formats"));
    return CT_OK;
}

static ct_status check_outputs_and_batches(const ct_transcriber_options *o) {
    if (o->text_only && o->alignment == CT_ALIGN_WORD)
        return ct_fail(CT_ERR_INVALID_ARG, "%s conflicts with %s", N("text_only"), NV("alignment", "word"));
    if (ct_options_text_mode(o)) {
        ct_format f[CT_FORMAT_COUNT];
        int n = ct_options_formats(o, f);
        if (n != 1 || f[0] != CT_FORMAT_TXT)
            return ct_fail(CT_ERR_INVALID_ARG, "Plain-text mode supports only %s", NV("formats", "txt"));
    }
    if (!isfinite(o->audio_memory_gb) || o->audio_memory_gb <= 0)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be finite and positive", N("audio_memory_gb"));
    if (o->preprocess_workers < 0) /* 0: automatic */
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be positive", N("preprocess_workers"));
    int packed = o->vad == CT_VAD_MODE_SILERO &&
                 (o->vad_engine == CT_VAD_ENGINE_AUTO || o->vad_engine == CT_VAD_ENGINE_TORCH);
    if (packed) {
        if (o->vad_batch_size <= 0 || o->vad_block_frames <= 0)
            return ct_fail(CT_ERR_INVALID_ARG, "%s and %s must be positive", N("vad_batch_size"),
                           N("vad_block_frames"));
        if ((long long)o->vad_batch_size * o->vad_block_frames > CT_VAD_MAX_PADDED_FRAMES)
            return ct_fail(CT_ERR_INVALID_ARG, "%s * %s must not exceed %d frames", N("vad_batch_size"),
                           N("vad_block_frames"), CT_VAD_MAX_PADDED_FRAMES);
    }
    if (o->vad_threads < 0) return ct_fail(CT_ERR_INVALID_ARG, "%s must be positive", N("vad_threads"));
    if (o->vad_threads > 0 && !packed)
        return ct_fail(CT_ERR_INVALID_ARG, "%s applies only to packed Torch Silero VAD", N("vad_threads"));
    if (o->batch_size < 0) return ct_fail(CT_ERR_INVALID_ARG, "%s must be positive", N("batch_size"));
    if (o->batch_max_size < 0) return ct_fail(CT_ERR_INVALID_ARG, "%s must be positive", N("batch_max_size"));
    if (o->batch_size > 0 && o->batch_max_size > 0 && o->batch_max_size < o->batch_size)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be at least %s", N("batch_max_size"), N("batch_size"));
    if (o->batch_max_size > 0 && !o->adaptive_batch)
        return ct_fail(CT_ERR_INVALID_ARG, "%s requires %s", N("batch_max_size"), N("adaptive_batch"));
    if (o->batch_audio_seconds != 0 && (!isfinite(o->batch_audio_seconds) || o->batch_audio_seconds <= 0))
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be finite and positive", N("batch_audio_seconds"));
    if (!isfinite(o->batch_vram_target) || !(o->batch_vram_target >= 0.50 && o->batch_vram_target <= 0.98))
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be between 0.50 and 0.98", N("batch_vram_target"));
    if (ct_options_alignment(o) == CT_ALIGN_WORD && o->align_batch_size <= 0)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be positive", N("align_batch_size"));
    return CT_OK;
}

/* Comparisons are written as the original's, so NaN falls where it does there. */
static ct_status check_segmentation(const ct_transcriber_options *o) {
    if (!isfinite(o->max_dur) || o->max_dur <= 0)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be finite and positive", N("max_dur"));
    if (!isfinite(o->min_dur)) return ct_fail(CT_ERR_INVALID_ARG, "%s must be finite", N("min_dur"));
    if (o->vad != CT_VAD_MODE_NONE && (o->min_dur < 0 || o->min_dur > o->max_dur))
        return ct_fail(CT_ERR_INVALID_ARG, "Require 0 <= %s <= %s", N("min_dur"), N("max_dur"));
    if (o->vad == CT_VAD_MODE_NONE && o->max_dur < CT_ASR_FIXED_MIN_S)
        return ct_fail(CT_ERR_INVALID_ARG,
                       "%s requires %s >= %g second to bound segment count and memory use",
                       NV("vad", "none"), N("max_dur"), CT_ASR_FIXED_MIN_S);
    if (o->vad == CT_VAD_MODE_SILERO) {
        if (!(0 <= o->vad_threshold && o->vad_threshold <= 1))
            return ct_fail(CT_ERR_INVALID_ARG, "%s must be between 0 and 1", N("vad_threshold"));
        if (o->min_silence_ms < 0 || o->speech_pad_ms < 0)
            return ct_fail(CT_ERR_INVALID_ARG, "%s and %s must be non-negative", N("min_silence_ms"),
                           N("speech_pad_ms"));
    } else if (o->vad == CT_VAD_MODE_AUDITOK) {
        if (o->max_silence < 0 || o->energy_threshold < 0)
            return ct_fail(CT_ERR_INVALID_ARG,
                           "Auditok silence and energy thresholds must be finite and non-negative");
        if (o->min_dur <= 0)
            return ct_fail(CT_ERR_INVALID_ARG, "%s requires %s > 0", NV("vad", "auditok"), N("min_dur"));
        if (o->max_silence >= o->max_dur)
            return ct_fail(CT_ERR_INVALID_ARG, "%s requires %s < %s", NV("vad", "auditok"),
                           N("max_silence"), N("max_dur"));
    }
    if (o->vad_merge && o->vad != CT_VAD_MODE_SILERO)
        return ct_fail(CT_ERR_INVALID_ARG, "%s is supported only with %s", N("vad_merge"),
                       NV("vad", "silero"));
    return CT_OK;
}

static ct_status check_decoding_and_cues(const ct_transcriber_options *o) {
    if (o->max_new_tokens <= 0)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be positive", N("max_new_tokens"));
    if (o->max_retry_tokens < o->max_new_tokens)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be at least %s", N("max_retry_tokens"),
                       N("max_new_tokens"));
    if (!isfinite(o->vad_threshold) || !isfinite(o->max_silence) || !isfinite(o->energy_threshold) ||
        !isfinite(o->max_cue_dur) || !isfinite(o->max_gap))
        return ct_fail(CT_ERR_INVALID_ARG, "All numeric thresholds and cue limits must be finite");
    if (ct_options_alignment(o) != CT_ALIGN_NONE &&
        (o->max_chars <= 0 || o->max_cue_dur <= 0 || o->max_gap < 0))
        return ct_fail(CT_ERR_INVALID_ARG, "Subtitle cue limits must be positive (and %s non-negative)",
                       N("max_gap"));
    return CT_OK;
}

/* Ours (not in the original), then what the original accepts as
 * configuration but refuses when it runs. */
static ct_status check_additions(const ct_transcriber_options *o) {
    if (o->cpu_wait != CT_CPU_WAIT_PASSIVE && o->cpu_wait != CT_CPU_WAIT_ACTIVE && o->cpu_wait != CT_CPU_WAIT_AUTO)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be auto, passive or active", N("cpu_wait"));
    if (o->threads < 0)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be non-negative (0: every core)", N("threads"));
    if (o->device_index < 0)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be non-negative", N("device_index"));
    if (!isfinite(o->benchmark_tokens_per_second) || o->benchmark_tokens_per_second < 0 ||
        o->benchmark_tokens_per_second > 1000)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must be a finite number of tokens per second in 0..1000 (0: off)",
                       N("benchmark_tokens_per_second"));
    if (o->vad_weights && !*o->vad_weights)
        return ct_fail(CT_ERR_INVALID_ARG, "%s must not be empty", N("vad_weights"));
    if (o->device == CT_DEVICE_MPS)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s is not supported: this build runs on cuda or cpu",
                       NV("device", "mps"));
    if (o->device == CT_DEVICE_CPU) CT_TRY(ct_options_check_device(o, CT_DEVICE_CPU, 0));
    if (o->adapter)
        return ct_fail(CT_ERR_UNSUPPORTED, "PEFT/LoRA adapters are not supported (%s %s)", N("adapter"),
                       o->adapter);
    return CT_OK;
}

ct_status ct_transcriber_options_check(const ct_transcriber_options *o) {
    if (!o) return ct_fail(CT_ERR_INVALID_ARG, "options: NULL");
    CT_TRY(check_models(o));
    CT_TRY(check_types(o));
    CT_TRY(check_outputs_and_batches(o));
    CT_TRY(check_segmentation(o));
    CT_TRY(check_decoding_and_cues(o));
    return check_additions(o);
}
