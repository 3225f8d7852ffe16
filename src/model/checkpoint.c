/* checkpoint.c — open a model directory (or GGUF file), normalise tensor
 * names, derive sizes from tensor shapes, cross-check them with the config
 * and verify every tensor the model uses; see checkpoint.h. Loads no data:
 * the engine converts weights from the mapping at its own load step.
 */
#include "model/checkpoint.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/str.h"
#include "core/log.h"
#include "model/checkpoint_internal.h"

struct ct_checkpoint {
    char *dir;
    ct_model_config cfg;
    ct_safetensors *st;
    void *source;                 /* GGUF handle when opened from one */
    void (*source_free)(void *);
    ct_st_tensor *t;              /* normalised copies, sorted by name */
    size_t n;
    unsigned char *used;          /* per tensor: checked by verify_all */
    int file_backed;              /* tensor data lives in read-only file mappings */
    int finite_checked;           /* check_finite ran (ct_checkpoint_open); else the loader checks */
};

static int cmp_tensor(const void *a, const void *b) {
    return strcmp(((const ct_st_tensor *)a)->name, ((const ct_st_tensor *)b)->name);
}

const ct_st_tensor *ct_checkpoint_tensor(const ct_checkpoint *ck, const char *name) {
    size_t lo = 0, hi = ck->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ck->t[mid].name, name);
        if (c == 0) return &ck->t[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static void fmt_shape(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < ndim && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

ct_status ct_checkpoint_expect(const ct_checkpoint *ck, const char *name, int ndim, const int64_t *shape,
                               const ct_st_tensor **out) {
    if (out) *out = NULL;
    const ct_st_tensor *t = ct_checkpoint_tensor(ck, name);
    if (!t) return ct_fail(CT_ERR_NOT_FOUND, "%s: tensor '%s' is missing", ck->dir, name);
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char want[160], got[160];
        fmt_shape(want, sizeof want, ndim, shape);
        fmt_shape(got, sizeof got, t->ndim, t->shape);
        return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected %s", ck->dir, name, got, want);
    }
    if (out) *out = t;
    return CT_OK;
}

/* Expect a float tensor of up to 4 dims given inline. */
static ct_status want(ct_checkpoint *ck, const char *name, int ndim, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t s[4] = {a, b, c, d};
    const ct_st_tensor *t;
    CT_TRY(ct_checkpoint_expect(ck, name, ndim, s, &t));
    ck->used[t - ck->t] = 1;
    if (t->dtype != CT_DTYPE_F32 && t->dtype != CT_DTYPE_F16 && t->dtype != CT_DTYPE_BF16 &&
        t->dtype != CT_DTYPE_Q8_0)
        return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' has dtype %s; weights must be F32, F16, BF16 or Q8_0", ck->dir,
                       name, ct_dtype_name(t->dtype));
    return CT_OK;
}

static const ct_st_tensor *need(const ct_checkpoint *ck, const char *name, int ndim, ct_status *s) {
    const ct_st_tensor *t = ct_checkpoint_tensor(ck, name);
    if (!t) {
        *s = ct_fail(CT_ERR_NOT_FOUND, "%s: tensor '%s' is missing", ck->dir, name);
        return NULL;
    }
    if (t->ndim != ndim) {
        *s = ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' has %d dimensions, expected %d", ck->dir, name, t->ndim, ndim);
        return NULL;
    }
    *s = CT_OK;
    return t;
}

/* Set *cfg to the size a tensor implies, refusing a config that disagrees. */
static ct_status agree(const ct_checkpoint *ck, int *cfg, int64_t derived, const char *what, const char *tensor) {
    if (derived <= 0 || derived > (1 << 24))
        return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' implies %s = %lld, which is not a valid size", ck->dir, tensor,
                       what, (long long)derived);
    if (*cfg != -1 && *cfg != derived)
        return ct_fail(CT_ERR_FORMAT, "%s: the config says %s = %d but tensor '%s' implies %lld", ck->dir, what, *cfg,
                       tensor, (long long)derived);
    *cfg = (int)derived;
    return CT_OK;
}

