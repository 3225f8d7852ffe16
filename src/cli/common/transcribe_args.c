/* transcribe_args.c — cohere-transcribe's option table (the original's
 * options, order, metavars and help texts, PRODUCT-DETAILS §10.4, plus ours:
 * --device-index, --threads, --cpu-wait, --vad-weights, --no-punctuation, --aligner-model,
 * --aligner-revision, --benchmark-tokens-per-second), the parse of
 * argv into ct_transcriber_options, the report of help/version/errors, and a
 * JSON dump of the resolved options for tests. */
#include "core/cpu_wait.h"
#include "common/transcribe_args.h"

#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "model/resolve.h"
#include "pipeline/options.h"

#define OFF(f) offsetof(ct_transcriber_options, f)
#define NCH(a) ((int)(sizeof a / sizeof *a))

static const ct_arg_choice EXISTING[] = {
    {"error", CT_EXISTING_ERROR, 0}, {"overwrite", CT_EXISTING_OVERWRITE, 0}, {"skip", CT_EXISTING_SKIP, 0}};
/* mps parses (as in the original) and is refused by the options check */
static const ct_arg_choice DEVICE[] = {
    {"auto", CT_DEVICE_AUTO, 0}, {"mps", CT_DEVICE_MPS, 0}, {"cuda", CT_DEVICE_CUDA, 0}, {"cpu", CT_DEVICE_CPU, 0}};
static const ct_arg_choice DTYPE[] = {{"auto", CT_PRECISION_AUTO, 0},
                                      {"bf16", CT_PRECISION_BF16, 0},
                                      {"fp16", CT_PRECISION_FP16, 0},
                                      {"fp32", CT_PRECISION_FP32, 0},
                                      {"int8", CT_PRECISION_INT8, 1}};
/* the original's four, then ours */
static const ct_arg_choice AUDIO_BACKEND[] = {{"auto", CT_AUDIO_AUTO, 0},
                                              {"torchcodec", CT_AUDIO_TORCHCODEC, 0},
                                              {"ffmpeg", CT_AUDIO_FFMPEG, 0},
                                              {"librosa", CT_AUDIO_LIBROSA, 0},
                                              {"sndfile", CT_AUDIO_SNDFILE, 0}};
static const ct_arg_choice FILE_ORDER[] = {
    {"auto", CT_FILE_ORDER_AUTO, 0}, {"input", CT_FILE_ORDER_INPUT, 0}, {"ready", CT_FILE_ORDER_READY, 0}};
static const ct_arg_choice RESAMPLER[] = {
    {"auto", CT_RESAMPLER_AUTO, 0}, {"fir", CT_RESAMPLER_FIR, 0}, {"sinc", CT_RESAMPLER_SINC, 0}};
static const ct_arg_choice VAD[] = {
    {"silero", CT_VAD_MODE_SILERO, 0}, {"auditok", CT_VAD_MODE_AUDITOK, 0}, {"none", CT_VAD_MODE_NONE, 0}};
static const ct_arg_choice VAD_ENGINE[] = {{"auto", CT_VAD_ENGINE_AUTO, 0},
                                           {"torch", CT_VAD_ENGINE_TORCH, 0},
                                           {"onnx", CT_VAD_ENGINE_ONNX, 0},
                                           {"jit", CT_VAD_ENGINE_JIT, 0}};
static const ct_arg_choice TRUNCATION[] = {{"retry", CT_TRUNCATION_RETRY, 0}, {"warn", CT_TRUNCATION_WARN, 0}};
static const ct_arg_choice ALIGNMENT[] = {
    {"word", CT_ALIGN_WORD, 0}, {"segment", CT_ALIGN_SEGMENT, 0}, {"none", CT_ALIGN_NONE, 0}};
/* bf16 and auto are ours (the CPU aligner's bf16 products; auto: bf16 where
 * the CPU multiplies bf16 natively, else fp32); the default stays fp32 */
static const ct_arg_choice ALIGN_DTYPE[] = {{"fp32", CT_PRECISION_FP32, 0},
                                            {"fp16", CT_PRECISION_FP16, 0},
                                            {"bf16", CT_PRECISION_BF16, 1},
                                            {"auto", CT_PRECISION_AUTO, 1}};
