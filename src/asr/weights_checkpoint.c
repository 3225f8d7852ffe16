/* weights_checkpoint.c — the bridge from an opened checkpoint (config +
 * mmapped tensors, model/checkpoint.h) to ct_asr_weights. */
#include <string.h>

#include "asr/weights.h"
#include "model/checkpoint.h"

ct_status ct_asr_hparams_from_config(const ct_model_config *c, ct_asr_hparams *hp) {
    memset(hp, 0, sizeof *hp);
    hp->n_mels = c->n_mels;
    hp->sub_channels = c->subsampling_channels;
    hp->enc_layers = c->enc_layers;
    hp->d_enc = c->enc_d_model;
    hp->enc_heads = c->enc_heads;
    hp->enc_ff = c->enc_ff;
    hp->conv_kernel = c->enc_conv_kernel;
    hp->xscaling = c->enc_scale_input > 0;
    hp->dec_layers = c->dec_layers;
    hp->d_dec = c->dec_d_model;
    hp->dec_heads = c->dec_heads;
    hp->dec_ff = c->dec_ff;
    hp->max_pos = c->dec_max_positions;
    hp->vocab = c->vocab_size;
    if (c->subsampling_factor != -1 && c->subsampling_factor != 8)
        return ct_fail(CT_ERR_UNSUPPORTED, "config: subsampling factor %d (the engine has three stride-2 convs: 8)",
                       c->subsampling_factor);
    return CT_OK;
}

typedef struct source {
    const ct_checkpoint *ck;
    int borrow;
} source;

static int lookup(void *ctx, const char *name, ct_host_tensor *out) {
    const source *src = ctx;
    const ct_st_tensor *t = ct_checkpoint_tensor(src->ck, name);
    if (!t) return 0;
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    for (int i = 0; i < t->ndim && i < 8; i++) out->shape[i] = t->shape[i];
    out->data = t->data;
    out->file_backed = ct_checkpoint_file_backed(src->ck);
    /* the mapping lives until ct_checkpoint_free, which the caller of
     * ct_asr_weights_map_checkpoint calls after ct_asr_weights_free */
    out->borrowable = src->borrow && out->file_backed;
    out->check_finite = !ct_checkpoint_finite_checked(src->ck);
    return 1;
}

static ct_status from_checkpoint(ct_backend *be, const ct_checkpoint *ck, ct_dtype wdtype, const ct_q8_plan *q8,
                                 int borrow, ct_asr_weights *out) {
    ct_asr_hparams hp;
    CT_TRY(ct_asr_hparams_from_config(ct_checkpoint_config(ck), &hp));
    source src = {ck, borrow};
    ct_status s = ct_asr_weights_load(be, lookup, &src, &hp, wdtype, q8, out);
    if (s != CT_OK) return ct_fail_wrap(s, "%s", ct_checkpoint_dir(ck));
    return CT_OK;
}

ct_status ct_asr_weights_from_checkpoint(ct_backend *be, const ct_checkpoint *ck, ct_dtype wdtype,
                                         ct_asr_weights *out) {
    return from_checkpoint(be, ck, wdtype, NULL, 0, out);
}

ct_status ct_asr_weights_map_checkpoint(ct_backend *be, const ct_checkpoint *ck, ct_dtype wdtype,
                                        ct_asr_weights *out) {
    return from_checkpoint(be, ck, wdtype, NULL, 1, out);
}

ct_status ct_asr_weights_map_checkpoint_plan(ct_backend *be, const ct_checkpoint *ck, ct_dtype wdtype,
                                             const ct_q8_plan *q8, ct_asr_weights *out) {
    return from_checkpoint(be, ck, wdtype, q8, 1, out);
}