/* 1 + the largest N of "<prefix>N." among the tensor names; 0 if none. */
static int count_layers(const ct_checkpoint *ck, const char *prefix) {
    size_t pl = strlen(prefix);
    long best = -1;
    for (size_t i = 0; i < ck->n; i++) {
        const char *nm = ck->t[i].name;
        if (strncmp(nm, prefix, pl) != 0) continue;
        char *end;
        long v = strtol(nm + pl, &end, 10);
        if (end != nm + pl && *end == '.' && v >= 0 && v < 100000 && v > best) best = v;
    }
    return (int)(best + 1);
}

static int sub_len(int x) { return (x - 1) / 2 + 1; } /* k3 s2 p1 */

/* Derive every size from the tensors and cross-check the config. */
static ct_status derive(ct_checkpoint *ck) {
    ct_model_config *c = &ck->cfg;
    ct_status s;
    const ct_st_tensor *t;
    const char *nm;

    nm = "encoder.pre_encode.conv.0.weight";
    if (!(t = need(ck, nm, 4, &s))) return s;
    CT_TRY(agree(ck, &c->subsampling_channels, t->shape[0], "subsampling channels", nm));
    nm = "encoder.pre_encode.out.weight";
    if (!(t = need(ck, nm, 2, &s))) return s;
    CT_TRY(agree(ck, &c->enc_d_model, t->shape[0], "encoder d_model", nm));
    if (c->n_mels == -1) c->n_mels = 128;
    int64_t f = sub_len(sub_len(sub_len(c->n_mels)));
    if (t->shape[1] != c->subsampling_channels * f)
        return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' has %lld inputs, expected %d channels × %lld mel rows (%d mels)",
                       ck->dir, nm, (long long)t->shape[1], c->subsampling_channels, (long long)f, c->n_mels);
    /* three stride-2 convolutions */
    CT_TRY(agree(ck, &c->subsampling_factor, 8, "subsampling factor", "encoder.pre_encode.conv.*"));

    int nl = count_layers(ck, "encoder.layers.");
    if (nl == 0) return ct_fail(CT_ERR_NOT_FOUND, "%s: tensor 'encoder.layers.0.*' is missing (no encoder layers)", ck->dir);
    CT_TRY(agree(ck, &c->enc_layers, nl, "encoder layers", "encoder.layers.N"));
    nm = "encoder.layers.0.self_attn.pos_bias_u";
    if (!(t = need(ck, nm, 2, &s))) return s;
    CT_TRY(agree(ck, &c->enc_heads, t->shape[0], "encoder heads", nm));
    if (t->shape[0] * t->shape[1] != c->enc_d_model)
        return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' [%lld, %lld]: heads × head size != d_model %d", ck->dir, nm,
                       (long long)t->shape[0], (long long)t->shape[1], c->enc_d_model);
    nm = "encoder.layers.0.feed_forward1.linear1.weight";
    if (!(t = need(ck, nm, 2, &s))) return s;
    CT_TRY(agree(ck, &c->enc_ff, t->shape[0], "encoder feed-forward size", nm));
    nm = "encoder.layers.0.conv.depthwise_conv.weight";
    if (!(t = need(ck, nm, 3, &s))) return s;
    CT_TRY(agree(ck, &c->enc_conv_kernel, t->shape[2], "conv kernel size", nm));
    if (c->enc_conv_kernel % 2 == 0)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: tensor '%s': even conv kernel %d is not supported", ck->dir, nm,
                       c->enc_conv_kernel);
    if (c->enc_max_positions == -1) c->enc_max_positions = 5000;

    nm = "transf_decoder._embedding.token_embedding.weight";
    if (!(t = need(ck, nm, 2, &s))) return s;
    CT_TRY(agree(ck, &c->vocab_size, t->shape[0], "vocab size", nm));
    CT_TRY(agree(ck, &c->dec_d_model, t->shape[1], "decoder d_model", nm));
    nm = "transf_decoder._embedding.position_embedding.pos_enc";
    if (!(t = need(ck, nm, 2, &s))) return s;
    CT_TRY(agree(ck, &c->dec_max_positions, t->shape[0], "decoder positions", nm));
    int dl = count_layers(ck, "transf_decoder._decoder.layers.");
    if (dl == 0)
        return ct_fail(CT_ERR_NOT_FOUND, "%s: tensor 'transf_decoder._decoder.layers.0.*' is missing (no decoder layers)",
                       ck->dir);
    CT_TRY(agree(ck, &c->dec_layers, dl, "decoder layers", "transf_decoder._decoder.layers.N"));
    nm = "transf_decoder._decoder.layers.0.third_sub_layer.dense_in.weight";
    if (!(t = need(ck, nm, 2, &s))) return s;
    CT_TRY(agree(ck, &c->dec_ff, t->shape[0], "decoder feed-forward size", nm));
    /* No tensor carries the decoder head count: it must come from the config. */
    if (c->dec_heads == -1)
        return ct_fail(CT_ERR_FORMAT, "%s: the config does not give the decoder's attention heads", ck->dir);
    if (c->dec_d_model % c->dec_heads != 0)
        return ct_fail(CT_ERR_FORMAT, "%s: decoder d_model %d is not divisible by %d heads", ck->dir, c->dec_d_model,
                       c->dec_heads);
    if (c->sample_rate != 16000 || c->n_fft != 512 || c->win_length != 400 || c->hop_length != 160)
        return ct_fail(CT_ERR_UNSUPPORTED,
                       "%s: frontend %d Hz, n_fft %d, window %d, hop %d: only 16000 Hz, 512, 400, 160 is supported",
                       ck->dir, c->sample_rate, c->n_fft, c->win_length, c->hop_length);
    int *ids[] = {&c->pad_id, &c->eos_id, &c->bos_id, &c->decoder_start_id};
    const char *idn[] = {"pad_token_id", "eos_token_id", "bos_token_id", "decoder_start_token_id"};
    for (int i = 0; i < 4; i++)
        if (*ids[i] >= c->vocab_size)
            return ct_fail(CT_ERR_FORMAT, "%s: %s %d is outside the vocabulary of %d", ck->dir, idn[i], *ids[i],
                           c->vocab_size);
    return CT_OK;
}

