/* random_model.c — random-weight Cohere ASR checkpoints; see random_model.h.
 * Initialisation follows REFERENCE.md: weights N(0, g/fan_in) with g = 2
 * where the input comes out of a ReLU, biases N(0, 0.02²), LayerNorm and
 * BatchNorm scales U(0.8, 1.2), pos_bias_u/v and running means N(0, 0.1²),
 * running variances U(0.5, 2), embeddings N(0, 1).
 */
#include "model/random_model.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "model/safetensors.h"
#include "model/tokjson.h"

/* ---- deterministic per-tensor random streams --------------------------- */

typedef struct rng {
    uint64_t s[4];
    int has_spare;
    double spare;
} rng;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed, const char *name) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the name */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
    uint64_t x = seed ^ h;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
    r->has_spare = 0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) { /* xoshiro256** */
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; } /* [0, 1) */

static double rng_normal(rng *r) {
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u1 = 1.0 - rng_uniform(r), u2 = rng_uniform(r); /* u1 in (0, 1] */
    double rad = sqrt(-2.0 * log(u1)), th = 2.0 * M_PI * u2;
    r->spare = rad * sin(th);
    r->has_spare = 1;
    return rad * cos(th);
}

/* ---- the tensor list --------------------------------------------------- */

typedef enum init_kind { I_WEIGHT, I_BIAS, I_NORM, I_SMALL, I_VAR, I_EMB, I_COUNTER } init_kind;

typedef struct spec {
    char name[160]; /* NeMo name, no prefix */
    int ndim;
    int64_t shape[4];
    init_kind kind;
    double std; /* for I_WEIGHT */
} spec;

typedef struct spec_list {
    spec *v;
    size_t n, cap;
} spec_list;

static ct_status add(spec_list *l, init_kind kind, double fan_in_gain, int ndim, int64_t a, int64_t b, int64_t c,
                     int64_t d, const char *fmt, ...) CT_PRINTF(9, 10);

static ct_status add(spec_list *l, init_kind kind, double fan_in_gain, int ndim, int64_t a, int64_t b, int64_t c,
                     int64_t d, const char *fmt, ...) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        spec *v = realloc(l->v, cap * sizeof *v);
        if (!v) return ct_fail(CT_ERR_OOM, "random model: out of memory");
        l->v = v;
        l->cap = cap;
    }
    spec *s = &l->v[l->n++];
    memset(s, 0, sizeof *s);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->name, sizeof s->name, fmt, ap);
    va_end(ap);
    s->ndim = ndim;
    int64_t sh[4] = {a, b, c, d};
    memcpy(s->shape, sh, sizeof sh);
    s->kind = kind;
    s->std = fan_in_gain; /* turned into a std below for weights */
    return CT_OK;
}

/* Weight with fan-in f and gain g (2 after a ReLU). */
#define WT(f, g) I_WEIGHT, sqrt((g) / (double)(f))

