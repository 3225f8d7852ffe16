/* asr.h — the engine's batch entry point: mono 16 kHz clips (≤ 35 s each) in,
 * texts, token ids, stop reasons and per-stage timings out.
 *
 *     ct_asr *asr;
 *     ct_asr_options o = ct_asr_default_options();        // cpu, f32 weights
 *     ct_asr_open("model-dir", &o, &asr);
 *     ct_asr_request rq = ct_asr_default_request();        // en, punctuation
 *     ct_asr_result res;
 *     ct_asr_transcribe(asr, clips, n_samples, B, &rq, &res);
 *     ... res.clips[b].text ...
 *     ct_asr_result_free(&res);
 *     ct_asr_free(asr);
 *
 * A call runs the clips as one padded batch: mel → encoder → batched greedy
 * decoding, the same model code (encoder.c, decoder.c, generate.c) on every
 * device: "cuda" runs it over the cuda backend table in bf16 or f16 (mel on
 * the device; dither added on the host first). One ct_asr is used by one
 * thread at a time; its arenas are kept between calls and grown when a
 * larger batch arrives.
 */
#ifndef CT_ASR_ASR_H
#define CT_ASR_ASR_H

#include "asr/generate.h"
#include "asr/weights.h"
#include "compute/backend.h"
#include "model/config.h"
#include "model/tokenizer.h"

typedef struct ct_asr_options {
    /* "cpu" (default), "cpu-ref", or "cuda": the same model code over the
     * "cuda" backend table (weights in its activation type) */
    const char *device;
    ct_dtype weight_dtype; /* CT_DTYPE_F32 (default), CT_DTYPE_BF16, CT_DTYPE_F16, CT_DTYPE_Q8 (int8,
                              CPU only: weights.h says which layers stay in float); "cuda": BF16 or F16 */
    int threads;           /* 0: OpenMP default */
    /* "cuda" only: device ordinal, activation type (F32: the weights' type),
     * encoder attention variant */
    int device_index;
    ct_dtype act_dtype;
    ct_attn_variant attn_variant;
    int isa_limit, dnnl_bf16; /* cpu: ct_backend_options' dispatch caps (tests, benchmarks); 0: none */
    int dnnl_pack;            /* cpu: ct_backend_options.dnnl_pack (benchmarks' A/B); 0: auto */
    ct_q8_plan q8; /* int8: the layer kinds kept in float (asr/weights.h); zero: the default plan */
} ct_asr_options;

ct_asr_options ct_asr_default_options(void);

typedef struct ct_asr_request {
    const char *const *languages; /* per clip (NULL or a NULL entry: "en") */
    int punctuation;              /* 1 (default): <|pnc|>, 0: <|nopnc|> */
    int dither;                   /* 0 (default) */
    int max_new_tokens;           /* default 1024 − prompt (the position table) */
    int ignore_eos;               /* benchmarks: force max_new_tokens (EOS does not stop a row) */
    const int *row_max_new_tokens; /* NULL, or per clip a budget in 1..max_new_tokens (or the position
                                    * table); needs ignore_eos: clip i generates exactly that many (benchmarks) */
    int keep_features, keep_encoder, keep_logits; /* copy intermediates into the result (keep_features:
                                                   * the CPU mel; keep_logits: the host loop) */
    int decode_loop; /* CT_LOOP_* of asr/generate.h (0: auto) */
    /* Teacher forcing (asr/generate.h): NULL, or (batch, max_new_tokens)
     * ids; clip b's input after its g-th token is forced[b·max_new_tokens +
     * g], while its tokens (and kept logits) are each step's own argmax and
     * scores; EOS does not stop a forced clip. Needs max_new_tokens > 0 (the
     * row stride). Parity along a reference's path, on every device. */
    const int32_t *forced;
} ct_asr_request;

ct_asr_request ct_asr_default_request(void);

typedef struct ct_asr_clip {
    char *text; /* UTF-8, specials dropped, stripped */
    int32_t *tokens; /* generated ids after the prompt, EOS included when produced */
    int n_tokens;
    ct_stop_reason stop;
    int feature_frames; /* valid mel frames */
    float *features;    /* (feature_frames, n_mels) when keep_features */
    int encoder_frames; /* valid encoder frames */
    float *encoder;     /* (encoder_frames, d_enc) when keep_encoder */
    float *logits;      /* (n_tokens, vocab) when keep_logits */
} ct_asr_clip;

typedef struct ct_asr_result {
    int n;
    ct_asr_clip *clips;
    double seconds_mel, seconds_encoder, seconds_decoder; /* wall clock */
    double cpu_mel, cpu_encoder, cpu_decoder; /* process CPU time (all threads) */
    double audio_seconds;
    size_t arena_bytes; /* activation + workspace arenas held */
} ct_asr_result;

typedef struct ct_asr ct_asr;

/* dir: a checkpoint directory of either layout (config.json, weights,
 * tokenizer.json). */
ct_status ct_asr_open(const char *dir, const ct_asr_options *opts, ct_asr **out);
void ct_asr_free(ct_asr *asr);

/* Whether a device can run a model with these weights, before loading one:
 * CT_OK, or CT_ERR_UNSUPPORTED saying why ("built without CUDA", "no CUDA
 * device found (...)", a precision the device's backend lacks). */
ct_status ct_asr_device_check(const char *device, ct_dtype weight_dtype);

const ct_model_config *ct_asr_config(const ct_asr *asr);
const ct_tokenizer *ct_asr_tokenizer(const ct_asr *asr);
const ct_asr_weights *ct_asr_model_weights(const ct_asr *asr);
ct_backend *ct_asr_backend(ct_asr *asr);

/* Whether lang is one of the model's languages: the config's
 * supported_languages when it lists any (the tokenizer must then have
 * <|lang|>), else the tokenizer's language tokens (<|xx|>, two lowercase
 * letters). CT_ERR_INVALID_ARG "unsupported language "X": the model's
 * languages are a,b,c" otherwise. Every transcription checks each clip's
 * language this way; callers validate a --language up front with it. */
ct_status ct_asr_language_check(const ct_model_config *cfg, const ct_tokenizer *tok, const char *lang);
ct_status ct_asr_check_language(const ct_asr *asr, const char *lang);
/* The checked 10-token decoder prompt (model/tokenizer.h ct_tokenizer_prompt). */
ct_status ct_asr_prompt(const ct_model_config *cfg, const ct_tokenizer *tok, const char *lang, int punctuation,
                        int32_t *ids, int cap, int *n);

ct_status ct_asr_transcribe(ct_asr *asr, const float *const *clips, const size_t *n_samples, int batch,
                            const ct_asr_request *req, ct_asr_result *out);
void ct_asr_result_free(ct_asr_result *res);

#endif