/* Every tensor the model uses, with its exact shape. */
static ct_status verify_all(ct_checkpoint *ck) {
    const ct_model_config *c = &ck->cfg;
    const int64_t C = c->subsampling_channels, d = c->enc_d_model, ff = c->enc_ff, H = c->enc_heads,
                  K = c->enc_conv_kernel, dd = c->dec_d_model, dff = c->dec_ff, V = c->vocab_size,
                  P = c->dec_max_positions;
    char n[256];
    const int pw[] = {3, 6}, dw[] = {2, 5};
    CT_TRY(want(ck, "encoder.pre_encode.conv.0.weight", 4, C, 1, 3, 3));
    CT_TRY(want(ck, "encoder.pre_encode.conv.0.bias", 1, C, 0, 0, 0));
    for (int i = 0; i < 2; i++) {
        snprintf(n, sizeof n, "encoder.pre_encode.conv.%d.weight", dw[i]);
        CT_TRY(want(ck, n, 4, C, 1, 3, 3));
        snprintf(n, sizeof n, "encoder.pre_encode.conv.%d.bias", dw[i]);
        CT_TRY(want(ck, n, 1, C, 0, 0, 0));
        snprintf(n, sizeof n, "encoder.pre_encode.conv.%d.weight", pw[i]);
        CT_TRY(want(ck, n, 4, C, C, 1, 1));
        snprintf(n, sizeof n, "encoder.pre_encode.conv.%d.bias", pw[i]);
        CT_TRY(want(ck, n, 1, C, 0, 0, 0));
    }
    const int64_t F = sub_len(sub_len(sub_len(c->n_mels)));
    CT_TRY(want(ck, "encoder.pre_encode.out.weight", 2, d, C * F, 0, 0));
    CT_TRY(want(ck, "encoder.pre_encode.out.bias", 1, d, 0, 0, 0));
    static const char *const norms[] = {"norm_feed_forward1", "norm_self_att", "norm_conv", "norm_feed_forward2",
                                        "norm_out"};
    static const char *const att[] = {"linear_q", "linear_k", "linear_v", "linear_out"};
    static const char *const bn[] = {"weight", "bias", "running_mean", "running_var"};
    for (int l = 0; l < c->enc_layers; l++) {
#define L(fmt, ...) (snprintf(n, sizeof n, "encoder.layers.%d." fmt, l, __VA_ARGS__), n)
        for (int i = 0; i < 5; i++) {
            CT_TRY(want(ck, L("%s.weight", norms[i]), 1, d, 0, 0, 0));
            CT_TRY(want(ck, L("%s.bias", norms[i]), 1, d, 0, 0, 0));
        }
        for (int i = 1; i <= 2; i++) {
            CT_TRY(want(ck, L("feed_forward%d.linear1.weight", i), 2, ff, d, 0, 0));
            CT_TRY(want(ck, L("feed_forward%d.linear1.bias", i), 1, ff, 0, 0, 0));
            CT_TRY(want(ck, L("feed_forward%d.linear2.weight", i), 2, d, ff, 0, 0));
            CT_TRY(want(ck, L("feed_forward%d.linear2.bias", i), 1, d, 0, 0, 0));
        }
        for (int i = 0; i < 4; i++) {
            CT_TRY(want(ck, L("self_attn.%s.weight", att[i]), 2, d, d, 0, 0));
            CT_TRY(want(ck, L("self_attn.%s.bias", att[i]), 1, d, 0, 0, 0));
        }
        CT_TRY(want(ck, L("self_attn.%s.weight", "linear_pos"), 2, d, d, 0, 0));
        CT_TRY(want(ck, L("self_attn.%s", "pos_bias_u"), 2, H, d / H, 0, 0));
        CT_TRY(want(ck, L("self_attn.%s", "pos_bias_v"), 2, H, d / H, 0, 0));
        CT_TRY(want(ck, L("conv.%s.weight", "pointwise_conv1"), 3, 2 * d, d, 1, 0));
        CT_TRY(want(ck, L("conv.%s.bias", "pointwise_conv1"), 1, 2 * d, 0, 0, 0));
        CT_TRY(want(ck, L("conv.%s.weight", "depthwise_conv"), 3, d, 1, K, 0));
        CT_TRY(want(ck, L("conv.%s.bias", "depthwise_conv"), 1, d, 0, 0, 0));
        for (int i = 0; i < 4; i++) CT_TRY(want(ck, L("conv.batch_norm.%s", bn[i]), 1, d, 0, 0, 0));
        CT_TRY(want(ck, L("conv.%s.weight", "pointwise_conv2"), 3, d, d, 1, 0));
        CT_TRY(want(ck, L("conv.%s.bias", "pointwise_conv2"), 1, d, 0, 0, 0));
#undef L
    }
    CT_TRY(want(ck, "encoder_decoder_proj.weight", 2, dd, d, 0, 0));
    CT_TRY(want(ck, "encoder_decoder_proj.bias", 1, dd, 0, 0, 0));
    CT_TRY(want(ck, "transf_decoder._embedding.token_embedding.weight", 2, V, dd, 0, 0));
    CT_TRY(want(ck, "transf_decoder._embedding.position_embedding.pos_enc", 2, P, dd, 0, 0));
    CT_TRY(want(ck, "transf_decoder._embedding.layer_norm.weight", 1, dd, 0, 0, 0));
    CT_TRY(want(ck, "transf_decoder._embedding.layer_norm.bias", 1, dd, 0, 0, 0));
    static const char *const sub[] = {"first_sub_layer", "second_sub_layer"};
    static const char *const proj[] = {"query_net", "key_net", "value_net", "out_projection"};
    for (int l = 0; l < c->dec_layers; l++) {
#define L(fmt, ...) (snprintf(n, sizeof n, "transf_decoder._decoder.layers.%d." fmt, l, __VA_ARGS__), n)
        for (int i = 1; i <= 3; i++) {
            CT_TRY(want(ck, L("layer_norm_%d.weight", i), 1, dd, 0, 0, 0));
            CT_TRY(want(ck, L("layer_norm_%d.bias", i), 1, dd, 0, 0, 0));
        }
        for (int s = 0; s < 2; s++)
            for (int i = 0; i < 4; i++) {
                CT_TRY(want(ck, L("%s.%s.weight", sub[s], proj[i]), 2, dd, dd, 0, 0));
                CT_TRY(want(ck, L("%s.%s.bias", sub[s], proj[i]), 1, dd, 0, 0, 0));
            }
        CT_TRY(want(ck, L("third_sub_layer.%s.weight", "dense_in"), 2, dff, dd, 0, 0));
        CT_TRY(want(ck, L("third_sub_layer.%s.bias", "dense_in"), 1, dff, 0, 0, 0));
        CT_TRY(want(ck, L("third_sub_layer.%s.weight", "dense_out"), 2, dd, dff, 0, 0));
        CT_TRY(want(ck, L("third_sub_layer.%s.bias", "dense_out"), 1, dd, 0, 0, 0));
#undef L
    }
    CT_TRY(want(ck, "transf_decoder._decoder.final_layer_norm.weight", 1, dd, 0, 0, 0));
    CT_TRY(want(ck, "transf_decoder._decoder.final_layer_norm.bias", 1, dd, 0, 0, 0));
    CT_TRY(want(ck, "log_softmax.mlp.layer0.weight", 2, V, dd, 0, 0));
    CT_TRY(want(ck, "log_softmax.mlp.layer0.bias", 1, V, 0, 0, 0));
    return CT_OK;
}