static ct_status build_specs(const ct_random_model_opts *o, spec_list *l) {
    const int64_t C = o->subsampling_channels, d = o->enc_d_model, ff = o->enc_ff, H = o->enc_heads,
                  K = o->enc_conv_kernel, dd = o->dec_d_model, dff = o->dec_ff, V = o->vocab_size,
                  P = o->dec_max_positions;
    int64_t f = o->n_mels;
    for (int i = 0; i < 3; i++) f = (f - 1) / 2 + 1;
    const char *pe = "encoder.pre_encode.";
    CT_TRY(add(l, WT(9, 1), 4, C, 1, 3, 3, "%sconv.0.weight", pe));
    CT_TRY(add(l, I_BIAS, 0, 1, C, 0, 0, 0, "%sconv.0.bias", pe));
    /* conv.2 and conv.5 are depthwise and see ReLU outputs; 3 and 6 are pointwise */
    CT_TRY(add(l, WT(9, 2), 4, C, 1, 3, 3, "%sconv.2.weight", pe));
    CT_TRY(add(l, I_BIAS, 0, 1, C, 0, 0, 0, "%sconv.2.bias", pe));
    CT_TRY(add(l, WT(C, 1), 4, C, C, 1, 1, "%sconv.3.weight", pe));
    CT_TRY(add(l, I_BIAS, 0, 1, C, 0, 0, 0, "%sconv.3.bias", pe));
    CT_TRY(add(l, WT(9, 2), 4, C, 1, 3, 3, "%sconv.5.weight", pe));
    CT_TRY(add(l, I_BIAS, 0, 1, C, 0, 0, 0, "%sconv.5.bias", pe));
    CT_TRY(add(l, WT(C, 1), 4, C, C, 1, 1, "%sconv.6.weight", pe));
    CT_TRY(add(l, I_BIAS, 0, 1, C, 0, 0, 0, "%sconv.6.bias", pe));
    CT_TRY(add(l, WT(C * f, 2), 2, d, C * f, 0, 0, "%sout.weight", pe));
    CT_TRY(add(l, I_BIAS, 0, 1, d, 0, 0, 0, "%sout.bias", pe));
    static const char *const norms[] = {"norm_feed_forward1", "norm_self_att", "norm_conv", "norm_feed_forward2",
                                        "norm_out"};
    static const char *const att[] = {"linear_q", "linear_k", "linear_v", "linear_out"};
    for (int L = 0; L < o->enc_layers; L++) {
        const char *p = "encoder.layers.";
        for (int i = 0; i < 5; i++) {
            CT_TRY(add(l, I_NORM, 0, 1, d, 0, 0, 0, "%s%d.%s.weight", p, L, norms[i]));
            CT_TRY(add(l, I_BIAS, 0, 1, d, 0, 0, 0, "%s%d.%s.bias", p, L, norms[i]));
        }
        for (int i = 1; i <= 2; i++) {
            CT_TRY(add(l, WT(d, 1), 2, ff, d, 0, 0, "%s%d.feed_forward%d.linear1.weight", p, L, i));
            CT_TRY(add(l, I_BIAS, 0, 1, ff, 0, 0, 0, "%s%d.feed_forward%d.linear1.bias", p, L, i));
            CT_TRY(add(l, WT(ff, 1), 2, d, ff, 0, 0, "%s%d.feed_forward%d.linear2.weight", p, L, i));
            CT_TRY(add(l, I_BIAS, 0, 1, d, 0, 0, 0, "%s%d.feed_forward%d.linear2.bias", p, L, i));
        }
        for (int i = 0; i < 4; i++) {
            CT_TRY(add(l, WT(d, 1), 2, d, d, 0, 0, "%s%d.self_attn.%s.weight", p, L, att[i]));
            CT_TRY(add(l, I_BIAS, 0, 1, d, 0, 0, 0, "%s%d.self_attn.%s.bias", p, L, att[i]));
        }
        CT_TRY(add(l, WT(d, 1), 2, d, d, 0, 0, "%s%d.self_attn.linear_pos.weight", p, L));
        CT_TRY(add(l, I_SMALL, 0, 2, H, d / H, 0, 0, "%s%d.self_attn.pos_bias_u", p, L));
        CT_TRY(add(l, I_SMALL, 0, 2, H, d / H, 0, 0, "%s%d.self_attn.pos_bias_v", p, L));
        CT_TRY(add(l, WT(d, 1), 3, 2 * d, d, 1, 0, "%s%d.conv.pointwise_conv1.weight", p, L));
        CT_TRY(add(l, I_BIAS, 0, 1, 2 * d, 0, 0, 0, "%s%d.conv.pointwise_conv1.bias", p, L));
        CT_TRY(add(l, WT(K, 1), 3, d, 1, K, 0, "%s%d.conv.depthwise_conv.weight", p, L));
        CT_TRY(add(l, I_BIAS, 0, 1, d, 0, 0, 0, "%s%d.conv.depthwise_conv.bias", p, L));
        CT_TRY(add(l, I_NORM, 0, 1, d, 0, 0, 0, "%s%d.conv.batch_norm.weight", p, L));
        CT_TRY(add(l, I_BIAS, 0, 1, d, 0, 0, 0, "%s%d.conv.batch_norm.bias", p, L));
        CT_TRY(add(l, I_SMALL, 0, 1, d, 0, 0, 0, "%s%d.conv.batch_norm.running_mean", p, L));
        CT_TRY(add(l, I_VAR, 0, 1, d, 0, 0, 0, "%s%d.conv.batch_norm.running_var", p, L));
        CT_TRY(add(l, I_COUNTER, 0, 0, 0, 0, 0, 0, "%s%d.conv.batch_norm.num_batches_tracked", p, L));
        CT_TRY(add(l, WT(d, 1), 3, d, d, 1, 0, "%s%d.conv.pointwise_conv2.weight", p, L));
        CT_TRY(add(l, I_BIAS, 0, 1, d, 0, 0, 0, "%s%d.conv.pointwise_conv2.bias", p, L));
    }
    CT_TRY(add(l, WT(d, 1), 2, dd, d, 0, 0, "encoder_decoder_proj.weight"));
    CT_TRY(add(l, I_BIAS, 0, 1, dd, 0, 0, 0, "encoder_decoder_proj.bias"));
    const char *em = "transf_decoder._embedding.";
    CT_TRY(add(l, I_EMB, 0, 2, V, dd, 0, 0, "%stoken_embedding.weight", em));
    CT_TRY(add(l, I_EMB, 0, 2, P, dd, 0, 0, "%sposition_embedding.pos_enc", em));
    CT_TRY(add(l, I_NORM, 0, 1, dd, 0, 0, 0, "%slayer_norm.weight", em));
    CT_TRY(add(l, I_BIAS, 0, 1, dd, 0, 0, 0, "%slayer_norm.bias", em));
    static const char *const sub[] = {"first_sub_layer", "second_sub_layer"};
    static const char *const proj[] = {"query_net", "key_net", "value_net", "out_projection"};
    for (int L = 0; L < o->dec_layers; L++) {
        const char *p = "transf_decoder._decoder.layers.";
        for (int i = 1; i <= 3; i++) {
            CT_TRY(add(l, I_NORM, 0, 1, dd, 0, 0, 0, "%s%d.layer_norm_%d.weight", p, L, i));
            CT_TRY(add(l, I_BIAS, 0, 1, dd, 0, 0, 0, "%s%d.layer_norm_%d.bias", p, L, i));
        }
        for (int s = 0; s < 2; s++)
            for (int i = 0; i < 4; i++) {
                CT_TRY(add(l, WT(dd, 1), 2, dd, dd, 0, 0, "%s%d.%s.%s.weight", p, L, sub[s], proj[i]));
                CT_TRY(add(l, I_BIAS, 0, 1, dd, 0, 0, 0, "%s%d.%s.%s.bias", p, L, sub[s], proj[i]));
            }
        CT_TRY(add(l, WT(dd, 1), 2, dff, dd, 0, 0, "%s%d.third_sub_layer.dense_in.weight", p, L));
        CT_TRY(add(l, I_BIAS, 0, 1, dff, 0, 0, 0, "%s%d.third_sub_layer.dense_in.bias", p, L));
        CT_TRY(add(l, WT(dff, 2), 2, dd, dff, 0, 0, "%s%d.third_sub_layer.dense_out.weight", p, L)); /* after ReLU */
        CT_TRY(add(l, I_BIAS, 0, 1, dd, 0, 0, 0, "%s%d.third_sub_layer.dense_out.bias", p, L));
    }
    CT_TRY(add(l, I_NORM, 0, 1, dd, 0, 0, 0, "transf_decoder._decoder.final_layer_norm.weight"));
    CT_TRY(add(l, I_BIAS, 0, 1, dd, 0, 0, 0, "transf_decoder._decoder.final_layer_norm.bias"));
    CT_TRY(add(l, WT(dd, 1), 2, V, dd, 0, 0, "log_softmax.mlp.layer0.weight"));
    CT_TRY(add(l, I_BIAS, 0, 1, V, 0, 0, 0, "log_softmax.mlp.layer0.bias"));
    return CT_OK;
}