static const ct_arg_choice CPU_WAIT[] = {
    {"auto", CT_CPU_WAIT_AUTO, 0}, {"passive", CT_CPU_WAIT_PASSIVE, 0}, {"active", CT_CPU_WAIT_ACTIVE, 0}};
static const ct_arg_choice FORMATS[] = {
    {"txt", CT_FORMAT_TXT, 0}, {"srt", CT_FORMAT_SRT, 0}, {"vtt", CT_FORMAT_VTT, 0}, {"json", CT_FORMAT_JSON, 0}};

#define G_VAD "Segmentation (VAD)"
#define G_ASR "Transcription"
#define G_ALN "Alignment and subtitle cues"

/* name, short, metavar, help, group, kind, offset, count offset, flag value,
 * choices, n, default, list error, flags */
#define STR(n, m, h, g, f, d) {n, NULL, m, h, g, CT_ARG_STRING, OFF(f), 0, 0, NULL, 0, d, NULL, 0}
#define STR_ADD(n, m, h, g, f) {n, NULL, m, h, g, CT_ARG_STRING, OFF(f), 0, 0, NULL, 0, NULL, NULL, CT_ARG_ADDITION}
#define INT(n, m, h, g, f, d, fl) {n, NULL, m, h, g, CT_ARG_INT, OFF(f), 0, 0, NULL, 0, d, NULL, fl}
#define FLT(n, m, h, g, f, d, fl) {n, NULL, m, h, g, CT_ARG_FLOAT, OFF(f), 0, 0, NULL, 0, d, NULL, fl}
#define CHO(n, m, h, g, f, c, d) {n, NULL, m, h, g, CT_ARG_CHOICE, OFF(f), 0, 0, c, NCH(c), d, NULL, 0}
#define CHO_ADD(n, m, h, g, f, c, d) {n, NULL, m, h, g, CT_ARG_CHOICE, OFF(f), 0, 0, c, NCH(c), d, NULL, CT_ARG_ADDITION}
#define FLAG(n, h, g, f, v, d, fl) {n, NULL, NULL, h, g, CT_ARG_FLAG, OFF(f), 0, v, NULL, 0, d, NULL, fl}