int64_t ct_checkpoint_param_count(const ct_checkpoint *ck) {
    int64_t total = 0;
    for (size_t i = 0; i < ck->n; i++) {
        const char *nm = ck->t[i].name;
        if (ct_str_ends_with(nm, "num_batches_tracked") || strncmp(nm, "preprocessor.", 13) == 0) continue;
        total += ck->t[i].numel;
    }
    return total;
}

/* Tensors the model does not use: the release's frontend tensors and the
 * BatchNorm counters are expected; anything else is logged and ignored, as
 * transformers ignores unexpected keys. */
static void note_unused(const ct_checkpoint *ck) {
    enum { MAX_NAMED = 10 }; /* a file of 200,000 stray tensors gets 11 lines, not 200,000 */
    size_t extra = 0;
    for (size_t i = 0; i < ck->n; i++) {
        const char *nm = ck->t[i].name;
        if (ck->used[i] || strncmp(nm, "preprocessor.", 13) == 0 || ct_str_ends_with(nm, ".num_batches_tracked")) continue;
        if (extra++ < MAX_NAMED) ct_log(CT_LOG_WARN, "%s: ignoring unexpected tensor '%s'", ck->dir, nm);
    }
    if (extra > MAX_NAMED)
        ct_log(CT_LOG_WARN, "%s: ignoring %zu more unexpected tensors", ck->dir, extra - MAX_NAMED);
}