static int64_t spec_numel(const spec *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= s->shape[i];
    return n;
}

/* Values come in blocks of FILL_BLOCK, each from its own stream seeded by
 * (seed, name, block): the result does not depend on the thread count. */
#define FILL_BLOCK ((int64_t)1 << 16)

static void fill(const spec *s, uint64_t seed, float scale, float *out, int64_t n) {
    int64_t nb = (n + FILL_BLOCK - 1) / FILL_BLOCK;
    /* small tensors stay on this thread: a parallel region costs more */
#pragma omp parallel for schedule(static) if (nb > 1)
    for (int64_t b = 0; b < nb; b++) {
        rng r;
        rng_seed(&r, seed + 0x9e3779b97f4a7c15ull * (uint64_t)b, s->name);
        int64_t end = (b + 1) * FILL_BLOCK < n ? (b + 1) * FILL_BLOCK : n;
        for (int64_t i = b * FILL_BLOCK; i < end; i++) {
            double v;
            switch (s->kind) {
            case I_WEIGHT: v = s->std * rng_normal(&r); break;
            case I_BIAS: v = 0.02 * rng_normal(&r); break;
            case I_NORM: v = 0.8 + 0.4 * rng_uniform(&r); break;
            case I_SMALL: v = 0.1 * rng_normal(&r); break;
            case I_VAR: v = 0.5 + 1.5 * rng_uniform(&r); break;
            case I_EMB: v = rng_normal(&r); break;
            default: v = 0; break;
            }
            out[i] = (float)v * scale;
        }
    }
}

