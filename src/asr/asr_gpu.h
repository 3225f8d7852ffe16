/* asr_gpu.h — the "cuda" device of the batch entry point (asr.h): opening the
 * whole-model GPU engine (compute/gpu_engine.h) from a checkpoint and running
 * a batch through it. Private to src/asr; asr.c dispatches here. */
#ifndef CT_ASR_ASR_GPU_H
#define CT_ASR_ASR_GPU_H

#include "asr/asr.h"
#include "asr/mel.h"
#include "compute/gpu_engine.h"
#include "model/checkpoint.h"

/* Fails with CT_ERR_UNSUPPORTED when the build has no CUDA ("built without
 * CUDA") or no device is usable ("no CUDA device found"), or when wdtype is
 * not BF16 (the engine computes in bf16 only). Call before reading weights. */
ct_status ct_asr_gpu_check(ct_dtype wdtype);

/* Engine from the checkpoint's tensors (normalised names) and config
 * (decoder heads); cross-checks the engine's dimensions against hp. */
ct_status ct_asr_gpu_open(const ct_checkpoint *ck, const ct_asr_hparams *hp, ct_gpu_engine **out);

typedef struct ct_asr_gpu_ctx {
    ct_gpu_engine *engine;
    const ct_tokenizer *tok;
    ct_mel *mel; /* CPU mel: used when dither is requested */
    const ct_asr_hparams *hp;
    int32_t eos_id, pad_id;
    const ct_model_config *cfg; /* languages (NULL: the tokenizer's) */
} ct_asr_gpu_ctx;

ct_status ct_asr_gpu_transcribe(const ct_asr_gpu_ctx *g, const float *const *clips, const size_t *n_samples, int B,
                                const ct_asr_request *req, ct_asr_result *out);

#endif
