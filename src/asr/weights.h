/* weights.h — the Cohere ASR model's parameters on a backend, loaded once
 * from host tensors named as in MODEL.md (normalised NeMo names, no "model."
 * prefix) through a lookup callback, so this module does not depend on where
 * the tensors come from (checkpoint directory, test fixtures, GGUF later).
 *
 * Dense weights (every Linear and pointwise conv) are stored in the chosen
 * weight dtype (f32, bf16 or f16); everything else in f32. int8 (Q8, CPU):
 * the encoder's and decoder's Linear/pointwise weights that the precision
 * plan (ct_q8_plan below) does not keep in float are quantised per row at
 * load; the subsampling convs and projection, the embeddings, the
 * vocabulary projection and the plan's kept kinds keep the checkpoint's
 * float type (used in place). Q8_0 (ggml's per-block int8, CPU): the same
 * with blocks of 32 and its own plan (ct_q80_default_plan); a Q8_0 matrix
 * from a GGUF stays Q8_0 (used in place) whatever wdtype says, and Q8_0
 * embedding tables are dequantised to f32. BatchNorm is folded
 * into the depthwise conv at load. Hyper-parameters come from the config and
 * are cross-checked against every tensor's shape.
 */
#ifndef CT_ASR_WEIGHTS_H
#define CT_ASR_WEIGHTS_H

#include "compute/backend.h"

typedef struct ct_asr_hparams {
    int n_mels;       /* 128 */
    int sub_channels; /* subsampling conv channels C */
    int enc_layers, d_enc, enc_heads, enc_ff, conv_kernel;
    int xscaling;     /* multiply subsampling output by sqrt(d_enc) */
    int dec_layers, d_dec, dec_heads, dec_ff, max_pos;
    int vocab;
} ct_asr_hparams;

/* A host tensor as the lookup callback returns it (data borrowed). */
typedef struct ct_host_tensor {
    ct_dtype dtype;
    int ndim;
    int64_t shape[8];
    const void *data;
    int file_backed; /* data is a read-only file mapping: its pages may be
                        dropped (madvise) once converted, to bound peak RSS */
    int borrowable;  /* data stays valid and unchanged while the weights live:
                        a tensor already in its compute dtype is used in place
                        (zero-copy, ct_tensor_borrow) instead of copied */
    int check_finite; /* refuse NaN/infinity in it (checked in the same pass
                         that converts it; a borrowed tensor is scanned once) */
} ct_host_tensor;

/* Fill *out and return 1 when the tensor exists, 0 when it does not. */
typedef int (*ct_weight_lookup_fn)(void *ctx, const char *name, ct_host_tensor *out);

typedef struct ct_enc_layer {
    ct_tensor ln_ff1_g, ln_ff1_b, ff1_w1, ff1_b1, ff1_w2, ff1_b2;
    ct_tensor ln_att_g, ln_att_b, wq, bq, wk, bk, wv, bv, wo, bo, wpos, pos_u, pos_v;
    ct_tensor ln_conv_g, ln_conv_b, pw1_w, pw1_b, dw_w, dw_b, pw2_w, pw2_b; /* dw: BN folded, (d,K) */
    ct_tensor ln_ff2_g, ln_ff2_b, ff2_w1, ff2_b1, ff2_w2, ff2_b2;
    ct_tensor ln_out_g, ln_out_b;
    /* Where the backend has the fused encoder ops (compute/backend.h,
     * version 5; not the CPU): the attention's one packed projection,
     * wqkv (3d, d) = [wq; wk; wv] (wq, wk, wv are then views of its rows),
     * bqkv (3d) = [bq + pos_u | bk | bv], pos_c (H, Dh) = pos_v − pos_u
     * (attn_relpos_qkv's layout). Empty elsewhere. */
    ct_tensor wqkv, bqkv, pos_c;
} ct_enc_layer;

typedef struct ct_dec_layer {
    ct_tensor ln1_g, ln1_b, sq_w, sq_b, sk_w, sk_b, sv_w, sv_b, so_w, so_b;
    ct_tensor ln2_g, ln2_b, cq_w, cq_b, ck_w, ck_b, cv_w, cv_b, co_w, co_b;
    ct_tensor ln3_g, ln3_b, fc1_w, fc1_b, fc2_w, fc2_b;
    /* Where the backend has the fused decoder step (compute/backend.h,
     * version 6; not the CPU): the self-attention's one packed projection,
     * sqkv_w (3d, d) = [sq_w; sk_w; sv_w] (those are then views of its
     * rows), sqkv_b (3d) = [sq_b | sk_b | sv_b]. Empty elsewhere. */
    ct_tensor sqkv_w, sqkv_b;
} ct_dec_layer;

/* int8 (Q8) precision plan: the kinds of dense weight that stay in the
 * checkpoint's float type under wdtype Q8 (the others are quantised). The
 * default plan and why: docs/PERFORMANCE.md, "int8 accuracy". */
