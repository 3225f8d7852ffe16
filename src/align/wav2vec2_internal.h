/* wav2vec2_internal.h — the loaded aligner network, shared by wav2vec2.c
 * (config, weights) and wav2vec2_run.c (forward, emissions). */
#ifndef CT_ALIGN_WAV2VEC2_INTERNAL_H
#define CT_ALIGN_WAV2VEC2_INTERNAL_H

#include "align/wav2vec2.h"

typedef struct w2v2_layer {
    float *ln1_g, *ln1_b, *ln2_g, *ln2_b;
    ct_tensor q, k, v, o, ff1, ff2;
    float *bq, *bk, *bv, *bo, *bff1, *bff2;
} w2v2_layer;

struct ct_w2v2 {
    ct_backend *be;
    ct_w2v2_config cfg;
    ct_tensor conv_w[CT_W2V2_MAX_CONV];
    float *conv_b[CT_W2V2_MAX_CONV], *conv_ln_g[CT_W2V2_MAX_CONV], *conv_ln_b[CT_W2V2_MAX_CONV];
    float *fp_ln_g, *fp_ln_b, *fp_b, *pos_w, *pos_b, *enc_ln_g, *enc_ln_b, *head_b;
    ct_tensor fp_w, head_w;
    w2v2_layer *layer;
    void **owned; /* backend buffers of the small parameters */
    size_t n_owned, cap_owned;
    int batch_cap; /* learned after an out-of-memory (0: none yet) */
    ct_dtype attn_dtype; /* the attention products' type: BF16 with bf16 matrices, else F32 */
    void *fwd;           /* the forward's buffers kept on a device backend (wav2vec2_run.c), or NULL */
    int fwd_nb;          /* ... for up to fwd_nb rows */
    size_t fwd_n;        /* ... of fwd_n samples */
    size_t device_reserve; /* ct_w2v2_options.device_reserve_bytes */
};

/* The window batch (≤ want) whose forward buffers fit in the device's free
 * memory, counting the kept buffers as free, less the reserve (0: an
 * eighth of the device's memory); want itself on a backend without a
 * stream (the CPU) or without memory_info. At least 1: the OOM halving
 * stays behind it. */
int ct_w2v2_budget_batch(ct_w2v2 *m, int want, size_t n);

/* Free the kept forward buffers (wav2vec2_run.c). */
void ct_w2v2_release_buffers(ct_w2v2 *m);

#endif