/* ---- options ----------------------------------------------------------- */

ct_random_model_opts ct_random_model_default_options(void) {
    ct_random_model_opts o;
    memset(&o, 0, sizeof o);
    o.enc_layers = 48;
    o.enc_d_model = 1280;
    o.enc_heads = 8;
    o.enc_ff = 5120;
    o.enc_conv_kernel = 9;
    o.subsampling_channels = 256;
    o.n_mels = 128;
    o.dec_layers = 8;
    o.dec_d_model = 1024;
    o.dec_heads = 8;
    o.dec_ff = 4096;
    o.dec_max_positions = 1024;
    o.vocab_size = 16384;
    o.dtype = CT_DTYPE_BF16;
    o.seed = 0;
    o.layout = CT_CONFIG_TRANSFORMERS;
    o.bf16_exact = 0;
    o.head_scale = 1.0f;
    o.write_tokenizer = 1;
    return o;
}

/* The fixtures' special tokens and language tokens, in id order. */
static const char *const k_specials[] = {
    "<unk>", "<|nospeech|>", "<pad>", "<|endoftext|>", "<|startoftranscript|>", "<|pnc|>", "<|nopnc|>",
    "<|startofcontext|>", "<|itn|>", "<|noitn|>", "<|timestamp|>", "<|notimestamp|>", "<|diarize|>",
    "<|nodiarize|>", "<|spkchange|>", "<|audioseparator|>", "<|emo:undefined|>", "<|emo:neutral|>",
    "<|emo:happy|>", "<|emo:sad|>", "<|emo:angry|>"};
static const char *const k_langs[] = {"af", "am", "ar", "as", "az", "ba", "be", "bg", "bn", "bo", "br", "bs",
                                      "ca", "cs", "cy", "da", "de", "el", "en", "es", "et", "eu", "fa", "fi",
                                      "fo", "fr", "gl", "gu", "ha", "he", "hi", "hr", "hu", "hy", "id", "is",
                                      "it", "ja", "ko", "nl", "pl", "pt", "ru", "vi", "zh"};
#define N_SPECIALS ((int)(sizeof k_specials / sizeof k_specials[0]))
#define N_LANGS ((int)(sizeof k_langs / sizeof k_langs[0]))

int ct_random_model_min_vocab(void) { return N_SPECIALS + N_LANGS + 256 + 1; }

/* id of "▁" in the generated tokenizer: right after the byte pieces */
static int space_id(void) { return N_SPECIALS + N_LANGS + 256; }

static ct_status check_opts(const ct_random_model_opts *o) {
    const int v[] = {o->enc_layers, o->enc_d_model, o->enc_heads, o->enc_ff, o->enc_conv_kernel,
                     o->subsampling_channels, o->n_mels, o->dec_layers, o->dec_d_model, o->dec_heads,
                     o->dec_ff, o->dec_max_positions, o->vocab_size};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i] <= 0 || v[i] > (1 << 20)) return ct_fail(CT_ERR_INVALID_ARG, "random model: every size must be in 1..2^20");
    if (o->enc_d_model % o->enc_heads) return ct_fail(CT_ERR_INVALID_ARG, "random model: encoder d %% heads != 0");
    if (o->dec_d_model % o->dec_heads) return ct_fail(CT_ERR_INVALID_ARG, "random model: decoder d %% heads != 0");
    if (o->enc_conv_kernel % 2 == 0) return ct_fail(CT_ERR_INVALID_ARG, "random model: the conv kernel must be odd");
    if (o->write_tokenizer && o->vocab_size < ct_random_model_min_vocab())
        return ct_fail(CT_ERR_INVALID_ARG, "random model: vocab %d is below the %d tokens the tokenizer needs",
                       o->vocab_size, ct_random_model_min_vocab());
    if (o->dtype != CT_DTYPE_F32 && o->dtype != CT_DTYPE_BF16 && o->dtype != CT_DTYPE_F16)
        return ct_fail(CT_ERR_INVALID_ARG, "random model: dtype must be f32, bf16 or f16");
    if (o->layout == CT_CONFIG_NEMO && o->enc_ff % o->enc_d_model)
        return ct_fail(CT_ERR_INVALID_ARG, "random model: the NeMo layout needs ff a multiple of d");
    if (o->layout != CT_CONFIG_NEMO && o->layout != CT_CONFIG_TRANSFORMERS)
        return ct_fail(CT_ERR_INVALID_ARG, "random model: layout must be transformers or nemo");
    return CT_OK;
}

