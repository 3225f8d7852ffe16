/* gpu_engine.h — the whole-model GPU engine (compute/cuda/cuda_asr.h) behind
 * an interface without CUDA types or CT_HAVE_CUDA, so that src/asr can use it
 * in every build. In a build without CUDA every call answers
 * CT_ERR_UNSUPPORTED "built without CUDA"; with CUDA but no usable device,
 * create answers CT_ERR_UNSUPPORTED naming why (no driver, no device, too old).
 *
 * The engine computes in bf16 (fp32 accumulation, residual stream, norms and
 * softmax); weights of any float dtype are converted at load. One batch runs
 * at a time per engine; every row of a batch gets the same prompt.
 */
#ifndef CT_COMPUTE_GPU_ENGINE_H
#define CT_COMPUTE_GPU_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "cohere_transcribe.h"
#include "core/dtype.h"

/* A host tensor by NeMo name (no "model." prefix); data borrowed, valid
 * during ct_gpu_engine_create only. */
typedef struct ct_gpu_weight {
    ct_dtype dtype;
    int ndim;
    int64_t shape[8];
    const void *data;
} ct_gpu_weight;
/* Fill *out and return 1 when the tensor exists, 0 when it does not. */
typedef int (*ct_gpu_weight_fn)(void *ctx, const char *name, ct_gpu_weight *out);

typedef struct ct_gpu_engine ct_gpu_engine;

typedef struct ct_gpu_dims {
    int n_mels, d_enc, vocab, max_pos;
} ct_gpu_dims;

/* 1 when this build has the CUDA engine compiled in. */
int ct_gpu_engine_compiled(void);
/* 1 when a usable device exists; else 0 with the reason in *why (static). */
int ct_gpu_engine_device_present(const char **why);

/* dec_heads: the decoder's head count from the config (0: d_dec / 128). */
ct_status ct_gpu_engine_create(ct_gpu_weight_fn get, void *ctx, int dec_heads, ct_gpu_engine **out);
void ct_gpu_engine_free(ct_gpu_engine *e);
ct_gpu_dims ct_gpu_engine_dims(const ct_gpu_engine *e);
size_t ct_gpu_engine_weight_bytes(const ct_gpu_engine *e);

typedef struct ct_gpu_request {
    int batch; /* 1..1024 */
    /* Either PCM (16 kHz mono float, host memory; the GPU mel has no dither) ... */
    const float *const *pcm;
    const size_t *n_samples; /* each ≥ 320 */
    /* ... or features (batch, T_feat, n_mels) fp32 in host memory, valid lengths. */
    const float *features;
    const int *feature_lengths;
    int T_feat;
    const int32_t *prompt; /* prompt_len ids, the same for every row */
    int prompt_len;
    int max_new;       /* at most this many generated tokens per row */
    int force_max_new; /* 1: every row generates exactly max_new (EOS ignored) */
    const int *row_new; /* with force_max_new: NULL, or (batch) row b generates exactly row_new[b] ≤ max_new */
    int eos, pad;
} ct_gpu_request;

typedef struct ct_gpu_result {
    /* Filled when non-NULL (host memory the caller owns): */
    int32_t *tokens;     /* (batch, prompt_len + max_new): prompt, generated, then pad */
    int *n_generated;    /* (batch): generated tokens up to and including EOS */
    int *enc_lengths;    /* (batch): valid encoder frames */
    float *encoder_out;  /* (batch, T_enc_cap, d_enc) */
    int T_enc_cap;
    float *features_out; /* (batch, T_feat_cap, n_mels), the features the encoder saw */
    int T_feat_cap;
    /* Always filled: */
    int T_feat, T_enc;
    double mel_s, encoder_s, decoder_s; /* wall seconds per stage */
} ct_gpu_result;

/* Padded frame counts the engine will use for a batch whose longest clip
 * has n samples (features: 1 + n/160; encoder: three stride-2 convs). */
int ct_gpu_engine_feature_frames(size_t n_samples_max);
int ct_gpu_engine_encoder_frames(int feature_frames);

ct_status ct_gpu_engine_run(ct_gpu_engine *e, const ct_gpu_request *rq, ct_gpu_result *res);

/* An engine over caller-supplied functions, in every build: lets tests drive
 * the host side (src/asr/asr_gpu.c) with a scripted engine and no device. */
typedef struct ct_gpu_engine_ops {
    ct_status (*run)(void *impl, const ct_gpu_request *rq, ct_gpu_result *res);
    ct_gpu_dims dims;
} ct_gpu_engine_ops;
ct_status ct_gpu_engine_wrap(const ct_gpu_engine_ops *ops, void *impl, ct_gpu_engine **out);

#endif