static const ct_arg_option OPTIONS[] = {
    STR("--model", "MODEL", "Hugging Face repository or local native Cohere ASR directory.", NULL, model,
        CT_DEFAULT_MODEL),
    STR("--model-revision", "REVISION", "Hub model commit, tag, or branch.", NULL, model_revision, NULL),
    STR("--adapter", "ADAPTER", "Optional Hub repository or local LoRA adapter directory.", NULL, adapter,
        NULL),
    STR("--adapter-revision", "REVISION", "Hub adapter commit, tag, or branch.", NULL, adapter_revision,
        NULL),
    STR("--language", "LANGUAGE", "Spoken language tag, one the model's config lists (default model: ar, en).",
        NULL, language, "ar"),
    {"--formats", NULL, "FORMAT [FORMAT ...]", "Outputs to write: txt, srt, vtt, json.", NULL,
     CT_ARG_CHOICE_LIST, OFF(formats), OFF(n_formats), 0, FORMATS, NCH(FORMATS), "txt srt vtt",
     "unsupported output formats", 0},
    STR("--output-dir", "DIRECTORY", "Output root; preserve directory-relative structure.", NULL, output_dir,
        NULL),
    FLAG("--recursive", "Recurse into input directories (default).", NULL, recursive, 1, "on", 0),
    FLAG("--no-recursive", "Do not recurse into input directories.", NULL, recursive, 0, NULL, 0),
    CHO("--existing", "POLICY", "Existing outputs policy.", NULL, existing, EXISTING, "error"),
    CHO("--device", "DEVICE", "Inference device.", NULL, device, DEVICE, "auto"),
    INT("--device-index", "N", "CUDA device ordinal.", NULL, device_index, "0", CT_ARG_ADDITION),
    CHO("--dtype", "DTYPE", "ASR model precision.", NULL, dtype, DTYPE, "auto"),
    INT("--threads", "COUNT", "CPU threads for the model (default: every core).", NULL, threads, NULL,
        CT_ARG_ADDITION),
    CHO_ADD("--cpu-wait", "POLICY",
            "How idle CPU threads wait: auto (OpenMP's default), passive (sleep: for cores shared with other "
            "work) or active (spin).",
            NULL, cpu_wait, CPU_WAIT, "auto"),
    CHO("--audio-backend", "BACKEND", "Audio decoder configuration.", NULL, audio_backend, AUDIO_BACKEND,
        "auto"),
    CHO_ADD("--resampler", "KIND", "libsndfile backend's resampler: fir (ours) or sinc (libsamplerate).", NULL,
            resampler, RESAMPLER, "auto"),
    FLT("--audio-memory-gb", "GIB", "Decoded-PCM memory limit per file/group.", NULL, audio_memory_gb, "4.0",
        0),
    INT("--preprocess-workers", "COUNT", "Concurrent audio decode workers.", NULL, preprocess_workers, NULL,
        CT_ARG_ZERO_SET),
    FLAG("--pipeline-preparation", "Overlap bounded preparation with ASR (default).", NULL,
         pipeline_preparation, 1, "on", 0),
    FLAG("--no-pipeline-preparation", "Disable preparation/ASR overlap.", NULL, pipeline_preparation, 0,
         NULL, 0),
    CHO_ADD("--file-order", "ORDER",
            "Files into the model: input order, or ready (as prepared; auto: ready on cuda).",
            NULL, file_order, FILE_ORDER, "auto"),

    CHO("--vad", "MODE", "Segmentation policy.", G_VAD, vad, VAD, "silero"),
    CHO("--vad-engine", "ENGINE", "Silero runtime.", G_VAD, vad_engine, VAD_ENGINE, "auto"),
    STR("--vad-weights", "PATH", "Silero ONNX v6.2: file, folder or Hub repo (default: $CT_VAD_WEIGHTS).",
        G_VAD, vad_weights, NULL),
    INT("--vad-batch-size", "COUNT", "Maximum files per packed VAD call.", G_VAD, vad_batch_size, "16", 0),
    INT("--vad-block-frames", "COUNT", "Maximum frames per packed VAD file.", G_VAD, vad_block_frames, "512",
        0),
    INT("--vad-threads", "COUNT", "Packed VAD CPU thread count.", G_VAD, vad_threads, NULL, CT_ARG_ZERO_SET),
    FLAG("--vad-merge", "Merge adjacent Silero speech spans.", G_VAD, vad_merge, 1, NULL, 0),
    FLAG("--no-vad-merge", "Do not merge adjacent Silero spans (default).", G_VAD, vad_merge, 0, "off", 0),
    FLT("--min-dur", "SECONDS", "Minimum speech duration.", G_VAD, min_dur, "0.5", 0),
    FLT("--max-dur", "SECONDS", "Maximum segment/window duration.", G_VAD, max_dur, "30.0", 0),
    FLT("--max-silence", "SECONDS", "Maximum Auditok internal silence.", G_VAD, max_silence, "0.6", 0),
    FLT("--energy-threshold", "DB", "Auditok energy threshold.", G_VAD, energy_threshold, "50.0", 0),
    FLT("--vad-threshold", "PROBABILITY", "Silero speech threshold.", G_VAD, vad_threshold, "0.5", 0),
    INT("--min-silence-ms", "MILLISECONDS", "Silero split silence.", G_VAD, min_silence_ms, "300", 0),
    INT("--speech-pad-ms", "MILLISECONDS", "Silero speech padding.", G_VAD, speech_pad_ms, "60", 0),

    INT("--batch-size", "COUNT", "Initial ASR segment count.", G_ASR, batch_size, NULL, CT_ARG_ZERO_SET),
    INT("--batch-max-size", "COUNT", "Adaptive batch upper row cap.", G_ASR, batch_max_size, NULL,
        CT_ARG_ZERO_SET),
    FLT("--batch-audio-seconds", "SECONDS", "Maximum padded audio per batch.", G_ASR, batch_audio_seconds,
        NULL, CT_ARG_ZERO_SET),
    FLT("--batch-vram-target", "FRACTION", "Adaptive batching VRAM target.", G_ASR, batch_vram_target, "0.9",
        0),
    FLAG("--adaptive-batch", "Enable experimental adaptive batch growth.", G_ASR, adaptive_batch, 1, NULL, 0),
    FLAG("--no-adaptive-batch", "Disable adaptive growth (default).", G_ASR, adaptive_batch, 0, "off", 0),
    FLAG("--pin-memory", "Compatibility flag; pinned buffers are used where they help.", G_ASR, pin_memory,
         1, NULL, 0),
    FLAG("--no-pin-memory", "Compatibility flag (default).", G_ASR, pin_memory, 0, "off", 0),
    INT("--max-new-tokens", "COUNT", "Initial decoder token limit.", G_ASR, max_new_tokens, "445", 0),
    INT("--max-retry-tokens", "COUNT", "Automatic retry token limit.", G_ASR, max_retry_tokens, "896", 0),
    CHO("--truncation-policy", "POLICY", "Token-limit behavior.", G_ASR, truncation_policy, TRUNCATION,
        "retry"),
    FLAG("--stop-repetition-loops", "Stop conservative decoder repetition loops (default).", G_ASR,
         stop_repetition_loops, 1, "on", 0),
    FLAG("--no-stop-repetition-loops", "Disable the repetition-loop guard.", G_ASR, stop_repetition_loops, 0,
         NULL, 0),
    FLAG("--no-punctuation", "Lower-case text without punctuation (<|nopnc|> prompt).", G_ASR, punctuation,
         0, NULL, CT_ARG_ADDITION),
    FLT("--benchmark-tokens-per-second", "RATE",
        "Benchmarks only: every segment decodes exactly ceil(RATE x seconds) tokens, EOS ignored, no retry or "
        "repetition guard.",
        G_ASR, benchmark_tokens_per_second, NULL, CT_ARG_ADDITION),

    CHO("--alignment", "MODE", "Timestamp mode.", G_ALN, alignment, ALIGNMENT, "segment"),
    FLAG("--text-only", "Alias for --alignment none.", G_ALN, text_only, 1, NULL, 0),
    INT("--align-batch-size", "COUNT", "Maximum alignment windows per batch.", G_ALN, align_batch_size, "4",
        0),
    CHO("--align-dtype", "DTYPE", "Alignment precision.", G_ALN, align_dtype, ALIGN_DTYPE, "fp32"),
    STR_ADD("--aligner-model", "MODEL", "Word aligner: Hub repository or local folder (CC-BY-NC-4.0 default).",
            G_ALN, aligner_model),
    STR_ADD("--aligner-revision", "REVISION", "Word aligner commit, tag, or branch.", G_ALN, aligner_revision),
    INT("--max-chars", "COUNT", "Target subtitle cue length.", G_ALN, max_chars, "80", 0),
    FLT("--max-cue-dur", "SECONDS", "Target subtitle cue duration.", G_ALN, max_cue_dur, "6.0", 0),
    FLT("--max-gap", "SECONDS", "Maximum inter-word cue gap.", G_ALN, max_gap, "0.6", 0),
    STR("--profile-json", "PATH", "Write performance telemetry as JSON.", G_ALN, profile_json, NULL),
    STR_ADD("--trace", "PATH", "Write a timeline of the run (Chrome trace JSON, for ui.perfetto.dev).", G_ALN,
            trace_path),
    {"--version", NULL, NULL, "Show version and exit.", G_ALN, CT_ARG_VERSION, 0, 0, 0, NULL, 0, NULL, NULL, 0},
    {"--help", "-h", NULL, "Show this help and exit.", G_ALN, CT_ARG_HELP, 0, 0, 0, NULL, 0, NULL, NULL, 0},
};