int64_t ct_random_model_param_count(const ct_random_model_opts *o) {
    spec_list l = {0};
    int64_t n = 0;
    if (build_specs(o, &l) == CT_OK)
        for (size_t i = 0; i < l.n; i++)
            if (l.v[i].kind != I_COUNTER) n += spec_numel(&l.v[i]);
    free(l.v);
    return n;
}

/* ---- JSON side files --------------------------------------------------- */

#define SETI(o, k, v) json_object_set_new(o, k, json_integer(v))
#define SETB(o, k, v) json_object_set_new(o, k, json_boolean(v))
#define SETS(o, k, v) json_object_set_new(o, k, json_string(v))
#define SETR(o, k, v) json_object_set_new(o, k, json_real(v))

static void opts_to_config(const ct_random_model_opts *o, ct_model_config *c) {
    memset(c, 0, sizeof *c);
    c->layout = o->layout;
    c->sample_rate = 16000, c->n_mels = o->n_mels, c->n_fft = 512, c->win_length = 400, c->hop_length = 160;
    c->enc_layers = o->enc_layers, c->enc_d_model = o->enc_d_model, c->enc_heads = o->enc_heads;
    c->enc_ff = o->enc_ff, c->enc_conv_kernel = o->enc_conv_kernel, c->subsampling_factor = 8;
    c->subsampling_channels = o->subsampling_channels, c->enc_max_positions = 5000, c->enc_scale_input = 0;
    c->dec_layers = o->dec_layers, c->dec_d_model = o->dec_d_model, c->dec_heads = o->dec_heads;
    c->dec_ff = o->dec_ff, c->dec_max_positions = o->dec_max_positions, c->vocab_size = o->vocab_size;
    /* without a tokenizer the vocabulary may be tiny: leave out ids it lacks */
    c->pad_id = 2 < o->vocab_size ? 2 : -1;
    c->eos_id = 3 < o->vocab_size ? 3 : -1;
    c->bos_id = 4 < o->vocab_size ? 4 : -1;
    c->decoder_start_id = space_id() < o->vocab_size ? space_id() : -1;
    c->max_audio_clip_s = -1, c->overlap_chunk_s = -1;
}

static json_t *nemo_config(const ct_random_model_opts *o) {
    json_t *c = json_object();
    SETS(c, "model_type", "cohere_asr");
    json_t *arch = json_array();
    json_array_append_new(arch, json_string("CohereAsrForConditionalGeneration"));
    json_object_set_new(c, "architectures", arch);
    SETI(c, "sample_rate", 16000);
    SETI(c, "vocab_size", o->vocab_size);
    json_t *langs = json_array();
    static const char *const rel[] = {"ar", "de", "el", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "vi", "zh"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) json_array_append_new(langs, json_string(rel[i]));
    json_object_set_new(c, "supported_languages", langs);
    SETI(c, "max_audio_clip_s", 35);
    SETI(c, "overlap_chunk_second", 5);
    json_t *p = json_object();
    SETI(p, "sample_rate", 16000);
    SETR(p, "window_size", 0.025);
    SETR(p, "window_stride", 0.01);
    SETI(p, "features", o->n_mels);
    SETI(p, "n_fft", 512);
    SETS(p, "window", "hann");
    SETS(p, "normalize", "per_feature");
    SETR(p, "dither", 1e-5);
    json_object_set_new(c, "preprocessor", p);
    json_t *e = json_object();
    SETI(e, "feat_in", o->n_mels);
    SETI(e, "n_layers", o->enc_layers);
    SETI(e, "d_model", o->enc_d_model);
    SETI(e, "n_heads", o->enc_heads);
    SETI(e, "ff_expansion_factor", o->enc_ff / o->enc_d_model);
    SETI(e, "conv_kernel_size", o->enc_conv_kernel);
    SETS(e, "subsampling", "dw_striding");
    SETI(e, "subsampling_factor", 8);
    SETI(e, "subsampling_conv_channels", o->subsampling_channels);
    SETI(e, "pos_emb_max_len", 5000);
    SETB(e, "xscaling", 0);
    SETS(e, "self_attention_model", "rel_pos");
    json_object_set_new(c, "encoder", e);
    json_t *d = json_object();
    SETI(d, "num_layers", o->dec_layers);
    SETI(d, "hidden_size", o->dec_d_model);
    SETI(d, "num_attention_heads", o->dec_heads);
    SETI(d, "inner_size", o->dec_ff);
    SETI(d, "max_sequence_length", o->dec_max_positions);
    SETS(d, "hidden_act", "relu");
    SETB(d, "pre_ln", 1);
    SETI(d, "vocab_size", o->vocab_size);
    json_t *td = json_object();
    json_object_set_new(td, "config_dict", d);
    json_object_set_new(c, "transf_decoder", td);
    json_t *h = json_object();
    SETI(h, "num_classes", o->vocab_size);
    SETI(h, "hidden_size", o->dec_d_model);
    SETB(h, "log_softmax", 1);
    json_object_set_new(c, "head", h);
    return c;
}