enum {
    CT_Q8_ENC_FF1 = 1u << 0,   /* encoder feed_forward1/2.linear1 (d → ff) */
    CT_Q8_ENC_FF2 = 1u << 1,   /* encoder feed_forward1/2.linear2 (ff → d) */
    CT_Q8_ENC_QK = 1u << 2,    /* linear_q, linear_k */
    CT_Q8_ENC_V = 1u << 3,     /* linear_v */
    CT_Q8_ENC_OUT = 1u << 4,   /* linear_out */
    CT_Q8_ENC_POS = 1u << 5,   /* linear_pos */
    CT_Q8_ENC_PW1 = 1u << 6,   /* conv.pointwise_conv1 (d → 2d, before the GLU) */
    CT_Q8_ENC_PW2 = 1u << 7,   /* conv.pointwise_conv2 */
    CT_Q8_PROJ = 1u << 8,      /* encoder_decoder_proj */
    CT_Q8_DEC_SELF = 1u << 9,  /* decoder self-attention q, k, v, out */
    CT_Q8_DEC_CROSS = 1u << 10, /* decoder cross-attention q, k, v, out */
    CT_Q8_DEC_FF = 1u << 11,   /* decoder dense_in, dense_out */
    CT_Q8_KINDS = 12,
    CT_Q8_PLAN_SET = 1u << 31, /* marks an explicit plan (so "keep none" is expressible) */
};
/* The kinds' names as bench_accuracy and the plan's description use them. */
const char *ct_q8_kind_name(int bit);
/* A plan: the kinds in `all` stay float in every layer; those in `part`
 * only in encoder layers from ≤ i < to. all without CT_Q8_PLAN_SET: the
 * default plan (for a model of enc_layers encoder layers). */
typedef struct ct_q8_plan {
    unsigned all, part;
    int from, to;
} ct_q8_plan;
ct_q8_plan ct_q8_default_plan(int enc_layers);
/* The default plan for per-block Q8_0 weights (the same kinds, a smaller
 * rounding error, so fewer kept in float: docs/PERFORMANCE.md, "Q8_0"). */
ct_q8_plan ct_q80_default_plan(int enc_layers);

typedef struct ct_asr_weights {
    ct_asr_hparams hp;
    ct_dtype wdtype;
    ct_q8_plan q8; /* under Q8: the kinds kept in float (the plan in effect) */
    /* subsampling: conv0 (C,1,3,3), dw1/dw2 (C,1,3,3), pw1/pw2 (C,C), out (d, C·16) */
    ct_tensor c0_w, c0_b, dw1_w, dw1_b, pw1_w, pw1_b, dw2_w, dw2_b, pw2_w, pw2_b, sub_w, sub_b;
    /* Where the backend has the fused subsampling (compute/backend.h,
     * version 6; not the CPU): sub_w's columns reordered from c·F3 + f to
     * f·C + c, the channels-last layout the op's last map has. Empty
     * elsewhere. */
    ct_tensor sub_w_cl;
    ct_enc_layer *enc; /* enc_layers */
    ct_tensor proj_w, proj_b; /* (d_dec, d_enc) */
    ct_tensor tok_emb, pos_emb, emb_ln_g, emb_ln_b; /* tok (V,d), pos (max_pos,d), f32 */
    ct_dec_layer *dec; /* dec_layers */
    ct_tensor final_ln_g, final_ln_b, head_w, head_b; /* head (V, d_dec) */
    size_t bytes; /* parameter bytes (owned + borrowed) */
    size_t borrowed_bytes; /* of which used in place from the source (no copy) */
} ct_asr_weights;


/* Load and convert every tensor; fails naming the tensor that is missing or
 * has the wrong shape. wdtype: F32, BF16, F16, Q8 or Q8_0 for the dense weights;
 * q8: under Q8, the kinds kept in float (NULL or all == 0: the default plan). */
ct_status ct_asr_weights_load(ct_backend *be, ct_weight_lookup_fn lookup, void *ctx, const ct_asr_hparams *hp,
                              ct_dtype wdtype, const ct_q8_plan *q8, ct_asr_weights *out);
void ct_asr_weights_free(ct_asr_weights *w);



/* From an opened checkpoint (model/checkpoint.h): hyper-parameters from its
 * completed config, tensors by normalised name, every tensor copied (or
 * converted) into backend memory, file pages dropped after conversion, so
 * the checkpoint may be freed right after. When the checkpoint was opened
 * unchecked (ct_checkpoint_open_unchecked), every tensor is checked for
 * NaN/infinity here, in the pass that converts it. Defined in
 * asr/weights_checkpoint.c.
 *
 * ct_asr_weights_map_checkpoint: the same, but zero-copy: on a host backend
 * a tensor already in its compute dtype is used in place from the file
 * mapping (bf16 weights for bf16, everything f32 for f32), so the
 * checkpoint must outlive the weights (ct_asr_weights_free first). */
struct ct_checkpoint;
struct ct_model_config;
ct_status ct_asr_hparams_from_config(const struct ct_model_config *cfg, ct_asr_hparams *hp);
ct_status ct_asr_weights_from_checkpoint(ct_backend *be, const struct ct_checkpoint *ck, ct_dtype wdtype,
                                         ct_asr_weights *out);
ct_status ct_asr_weights_map_checkpoint(ct_backend *be, const struct ct_checkpoint *ck, ct_dtype wdtype,
                                        ct_asr_weights *out);
/* map_checkpoint with an int8 precision plan (q8 as ct_asr_weights_load). */
ct_status ct_asr_weights_map_checkpoint_plan(ct_backend *be, const struct ct_checkpoint *ck, ct_dtype wdtype,
                                             const ct_q8_plan *q8, ct_asr_weights *out);

#endif
