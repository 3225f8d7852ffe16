/* cuda_asr_impl.h — the CUDA model's private structs, shared by
 * cuda_asr.cu (weight upload) and cuda_asr_run.cu (a batch's forward pass).
 */
#ifndef CT_CUDA_ASR_IMPL_H
#define CT_CUDA_ASR_IMPL_H

#include "compute/cuda/cuda_asr.h"
#include "compute/cuda/cuda_internal.h"

typedef struct { float *w, *b; } ln_t;
typedef struct { uint16_t *w; void *b; int n, k; } lin_t; /* bias type = GEMM output type */

typedef struct {
    ln_t ln_ff1, ln_att, ln_conv, ln_ff2, ln_out;
    lin_t ff1a, ff1b, ff2a, ff2b, qkv, pos, out, pw1, pw2;
    float *u, *v, *dw_w, *dw_b;
} enc_layer;

typedef struct {
    ln_t ln1, ln2, ln3;
    lin_t qkv, so, q, co, fc1, fc2;
} dec_layer;

struct ct_cuda_asr {
    ct_cuda *c;
    ct_cuda_asr_dims d;
    float *conv0_w, *conv0_b, *dw1_w, *dw1_b, *dw2_w, *dw2_b;
    lin_t pw1, pw2, sub_out;
    enc_layer *enc;
    lin_t proj, cross_kv; /* cross_kv: all layers' K,V weights stacked (L·2·d, d) */
    uint16_t *tok_emb, *pos_emb;
    ln_t emb_ln, final_ln;
    dec_layer *dec;
    lin_t head;
    float *mel_fb_t, *dft, *window; /* (257,128), (400,514), (400) */
    size_t weight_bytes;
    float *pinned; /* PCM staging, grown on demand */
    size_t pinned_floats;
};

#endif