static const ct_args_spec SPEC = {
    .prog = "cohere-transcribe",
    .usage = "Usage: cohere-transcribe [options] audio [audio ...]",
    .description = "Batch Arabic/English transcription with optional timestamp alignment.",
    .options = OPTIONS,
    .n_options = NCH(OPTIONS),
    .positional_name = "audio",
    .conflict_a = "--text-only",
    .conflict_b = "--alignment",
};

const ct_args_spec *ct_cli_transcribe_spec(void) { return &SPEC; }

int ct_cli_parse(int argc, char **argv, ct_cli_result *out) {
    memset(out, 0, sizeof *out);
    out->options = ct_transcriber_default_options();
    out->options.cli_option_names = 1;
    out->action = ct_args_parse(&SPEC, argc, argv, &out->options, &out->args);
    memcpy(out->error, out->args.error, sizeof out->error);
    out->paths = out->args.positionals;
    out->n_paths = out->args.n_positionals;
    return out->action == CT_ARGS_ERROR ? 2 : 0;
}

void ct_cli_result_free(ct_cli_result *r) {
    if (!r) return;
    ct_args_result_free(&r->args);
    r->paths = NULL;
    r->n_paths = 0;
}

int ct_args_report(const ct_args_spec *spec, ct_args_action action, const char *error, const char *version,
                   FILE *out, FILE *err) {
    if (action == CT_ARGS_RUN) return 0;
    if (action == CT_ARGS_VERSION) {
        fprintf(out, "%s %s\n", spec->prog, version ? version : "");
        return fflush(out) == 0 ? 0 : 1;
    }
    char *help = ct_args_help_text(spec);
    if (action == CT_ARGS_HELP) {
        if (help) fputs(help, out);
        free(help);
        return help && fflush(out) == 0 ? 0 : 1;
    }
    if (help) fputs(help, err);
    free(help);
    fprintf(err, "%s: error: %s\n", spec->prog, error);
    fflush(err);
    return 2;
}