static json_t *preprocessor_config(const ct_random_model_opts *o) {
    json_t *p = json_object();
    SETR(p, "dither", 1e-5);
    SETS(p, "feature_extractor_type", "CohereAsrFeatureExtractor");
    SETI(p, "feature_size", o->n_mels);
    SETI(p, "hop_length", 160);
    SETR(p, "max_audio_clip_s", 35.0);
    SETI(p, "min_energy_window_samples", 1600);
    SETI(p, "n_fft", 512);
    SETR(p, "overlap_chunk_second", 5.0);
    SETS(p, "padding_side", "right");
    SETR(p, "padding_value", 0.0);
    SETR(p, "preemphasis", 0.97);
    SETS(p, "processor_class", "CohereAsrProcessor");
    SETB(p, "return_attention_mask", 1);
    SETI(p, "sampling_rate", 16000);
    SETI(p, "win_length", 400);
    return p;
}

/* Unigram tokenizer in the fixtures' conventions: specials, language tokens,
 * the 256 byte pieces, "▁", then filler pieces ("▁" + letters, or letters). */
static ct_status write_tokenizer(const char *dir, int vocab) {
    char **pieces = calloc((size_t)vocab, sizeof *pieces);
    float *scores = calloc((size_t)vocab, sizeof *scores);
    unsigned char *special = calloc((size_t)vocab, 1);
    ct_status s = CT_OK;
    if (!pieces || !scores || !special) s = ct_fail(CT_ERR_OOM, "tokenizer.json: out of memory");
    char piece[64];
    for (int id = 0; s == CT_OK && id < vocab; id++) {
        if (id < N_SPECIALS) {
            snprintf(piece, sizeof piece, "%s", k_specials[id]);
            special[id] = 1;
        } else if (id < N_SPECIALS + N_LANGS) {
            snprintf(piece, sizeof piece, "<|%s|>", k_langs[id - N_SPECIALS]);
            special[id] = 1;
        } else if (id < space_id()) {
            snprintf(piece, sizeof piece, "<0x%02X>", id - N_SPECIALS - N_LANGS);
        } else if (id == space_id()) {
            snprintf(piece, sizeof piece, "\xe2\x96\x81");
            scores[id] = -9.0f;
        } else {
            int k = id - space_id() - 1;
            char word[16];
            int w = 0, x = k / 2;
            do { /* bijective base 26: a..z, aa.. */
                word[w++] = (char)('a' + x % 26);
                x = x / 26 - 1;
            } while (x >= 0 && w < 15);
            word[w] = '\0';
            for (int i = 0; i < w / 2; i++) {
                char t = word[i];
                word[i] = word[w - 1 - i];
                word[w - 1 - i] = t;
            }
            snprintf(piece, sizeof piece, "%s%s", (k % 2 == 0) ? "\xe2\x96\x81" : "", word);
            scores[id] = -5.0f - 1e-4f * (float)k;
        }
        if (!(pieces[id] = strdup(piece))) s = ct_fail(CT_ERR_OOM, "tokenizer.json: out of memory");
    }
    char p[PATH_MAX];
    if (s == CT_OK) s = ct_path_join(p, sizeof p, dir, "tokenizer.json");
    if (s == CT_OK) s = ct_tokjson_write(p, (const char *const *)pieces, scores, special, vocab);
    for (int i = 0; pieces && i < vocab; i++) free(pieces[i]);
    free(pieces);
    free(scores);
    free(special);
    return s;
}

