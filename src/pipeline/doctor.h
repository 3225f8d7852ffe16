/* doctor.h — the installation checks behind cohere-transcribe-doctor
 * (PRODUCT-DETAILS §11, adapted to this C product: docs/DOCTOR.md).
 *
 * Each check reports zero or more result lines through a callback, in the
 * order the command prints them; nothing here prints, exits or loads model
 * weights into an engine. A check never stops the others: a failure is a
 * CT_DOCTOR_FAIL line, not a status. The caller counts lines per level and
 * decides the verdict ("Validation passed/failed ...").
 */
#ifndef CT_PIPELINE_DOCTOR_H
#define CT_PIPELINE_DOCTOR_H

#include "model/hub.h"

typedef enum ct_doctor_level { CT_DOCTOR_OK = 0, CT_DOCTOR_WARN = 1, CT_DOCTOR_FAIL = 2 } ct_doctor_level;

/* One result line (message without the level prefix or a newline). */
typedef void (*ct_doctor_report_fn)(void *user, ct_doctor_level level, const char *message);

typedef struct ct_doctor_options {
    int word_mode;                /* --mode word: the aligner checks too */
    int model_access;             /* --model-access */
    const char *model;            /* NULL: the default model */
    const char *model_revision;   /* NULL: pinned commit (default model) / "main" */
    const char *adapter;          /* NULL: none */
    const char *adapter_revision; /* NULL: none */
    const char *audio_backend;    /* auto|torchcodec|ffmpeg|librosa|sndfile; NULL: auto */
    const char *vad_weights;      /* NULL: $CT_VAD_WEIGHTS, $CT_SILERO_VAD, else the installed copy */
    const char *built_version;    /* the version the caller was compiled against (its
                                     header's); NULL: not compared */
    const ct_hub_options *hub;    /* NULL: ct_hub_default_options */
} ct_doctor_options;

void ct_doctor_default_options(ct_doctor_options *o);

/* 1 when the model checks run: --model-access, or a model, revision or
 * adapter other than the defaults (as the original decides). */
int ct_doctor_model_access_wanted(const ct_doctor_options *o);

/* Every check below, in order; the model checks only when wanted. */
void ct_doctor_run(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user);

/* 1. The version: the installed package metadata (pkg-config file) and the
 *    header the caller was built with, against ct_version(). */
void ct_doctor_check_package(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user);
/* 2. The Silero weights file and its sha256 (CT_SILERO_SHA256_V62). */
void ct_doctor_check_silero_asset(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user);
/* 3. Libraries, CPU features and kernels, CUDA, what "auto" resolves to. */
void ct_doctor_check_runtime(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user);
/* 4. The Silero network on 1024 zero samples: 2 finite probabilities in [0, 1]. */
void ct_doctor_check_silero_smoke(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user);
/* 5. Word alignment (word mode only). */
void ct_doctor_check_word_alignment(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user);
/* 6. The audio decoder(s) the chosen --audio-backend uses, by decoding a
 *    short generated WAV with each. */
void ct_doctor_check_audio(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user);
/* 7. The model: resolution (local or Hub, small files only unless the
 *    snapshot is already complete), config.json, preprocessor_config.json,
 *    tokenizer.json, and the checkpoint's tensors when they are on disk. */
void ct_doctor_check_model(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user);

/* ---- pieces with no side effects, for the checks and their tests -------- */

/* What --device auto and --dtype auto resolve to: "cuda" when the build has
 * CUDA and a usable device, else "cpu"; fp32 on the CPU, bf16 on CUDA (the
 * GPU engine needs compute capability 9.0, which has BF16). */
const char *ct_doctor_auto_device(int cuda_usable);
const char *ct_doctor_auto_dtype(const char *device);

/* The decoder lines of check 6 for a backend name, given whether each
 * library decoded the probe and why not (diag). */
void ct_doctor_audio_verdict(const char *backend, int ffmpeg_ok, const char *ffmpeg_diag, int sndfile_ok,
                             const char *sndfile_diag, ct_doctor_report_fn fn, void *user);

/* The tokenizer.json checks of check 7 on text in memory (label names it):
 * a non-empty vocabulary, every id <-> token pair consistent (added tokens
 * included), ids exactly 0..vocab_size-1 when vocab_size > 0, and every
 * prompt token present (the fixed ones, <|nopnc|>, and <|xx|> for each of the
 * n_langs languages; ar and en when n_langs is 0). CT_OK or CT_ERR_FORMAT
 * with the message (ct_last_error). */
ct_status ct_doctor_tokenizer_check(const char *json, size_t len, const char *label, int vocab_size,
                                    const char (*langs)[16], int n_langs);

#endif