int ct_cli_report(const ct_cli_result *r, FILE *out, FILE *err) {
    return ct_args_report(&SPEC, r->action, r->error, ct_version(), out, err);
}

/* ---- JSON of the resolved options (tests, the harness main) ---------------- */

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

/* finite numbers as numbers; inf/nan as strings, JSON having neither */
static json_t *real(double v) {
    if (isfinite(v)) return json_real(v);
    return json_string(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

char *ct_cli_options_json(const ct_transcriber_options *o, const char *const *paths, int n_paths) {
    json_t *j = json_object(), *a;
    json_object_set_new(j, "model", str_or_null(o->model));
    json_object_set_new(j, "model_revision", str_or_null(o->model_revision));
    json_object_set_new(j, "adapter", str_or_null(o->adapter));
    json_object_set_new(j, "adapter_revision", str_or_null(o->adapter_revision));
    json_object_set_new(j, "language", str_or_null(o->language));
    json_object_set_new(j, "punctuation", json_boolean(o->punctuation));
    a = json_array();
    for (int i = 0; i < o->n_formats && i < CT_FORMAT_COUNT; i++)
        json_array_append_new(a, json_string(ct_opt_format_name(o->formats[i])));
    json_object_set_new(j, "formats", a);
    ct_format f[CT_FORMAT_COUNT];
    int nf = ct_options_formats(o, f);
    a = json_array();
    for (int i = 0; i < nf; i++) json_array_append_new(a, json_string(ct_opt_format_name(f[i])));
    json_object_set_new(j, "effective_formats", a);
    json_object_set_new(j, "output_dir", str_or_null(o->output_dir));
    json_object_set_new(j, "recursive", json_boolean(o->recursive));
    json_object_set_new(j, "existing", json_string(ct_opt_existing_name(o->existing)));
    json_object_set_new(j, "profile_json", str_or_null(o->profile_json));
    json_object_set_new(j, "device", json_string(ct_opt_device_name(o->device)));
    json_object_set_new(j, "device_index", json_integer(o->device_index));
    json_object_set_new(j, "dtype", json_string(ct_opt_precision_name(o->dtype)));
    json_object_set_new(j, "threads", json_integer(o->threads));
    json_object_set_new(j, "cpu_wait", json_string(ct_cpu_wait_name(o->cpu_wait)));
    json_object_set_new(j, "audio_backend", json_string(ct_opt_audio_backend_name(o->audio_backend)));
    json_object_set_new(j, "resampler", json_string(ct_audio_resampler_name((ct_audio_resampler)o->resampler)));
    json_object_set_new(j, "audio_memory_gb", real(o->audio_memory_gb));
    json_object_set_new(j, "preprocess_workers", json_integer(o->preprocess_workers));
    json_object_set_new(j, "pipeline_preparation", json_boolean(o->pipeline_preparation));
    json_object_set_new(j, "file_order", json_string(o->file_order == CT_FILE_ORDER_READY   ? "ready"
                                                     : o->file_order == CT_FILE_ORDER_INPUT ? "input"
                                                                                            : "auto"));
    json_object_set_new(j, "vad", json_string(ct_opt_vad_name(o->vad)));
    json_object_set_new(j, "vad_engine", json_string(ct_opt_vad_engine_name(o->vad_engine)));
    json_object_set_new(j, "vad_weights", str_or_null(o->vad_weights));
    json_object_set_new(j, "vad_batch_size", json_integer(o->vad_batch_size));
    json_object_set_new(j, "vad_block_frames", json_integer(o->vad_block_frames));
    json_object_set_new(j, "vad_threads", json_integer(o->vad_threads));
    json_object_set_new(j, "vad_merge", json_boolean(o->vad_merge));
    json_object_set_new(j, "min_dur", real(o->min_dur));
    json_object_set_new(j, "max_dur", real(o->max_dur));
    json_object_set_new(j, "max_silence", real(o->max_silence));
    json_object_set_new(j, "energy_threshold", real(o->energy_threshold));
    json_object_set_new(j, "vad_threshold", real(o->vad_threshold));
    json_object_set_new(j, "min_silence_ms", json_integer(o->min_silence_ms));
    json_object_set_new(j, "speech_pad_ms", json_integer(o->speech_pad_ms));
    json_object_set_new(j, "batch_size", json_integer(o->batch_size));
    json_object_set_new(j, "batch_size_cpu", json_integer(ct_options_batch_size(o, CT_DEVICE_CPU)));
    json_object_set_new(j, "batch_size_cuda", json_integer(ct_options_batch_size(o, CT_DEVICE_CUDA)));
    json_object_set_new(j, "batch_max_size", json_integer(o->batch_max_size));
    json_object_set_new(j, "batch_audio_seconds", real(o->batch_audio_seconds));
    json_object_set_new(j, "batch_vram_target", real(o->batch_vram_target));
    json_object_set_new(j, "adaptive_batch", json_boolean(o->adaptive_batch));
    json_object_set_new(j, "pin_memory", json_boolean(o->pin_memory));
    json_object_set_new(j, "max_new_tokens", json_integer(o->max_new_tokens));
    json_object_set_new(j, "max_retry_tokens", json_integer(o->max_retry_tokens));
    json_object_set_new(j, "truncation_policy", json_string(ct_opt_truncation_name(o->truncation_policy)));
    json_object_set_new(j, "stop_repetition_loops", json_boolean(o->stop_repetition_loops));
    json_object_set_new(j, "benchmark_tokens_per_second", real(o->benchmark_tokens_per_second));
    json_object_set_new(j, "alignment", json_string(ct_opt_alignment_name(o->alignment)));
    json_object_set_new(j, "effective_alignment", json_string(ct_opt_alignment_name(ct_options_alignment(o))));
    json_object_set_new(j, "text_only", json_boolean(o->text_only));
    json_object_set_new(j, "align_batch_size", json_integer(o->align_batch_size));
    json_object_set_new(j, "align_dtype", json_string(ct_opt_precision_name(o->align_dtype)));
    json_object_set_new(j, "max_chars", json_integer(o->max_chars));
    json_object_set_new(j, "max_cue_dur", real(o->max_cue_dur));
    json_object_set_new(j, "max_gap", real(o->max_gap));
    json_object_set_new(j, "dtype_cpu", json_string(ct_opt_precision_name(ct_options_dtype(o, CT_DEVICE_CPU, 0))));
    json_object_set_new(j, "dtype_cuda", json_string(ct_opt_precision_name(ct_options_dtype(o, CT_DEVICE_CUDA, 1))));
    a = json_array();
    for (int i = 0; i < n_paths; i++) json_array_append_new(a, json_string_nocheck(paths[i]));
    json_object_set_new(j, "paths", a);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    json_decref(j);
    return s;
}
