/* cuda_asr.h — the whole Cohere ASR model on one CUDA device, bf16 weights
 * and activations with fp32 accumulation, fp32 residual stream, norms and
 * softmax: mel frontend (from PCM in host memory) → subsampling → Conformer
 * encoder → decoder with device KV caches → greedy tokens, for a batch.
 *
 * Weights come through a lookup callback (NeMo tensor names without the
 * `model.` prefix) so that this file depends on no checkpoint reader; the
 * callback's data must stay valid during ct_cuda_asr_create only. Every
 * shape is derived from the tensors. One batch runs at a time per model.
 */
#ifndef CT_COMPUTE_CUDA_ASR_H
#define CT_COMPUTE_CUDA_ASR_H

#include "compute/cuda/ct_cuda.h"
#include "core/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_cuda_weight {
    ct_dtype dtype;
    int ndim;
    int64_t shape[8];
    const void *data; /* host memory, row-major */
} ct_cuda_weight;
/* CT_ERR_NOT_FOUND (quietly) when the tensor does not exist. */
typedef ct_status (*ct_cuda_weight_fn)(void *ctx, const char *name, ct_cuda_weight *out);

typedef struct ct_cuda_asr ct_cuda_asr;

typedef struct ct_cuda_asr_dims {
    int n_mels, sub_channels, enc_layers, d_enc, enc_heads, enc_ff, conv_kernel;
    int dec_layers, d_dec, dec_heads, dec_ff, vocab, max_pos;
} ct_cuda_asr_dims;

ct_status ct_cuda_asr_create(ct_cuda *c, ct_cuda_weight_fn get, void *ctx, ct_cuda_asr **out);
/* The same with the decoder's head count from the model config (0: d_dec/128,
 * the released model's split; the encoder's comes from pos_bias_u). */
ct_status ct_cuda_asr_create_heads(ct_cuda *c, ct_cuda_weight_fn get, void *ctx, int dec_heads, ct_cuda_asr **out);
void ct_cuda_asr_free(ct_cuda_asr *m);
const ct_cuda_asr_dims *ct_cuda_asr_get_dims(const ct_cuda_asr *m);
size_t ct_cuda_asr_weight_bytes(const ct_cuda_asr *m);

typedef struct ct_cuda_asr_request {
    int batch;
    /* Either PCM (16 kHz mono float, host memory; dither is not applied) ... */
    const float *const *pcm;
    const size_t *n_samples;
    /* ... or ready features (batch, T_feat, n_mels) fp32 with valid lengths. */
    const float *features;
    const int *feature_lengths;
    int T_feat;
    const int32_t *prompt; /* prompt_len ids, the same for every row */
    int prompt_len;
    int max_new, min_new; /* generated tokens: at most / eos suppressed before */
    const int *row_new;   /* or NULL; else exactly row_new[b] ≤ max_new tokens for row b (benchmarks) */
    const int32_t *forced; /* or NULL; teacher forcing: (batch, max_new) ids, row b's input at generated step g
                            * is forced[b·max_new + g] and tokens hold the argmax at every step (the
                            * prediction given the forced prefix); eos does not end a row. Parity checks
                            * compare along the reference's path this way, immune to earlier near ties. */
    int eos, pad;
    int encoder_only;      /* stop after the encoder (benchmarks) */
    int use_graph;         /* replay decoder steps through a CUDA graph */
} ct_cuda_asr_request;

typedef struct ct_cuda_asr_result {
    /* Filled when non-NULL (host memory the caller owns): */
    int32_t *tokens;     /* (batch, prompt_len + max_new): prompt, generated, then pad */
    int *n_generated;    /* (batch): generated tokens up to and including eos */
    float *encoder_out;  /* (batch, T_enc_cap, d_enc) fp32; rows ≥ the valid length are not meaningful */
    int T_enc_cap;
    float *first_logits; /* (batch, vocab): logits after the last prompt token */
    float *features_out; /* (batch, T_feat_cap, n_mels) fp32 from the GPU mel frontend */
    int T_feat_cap;
    /* Always filled: */
    int T_feat, T_enc;
    int enc_lengths[1024]; /* per row, valid encoder frames (batch ≤ 1024) */
    double mel_s, encoder_s, decoder_s, total_s; /* wall seconds per stage */
    int steps;
    size_t workspace_bytes;
    /* With CT_CUDA_PROFILE=1 in the environment: time per op kind (device
     * events around every launch; adds sync-free overhead only) for the whole
     * encoder and, prefixed dec_, the decoder's first step (eager; the
     * later steps replay as a graph and are not timed per op). */
    int n_prof;
    const char *prof_name[32];
    double prof_ms[32];
} ct_cuda_asr_result;

ct_status ct_cuda_asr_run(ct_cuda_asr *m, const ct_cuda_asr_request *rq, ct_cuda_asr_result *res);

#ifdef __cplusplus
}
#endif
#endif