/* ---- writing ----------------------------------------------------------- */

ct_status ct_random_model_write(const ct_random_model_opts *o, const char *dir) {
    CT_TRY(check_opts(o));
    CT_TRY(ct_fs_mkdirs(dir));
    spec_list l = {0};
    ct_status s = build_specs(o, &l);
    char path[PATH_MAX];
    if (s == CT_OK) s = ct_path_join(path, sizeof path, dir, "model.safetensors");
    ct_st_writer *w = NULL;
    if (s == CT_OK) s = ct_st_writer_create(path, &w);
    int64_t maxn = 1;
    int nemo = o->layout == CT_CONFIG_NEMO;
    for (size_t i = 0; s == CT_OK && i < l.n; i++) {
        const spec *sp = &l.v[i];
        char name[200];
        /* save_pretrained prefixes everything but the head with "model." */
        snprintf(name, sizeof name, "%s%s", (nemo || strncmp(sp->name, "log_softmax.", 12) == 0) ? "" : "model.",
                 sp->name);
        ct_dtype dt = sp->kind == I_COUNTER ? CT_DTYPE_I64 : o->dtype;
        s = ct_st_writer_add(w, name, dt, sp->ndim, sp->shape);
        if (spec_numel(sp) > maxn) maxn = spec_numel(sp);
    }
    if (s == CT_OK) s = ct_st_writer_set_metadata(w, "format", "pt");
    float *buf = NULL;
    uint16_t *half = NULL;
    if (s == CT_OK) {
        buf = malloc((size_t)maxn * sizeof *buf);
        half = malloc((size_t)maxn * sizeof *half);
        if (!buf || !half) s = ct_fail(CT_ERR_OOM, "random model: cannot allocate %lld floats", (long long)maxn);
    }
    for (size_t i = 0; s == CT_OK && i < l.n; i++) {
        const spec *sp = &l.v[i];
        int64_t n = spec_numel(sp);
        if (sp->kind == I_COUNTER) {
            int64_t zero = 0;
            s = ct_st_writer_write(w, &zero);
            continue;
        }
        float scale = strcmp(sp->name, "log_softmax.mlp.layer0.weight") == 0 ? o->head_scale : 1.0f;
        fill(sp, o->seed, scale, buf, n);
        if (o->bf16_exact) {
#pragma omp parallel for schedule(static) if (n > FILL_BLOCK)
            for (int64_t k = 0; k < n; k++) buf[k] = ct_bf16_to_f32(ct_f32_to_bf16(buf[k]));
        }
        if (o->dtype == CT_DTYPE_F32) {
            s = ct_st_writer_write(w, buf);
        } else {
            const int bf = o->dtype == CT_DTYPE_BF16;
#pragma omp parallel for schedule(static) if (n > FILL_BLOCK)
            for (int64_t k = 0; k < n; k++) half[k] = bf ? ct_f32_to_bf16(buf[k]) : ct_f32_to_f16(buf[k]);
            s = ct_st_writer_write(w, half);
        }
    }
    free(buf);
    free(half);
    free(l.v);
    if (s == CT_OK) s = ct_st_writer_finish(w);
    ct_st_writer_free(w);
    if (s == CT_OK && nemo) s = ct_config_write_json(dir, "config.json", nemo_config(o));
    if (s == CT_OK) {
        ct_model_config c;
        opts_to_config(o, &c);
        s = nemo ? ct_config_write_generation(&c, dir)
                 : ct_config_write_transformers(&c, o->dtype == CT_DTYPE_F32    ? "float32"
                                                    : o->dtype == CT_DTYPE_BF16 ? "bfloat16"
                                                                                : "float16",
                                                dir);
    }
    if (s == CT_OK) s = ct_config_write_json(dir, "preprocessor_config.json", preprocessor_config(o));
    if (s == CT_OK && o->write_tokenizer) s = write_tokenizer(dir, o->vocab_size);
    return s;
}