/* Index of the first NaN or infinity among n elements of a float tensor, or
 * -1. On the bit patterns (exponent all ones), so no float compare and no
 * conversion: one pass over the mapping, cheap next to the load's. */
static int64_t first_non_finite(const ct_st_tensor *t) {
    size_t n = (size_t)t->numel;
    if (t->dtype == CT_DTYPE_F32) {
        const uint8_t *p = t->data;
        for (size_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * i, 4);
            if ((u & 0x7f800000u) == 0x7f800000u) return (int64_t)i;
        }
    } else if (t->dtype == CT_DTYPE_BF16 || t->dtype == CT_DTYPE_F16) {
        const uint16_t mask = t->dtype == CT_DTYPE_BF16 ? 0x7f80u : 0x7c00u;
        const uint8_t *p = t->data;
        for (size_t i = 0; i < n; i++) {
            uint16_t u;
            memcpy(&u, p + 2 * i, 2);
            if ((u & mask) == mask) return (int64_t)i;
        }
    } else if (t->dtype == CT_DTYPE_Q8_0) { /* the blocks' f16 scales; the int8 values are always finite */
        const uint8_t *p = t->data;
        for (size_t b = 0; b < n / CT_Q8_0_BLOCK; b++) {
            uint16_t u;
            memcpy(&u, p + b * CT_Q8_0_BLOCK_BYTES, 2);
            if ((u & 0x7c00u) == 0x7c00u) return (int64_t)(b * CT_Q8_0_BLOCK);
        }
    }
    return -1;
}

