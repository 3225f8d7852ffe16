/* options.h — internal helpers over ct_transcriber_options (the public
 * defaults and check live in options.c too): how a message names an option,
 * the effective values the pipeline uses (formats, alignment, batch size,
 * dtype), the checks that need the resolved device, and enum names. */
#ifndef CT_PIPELINE_OPTIONS_H
#define CT_PIPELINE_OPTIONS_H

#include <stddef.h>

#include "cohere_transcribe.h"

/* How a message names the option whose struct field is `field` ("max_dur"):
 * "--max-dur" when o->cli_option_names, else "max_dur". buf holds >= 64. */
const char *ct_options_name(const ct_transcriber_options *o, const char *field, char *buf);
/* An option with a value: "--vad none" / "vad=none". buf holds >= 96. */
const char *ct_options_name_value(const ct_transcriber_options *o, const char *field,
                                  const char *value, char *buf);

/* Text-only mode: text_only set or alignment none (no cues, txt only). */
int ct_options_text_mode(const ct_transcriber_options *o);
/* The alignment that runs: none in text-only mode, else o->alignment. */
ct_alignment ct_options_alignment(const ct_transcriber_options *o);
/* The formats written, in order, without duplicates: the given ones, else
 * txt srt vtt (txt in text-only mode). Returns the count. */
int ct_options_formats(const ct_transcriber_options *o, ct_format out[CT_FORMAT_COUNT]);
/* ASR rows per batch: batch_size, else 24 on cuda and 4 on cpu. */
int ct_options_batch_size(const ct_transcriber_options *o, ct_device resolved);
/* The model precision: dtype, else fp32 on cpu and bf16 on cuda (fp16 when
 * the device has no bf16). */
ct_precision ct_options_dtype(const ct_transcriber_options *o, ct_device resolved, int cuda_bf16);
/* Checks that need the resolved device (after auto): --align-dtype fp16
 * only on CUDA; --dtype bf16 on a CUDA device without BF16. */
ct_status ct_options_check_device(const ct_transcriber_options *o, ct_device resolved, int cuda_bf16);

/* Whether o->model (NULL: the default model) is a local directory, by
 * ct_model_spec_kind's rules; errors name the option per o. */
ct_status ct_options_model_kind(const ct_transcriber_options *o, int *is_local);

/* Command-line names of the enums ("cuda", "bf16", "auditok", ...); "?" if
 * out of range. */
const char *ct_opt_device_name(ct_device v);
const char *ct_opt_precision_name(ct_precision v);
const char *ct_opt_vad_name(ct_vad_policy v);
const char *ct_opt_vad_engine_name(ct_vad_engine v);
const char *ct_opt_audio_backend_name(ct_audio_decoder v);
const char *ct_opt_existing_name(ct_existing v);
const char *ct_opt_alignment_name(ct_alignment v);
const char *ct_opt_truncation_name(ct_truncation v);
const char *ct_opt_format_name(ct_format v);

/* The packed-VAD frame cap of the original (--vad-batch-size * --vad-block-frames). */
#define CT_VAD_MAX_PADDED_FRAMES 32768
/* --vad none needs windows of at least this many seconds. */
#define CT_ASR_FIXED_MIN_S 1.0

#endif