/* Every float tensor the model uses must be finite: one NaN in a weight
 * makes every activation after it NaN, and the decoder then "succeeds" with
 * an empty text (argmax of NaN logits). Refused at open, naming the tensor. */
static ct_status check_finite(const ct_checkpoint *ck) {
    /* The first bad tensor in name order wins, so the message does not
     * depend on thread timing; ct_fail runs on the calling thread (the
     * message is thread-local). */
    size_t bad = (size_t)-1;
    int64_t bad_at = -1;
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < ck->n; i++) {
        if (!ck->used[i]) continue;
        int64_t at = first_non_finite(&ck->t[i]);
        if (at < 0) continue;
#pragma omp critical(ct_checkpoint_finite)
        if (i < bad) {
            bad = i;
            bad_at = at;
        }
    }
    if (bad == (size_t)-1) return CT_OK;
    const ct_st_tensor *t = &ck->t[bad];
    int nan;
    if (t->dtype == CT_DTYPE_F32) {
        uint32_t u;
        memcpy(&u, (const uint8_t *)t->data + 4 * bad_at, 4);
        nan = (u & 0x7fffffu) != 0;
    } else {
        uint16_t h; /* Q8_0: the block's scale (an f16) */
        const size_t at = t->dtype == CT_DTYPE_Q8_0 ? (size_t)bad_at / CT_Q8_0_BLOCK * CT_Q8_0_BLOCK_BYTES
                                                    : 2 * (size_t)bad_at;
        memcpy(&h, (const uint8_t *)t->data + at, 2);
        nan = (h & (t->dtype == CT_DTYPE_BF16 ? 0x7fu : 0x3ffu)) != 0;
    }
    return ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' holds a non-finite weight (%s at element %lld)", ck->dir, t->name,
                   nan ? "NaN" : "infinity", (long long)bad_at);
}

/* Build the normalised, sorted tensor table from a list of tensors. */
ct_status ct_checkpoint_build(ct_checkpoint *ck, const ct_st_tensor *const *src, size_t n, int strip_model_prefix) {
    ck->t = calloc(n ? n : 1, sizeof *ck->t);
    ck->used = calloc(n ? n : 1, 1);
    if (!ck->t || !ck->used) return ct_fail(CT_ERR_OOM, "%s: out of memory", ck->dir);
    for (size_t i = 0; i < n; i++) {
        ck->t[i] = *src[i];
        const char *nm = src[i]->name;
        if (strip_model_prefix && strncmp(nm, "model.", 6) == 0) nm += 6;
        ck->t[i].name = strdup(nm);
        ck->n = i + 1;
        if (!ck->t[i].name) return ct_fail(CT_ERR_OOM, "%s: out of memory", ck->dir);
    }
    qsort(ck->t, ck->n, sizeof *ck->t, cmp_tensor);
    /* With the prefix stripped, names unique in the files collide only as
     * "model.x" and "x"; other callers rename (and check) names themselves. */
    for (size_t i = 1; i < ck->n; i++)
        if (strcmp(ck->t[i].name, ck->t[i - 1].name) == 0)
            return strip_model_prefix
                       ? ct_fail(CT_ERR_FORMAT, "%s: tensor '%s' is stored both with and without the 'model.' prefix",
                                 ck->dir, ck->t[i].name)
                       : ct_fail(CT_ERR_FORMAT, "%s: two tensors are named '%s'", ck->dir, ck->t[i].name);
    return CT_OK;
}

ct_status ct_checkpoint_finish(ct_checkpoint *ck) {
    ct_status s = derive(ck);
    if (s == CT_OK) s = verify_all(ck);
    if (s == CT_OK) note_unused(ck);
    return s;
}

ct_model_config *ct_checkpoint_config_mut(ct_checkpoint *ck) { return &ck->cfg; }

ct_status ct_checkpoint_new(const char *dir, ct_checkpoint **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return ct_fail(CT_ERR_OOM, "%s: out of memory", dir);
    if (!((*out)->dir = strdup(dir))) {
        free(*out);
        *out = NULL;
        return ct_fail(CT_ERR_OOM, "%s: out of memory", dir);
    }
    return CT_OK;
}

void ct_checkpoint_set_source(ct_checkpoint *ck, void *source, void (*source_free)(void *)) {
    ck->source = source;
    ck->source_free = source_free;
}

void ct_checkpoint_set_file_backed(ct_checkpoint *ck) { ck->file_backed = 1; }

void ct_checkpoint_release(const ct_checkpoint *ck, const ct_st_tensor *t) {
    if (!ck || !t || !ck->file_backed || t->nbytes == 0) return;
    /* Whole pages around the tensor: a neighbour sharing an edge page just
     * faults it back in from the file. Only clean, read-only file pages are
     * dropped, so no data is lost. */
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    uintptr_t a = (uintptr_t)t->data & ~((uintptr_t)pg - 1);
    uintptr_t e = ((uintptr_t)t->data + t->nbytes + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    (void)madvise((void *)a, e - a, MADV_DONTNEED);
}

static ct_status open_dir(const char *dir, ct_checkpoint **out) {
    ct_checkpoint *ck;
    CT_TRY(ct_checkpoint_new(dir, &ck));
    ck->file_backed = 1;
    ct_status s = ct_config_load(dir, &ck->cfg);
    if (s == CT_OK) s = ct_st_open(dir, &ck->st);
    if (s == CT_OK) {
        size_t n = ct_st_count(ck->st);
        const ct_st_tensor **src = malloc((n ? n : 1) * sizeof *src);
        if (!src) s = ct_fail(CT_ERR_OOM, "%s: out of memory", dir);
        for (size_t i = 0; s == CT_OK && i < n; i++) src[i] = ct_st_at(ck->st, i);
        if (s == CT_OK) s = ct_checkpoint_build(ck, src, n, 1);
        free(src);
    }
    if (s == CT_OK) s = ct_checkpoint_finish(ck);
    if (s != CT_OK) {
        ct_checkpoint_free(ck);
        return s;
    }
    *out = ck;
    return CT_OK;
}

ct_status ct_checkpoint_open_unchecked(const char *path, ct_checkpoint **out) {
    *out = NULL;
    if (!path || !*path) return ct_fail(CT_ERR_INVALID_ARG, "checkpoint: empty path");
    if (ct_fs_is_dir(path)) return open_dir(path, out);
    if (ct_str_ends_with(path, ".gguf")) return ct_checkpoint_open_gguf(path, out);
    if (!ct_fs_exists(path)) return ct_fail(CT_ERR_NOT_FOUND, "%s: no such model directory or file", path);
    CT_TRY(ct_fs_check_input(path)); /* a FIFO or device: refused by kind */
    return ct_fail(CT_ERR_INVALID_ARG, "%s: not a model directory or a .gguf file", path);
}

ct_status ct_checkpoint_open(const char *path, ct_checkpoint **out) {
    CT_TRY(ct_checkpoint_open_unchecked(path, out));
    ct_status s = check_finite(*out);
    if (s != CT_OK) {
        ct_checkpoint_free(*out);
        *out = NULL;
        return s;
    }
    (*out)->finite_checked = 1;
    return CT_OK;
}

int ct_checkpoint_finite_checked(const ct_checkpoint *ck) { return ck->finite_checked; }
int ct_checkpoint_file_backed(const ct_checkpoint *ck) { return ck->file_backed; }

void ct_checkpoint_free(ct_checkpoint *ck) {
    if (!ck) return;
    for (size_t i = 0; i < ck->n; i++) free((char *)ck->t[i].name);
    free(ck->t);
    free(ck->used);
    ct_st_free(ck->st);
    if (ck->source && ck->source_free) ck->source_free(ck->source);
    free(ck->dir);
    free(ck);
}

const ct_model_config *ct_checkpoint_config(const ct_checkpoint *ck) { return &ck->cfg; }
const char *ct_checkpoint_dir(const ct_checkpoint *ck) { return ck->dir; }
size_t ct_checkpoint_count(const ct_checkpoint *ck) { return ck->n; }
const ct_st_tensor *ct_checkpoint_at(const ct_checkpoint *ck, size_t i) { return i < ck->n ? &ck->t[i] : NULL; }
