/* config.c — config.json / generation_config.json readers for both layouts;
 * see config.h. Every present key is type- and range-checked (a string where a
 * number belongs is an error, not a default); shapes are cross-checked
 * against the tensors later, in checkpoint.c.
 */
#include "model/config.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fs.h"

#define SIZE_CAP (1 << 24)
#define CONFIG_MAX_BYTES ((size_t)16 << 20)

/* Read an integer key of obj into *dst; absent keeps dflt. where = "encoder." etc. */
static ct_status get_int(json_t *obj, const char *key, const char *label, const char *where, int *dst,
                         int dflt, long long lo, long long hi) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) {
        *dst = dflt;
        return CT_OK;
    }
    if (!json_is_integer(v)) return ct_fail(CT_ERR_FORMAT, "%s: %s%s is not an integer", label, where, key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return ct_fail(CT_ERR_FORMAT, "%s: %s%s = %lld is out of range [%lld, %lld]", label, where, key, x, lo, hi);
    *dst = (int)x;
    return CT_OK;
}

static ct_status get_size(json_t *obj, const char *key, const char *label, const char *where, int *dst, int dflt) {
    return get_int(obj, key, label, where, dst, dflt, 1, SIZE_CAP);
}

static ct_status get_bool(json_t *obj, const char *key, const char *label, const char *where, int *dst, int dflt) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) {
        *dst = dflt;
        return CT_OK;
    }
    if (!json_is_boolean(v)) return ct_fail(CT_ERR_FORMAT, "%s: %s%s is not a boolean", label, where, key);
    *dst = json_is_true(v);
    return CT_OK;
}

static ct_status get_num(json_t *obj, const char *key, const char *label, const char *where, double *dst,
                         double dflt) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) {
        *dst = dflt;
        return CT_OK;
    }
    if (!json_is_number(v)) return ct_fail(CT_ERR_FORMAT, "%s: %s%s is not a number", label, where, key);
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0 || x > 1e9)
        return ct_fail(CT_ERR_FORMAT, "%s: %s%s = %g is out of range", label, where, key, x);
    *dst = x;
    return CT_OK;
}

/* A string key that, when present, must equal one of the allowed values. */
static ct_status expect_str(json_t *obj, const char *key, const char *label, const char *where,
                            const char *const *allowed, int n_allowed, ct_status bad_value) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) return CT_OK;
    if (!json_is_string(v)) return ct_fail(CT_ERR_FORMAT, "%s: %s%s is not a string", label, where, key);
    for (int i = 0; i < n_allowed; i++)
        if (strcmp(json_string_value(v), allowed[i]) == 0) return CT_OK;
    return ct_fail(bad_value, "%s: %s%s '%s' is not supported (expected '%s')", label, where, key,
                   json_string_value(v), allowed[0]);
}

/* An optional sub-object: absent → NULL; present but not an object → error. */
static ct_status get_obj(json_t *obj, const char *key, const char *label, const char *where, json_t **out) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    *out = NULL;
    if (!v || json_is_null(v)) return CT_OK;
    if (!json_is_object(v)) return ct_fail(CT_ERR_FORMAT, "%s: %s%s is not an object", label, where, key);
    *out = v;
    return CT_OK;
}

/* Special ids; eos may be a list (take its first entry, as generate's
 * stopping criteria also stop on it). Absent keeps *dst. */
static ct_status get_id(json_t *obj, const char *key, const char *label, int *dst) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) return CT_OK;
    if (json_is_array(v)) {
        if (json_array_size(v) == 0) return ct_fail(CT_ERR_FORMAT, "%s: %s is an empty list", label, key);
        v = json_array_get(v, 0);
    }
    if (!json_is_integer(v)) return ct_fail(CT_ERR_FORMAT, "%s: %s is not an integer", label, key);
    long long x = json_integer_value(v);
    if (x < 0 || x >= SIZE_CAP) return ct_fail(CT_ERR_FORMAT, "%s: %s = %lld is out of range", label, key, x);
    *dst = (int)x;
    return CT_OK;
}

static void set_unknown(ct_model_config *c) {
    memset(c, 0, sizeof *c);
    int *ints[] = {&c->sample_rate, &c->n_mels, &c->n_fft, &c->win_length, &c->hop_length, &c->enc_layers,
                   &c->enc_d_model, &c->enc_heads, &c->enc_ff, &c->enc_conv_kernel, &c->subsampling_factor,
                   &c->subsampling_channels, &c->enc_max_positions, &c->dec_layers, &c->dec_d_model,
                   &c->dec_heads, &c->dec_ff, &c->dec_max_positions, &c->vocab_size, &c->pad_id, &c->eos_id,
                   &c->bos_id, &c->decoder_start_id};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) *ints[i] = -1;
    c->max_audio_clip_s = -1;
    c->overlap_chunk_s = -1;
}

/* transformers layout (CohereAsrConfig and its encoder defaults). */
static ct_status parse_transformers(json_t *root, const char *label, ct_model_config *c) {
    c->layout = CT_CONFIG_TRANSFORMERS;
    json_t *enc;
    CT_TRY(get_obj(root, "encoder_config", label, "", &enc));
    const char *E = "encoder_config.";
    static const char *const parakeet[] = {"parakeet_encoder"};
    CT_TRY(expect_str(enc, "model_type", label, E, parakeet, 1, CT_ERR_UNSUPPORTED));
    CT_TRY(get_size(enc, "hidden_size", label, E, &c->enc_d_model, 1280));
    CT_TRY(get_size(enc, "num_hidden_layers", label, E, &c->enc_layers, 48));
    CT_TRY(get_size(enc, "num_attention_heads", label, E, &c->enc_heads, 8));
    CT_TRY(get_size(enc, "intermediate_size", label, E, &c->enc_ff, 5120));
    CT_TRY(get_size(enc, "conv_kernel_size", label, E, &c->enc_conv_kernel, 9));
    CT_TRY(get_size(enc, "subsampling_factor", label, E, &c->subsampling_factor, 8));
    CT_TRY(get_size(enc, "subsampling_conv_channels", label, E, &c->subsampling_channels, 256));
    CT_TRY(get_size(enc, "num_mel_bins", label, E, &c->n_mels, 128));
    CT_TRY(get_size(enc, "max_position_embeddings", label, E, &c->enc_max_positions, 5000));
    CT_TRY(get_bool(enc, "scale_input", label, E, &c->enc_scale_input, 0));
    static const char *const silu[] = {"silu", "swish"};
    CT_TRY(expect_str(enc, "hidden_act", label, E, silu, 2, CT_ERR_UNSUPPORTED));
    int k, s, b, kv;
    CT_TRY(get_size(enc, "subsampling_conv_kernel_size", label, E, &k, 3));
    CT_TRY(get_size(enc, "subsampling_conv_stride", label, E, &s, 2));
    if (k != 3 || s != 2)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: subsampling kernel %d / stride %d: only 3 / 2 is supported", label, k, s);
    CT_TRY(get_bool(enc, "attention_bias", label, E, &b, 1));
    if (!b) return ct_fail(CT_ERR_UNSUPPORTED, "%s: encoder_config.attention_bias false is not supported", label);
    CT_TRY(get_bool(enc, "convolution_bias", label, E, &b, 1));
    if (!b) return ct_fail(CT_ERR_UNSUPPORTED, "%s: encoder_config.convolution_bias false is not supported", label);

    CT_TRY(get_size(root, "vocab_size", label, "", &c->vocab_size, 16384));
    CT_TRY(get_size(root, "hidden_size", label, "", &c->dec_d_model, 1024));
    CT_TRY(get_size(root, "num_hidden_layers", label, "", &c->dec_layers, 8));
    CT_TRY(get_size(root, "num_attention_heads", label, "", &c->dec_heads, 8));
    CT_TRY(get_size(root, "intermediate_size", label, "", &c->dec_ff, 4096));
    CT_TRY(get_size(root, "max_position_embeddings", label, "", &c->dec_max_positions, 1024));
    CT_TRY(get_size(root, "num_key_value_heads", label, "", &kv, c->dec_heads));
    if (kv != c->dec_heads)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: num_key_value_heads %d != num_attention_heads %d (grouped attention)",
                       label, kv, c->dec_heads);
    int hd;
    CT_TRY(get_size(root, "head_dim", label, "", &hd, c->dec_d_model / c->dec_heads));
    if (hd * c->dec_heads != c->dec_d_model)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: head_dim %d × %d heads != hidden_size %d", label, hd, c->dec_heads,
                       c->dec_d_model);
    static const char *const relu[] = {"relu"};
    CT_TRY(expect_str(root, "hidden_act", label, "", relu, 1, CT_ERR_UNSUPPORTED));
    CT_TRY(get_bool(root, "attention_bias", label, "", &b, 1));
    if (!b) return ct_fail(CT_ERR_UNSUPPORTED, "%s: attention_bias false is not supported", label);
    CT_TRY(get_bool(root, "tie_word_embeddings", label, "", &b, 0));
    if (b) return ct_fail(CT_ERR_UNSUPPORTED, "%s: tie_word_embeddings true is not supported (the head is stored)", label);
    /* CohereAsrConfig's class defaults for the ids. */
    c->pad_id = 2;
    c->eos_id = 3;
    c->bos_id = 4;
    /* transformers' feature extractor defaults (preprocessor_config.json is the
     * processor's business; the engine implements this frontend only). */
    c->sample_rate = 16000;
    c->n_fft = 512;
    c->win_length = 400;
    c->hop_length = 160;
    return CT_OK;
}

/* Hub-release NeMo layout. */
static ct_status parse_nemo(json_t *root, const char *label, ct_model_config *c) {
    c->layout = CT_CONFIG_NEMO;
    json_t *enc, *pre, *td, *dec;
    CT_TRY(get_obj(root, "encoder", label, "", &enc));
    CT_TRY(get_obj(root, "preprocessor", label, "", &pre));
    CT_TRY(get_obj(root, "transf_decoder", label, "", &td));
    CT_TRY(get_obj(td, "config_dict", label, "transf_decoder.", &dec));
    const char *E = "encoder.", *P = "preprocessor.", *D = "transf_decoder.config_dict.";
    CT_TRY(get_size(enc, "n_layers", label, E, &c->enc_layers, -1));
    CT_TRY(get_size(enc, "d_model", label, E, &c->enc_d_model, -1));
    CT_TRY(get_size(enc, "n_heads", label, E, &c->enc_heads, -1));
    int ffx;
    CT_TRY(get_size(enc, "ff_expansion_factor", label, E, &ffx, -1));
    if (ffx > 0 && c->enc_d_model > 0) c->enc_ff = ffx * c->enc_d_model;
    CT_TRY(get_size(enc, "conv_kernel_size", label, E, &c->enc_conv_kernel, -1));
    CT_TRY(get_size(enc, "subsampling_factor", label, E, &c->subsampling_factor, -1));
    /* NeMo writes -1 for "as many channels as d_model": leave it unknown. */
    CT_TRY(get_int(enc, "subsampling_conv_channels", label, E, &c->subsampling_channels, -1, -1, SIZE_CAP));
    if (c->subsampling_channels == 0)
        return ct_fail(CT_ERR_FORMAT, "%s: encoder.subsampling_conv_channels is 0", label);
    CT_TRY(get_size(enc, "pos_emb_max_len", label, E, &c->enc_max_positions, -1));
    CT_TRY(get_bool(enc, "xscaling", label, E, &c->enc_scale_input, 0));
    CT_TRY(get_size(enc, "feat_in", label, E, &c->n_mels, -1));

    CT_TRY(get_size(pre, "sample_rate", label, P, &c->sample_rate, 16000));
    int feats;
    CT_TRY(get_size(pre, "features", label, P, &feats, -1));
    if (feats > 0) {
        if (c->n_mels > 0 && c->n_mels != feats)
            return ct_fail(CT_ERR_FORMAT, "%s: preprocessor.features %d != encoder.feat_in %d", label, feats, c->n_mels);
        c->n_mels = feats;
    }
    CT_TRY(get_size(pre, "n_fft", label, P, &c->n_fft, 512));
    double ws, wst;
    CT_TRY(get_num(pre, "window_size", label, P, &ws, 0.025));
    CT_TRY(get_num(pre, "window_stride", label, P, &wst, 0.01));
    c->win_length = (int)lround(ws * c->sample_rate);
    c->hop_length = (int)lround(wst * c->sample_rate);
    static const char *const hann[] = {"hann"}, *const perf[] = {"per_feature"};
    CT_TRY(expect_str(pre, "window", label, P, hann, 1, CT_ERR_UNSUPPORTED));
    CT_TRY(expect_str(pre, "normalize", label, P, perf, 1, CT_ERR_UNSUPPORTED));

    CT_TRY(get_size(dec, "num_layers", label, D, &c->dec_layers, -1));
    CT_TRY(get_size(dec, "hidden_size", label, D, &c->dec_d_model, -1));
    CT_TRY(get_size(dec, "num_attention_heads", label, D, &c->dec_heads, -1));
    CT_TRY(get_size(dec, "inner_size", label, D, &c->dec_ff, -1));
    CT_TRY(get_size(dec, "max_sequence_length", label, D, &c->dec_max_positions, -1));
    static const char *const relu[] = {"relu"};
    CT_TRY(expect_str(dec, "hidden_act", label, D, relu, 1, CT_ERR_UNSUPPORTED));
    CT_TRY(get_size(root, "vocab_size", label, "", &c->vocab_size, -1));
    /* the vocabulary is also stated by the decoder and the head: all must agree */
    json_t *head;
    CT_TRY(get_obj(root, "head", label, "", &head));
    int dv, hv;
    CT_TRY(get_size(dec, "vocab_size", label, D, &dv, -1));
    CT_TRY(get_size(head, "num_classes", label, "head.", &hv, -1));
    const int vs[3] = {c->vocab_size, dv, hv};
    const char *vn[3] = {"vocab_size", "transf_decoder.config_dict.vocab_size", "head.num_classes"};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (vs[i] > 0 && vs[j] > 0 && vs[i] != vs[j])
                return ct_fail(CT_ERR_FORMAT, "%s: %s %d != %s %d", label, vn[i], vs[i], vn[j], vs[j]);
    if (c->vocab_size < 0) c->vocab_size = dv > 0 ? dv : hv;

    json_t *langs = json_object_get(root, "supported_languages");
    if (langs && !json_is_null(langs)) {
        if (!json_is_array(langs)) return ct_fail(CT_ERR_FORMAT, "%s: supported_languages is not a list", label);
        if (json_array_size(langs) > CT_CONFIG_MAX_LANGS)
            return ct_fail(CT_ERR_LIMIT, "%s: more than %d supported_languages", label, CT_CONFIG_MAX_LANGS);
        for (size_t i = 0; i < json_array_size(langs); i++) {
            json_t *l = json_array_get(langs, i);
            if (!json_is_string(l) || json_string_length(l) == 0 || json_string_length(l) >= sizeof c->languages[0])
                return ct_fail(CT_ERR_FORMAT, "%s: supported_languages[%zu] is not a short string", label, i);
            strcpy(c->languages[c->n_languages++], json_string_value(l));
        }
    }
    CT_TRY(get_num(root, "max_audio_clip_s", label, "", &c->max_audio_clip_s, -1));
    CT_TRY(get_num(root, "overlap_chunk_second", label, "", &c->overlap_chunk_s, -1));
    return CT_OK;
}

static json_t *load_json(const char *text, size_t len, const char *label, ct_status *s) {
    json_error_t e;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
    if (!root) {
        *s = ct_fail(CT_ERR_FORMAT, "%s: not valid JSON: %s (line %d, column %d)", label, e.text, e.line, e.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        *s = ct_fail(CT_ERR_FORMAT, "%s: not a JSON object", label);
        return NULL;
    }
    *s = CT_OK;
    return root;
}

ct_status ct_config_parse(const char *config, size_t config_len, const char *label, const char *gen,
                          size_t gen_len, const char *gen_label, ct_model_config *out) {
    set_unknown(out);
    ct_status s;
    json_t *root = load_json(config, config_len, label, &s);
    if (!root) return s;
    json_t *q = json_object_get(root, "quantization_config");
    json_t *mt = json_object_get(root, "model_type");
    if (q && !json_is_null(q)) {
        json_t *qm = json_is_object(q) ? json_object_get(q, "quant_method") : NULL;
        s = ct_fail(CT_ERR_UNSUPPORTED,
                    "%s: quantization_config present (quant_method '%s'): this engine runs dense "
                    "f32/f16/bf16 checkpoints only",
                    label, json_is_string(qm) ? json_string_value(qm) : "?");
    } else if (mt && !json_is_null(mt) && (!json_is_string(mt) || strcmp(json_string_value(mt), "cohere_asr") != 0)) {
        s = ct_fail(CT_ERR_UNSUPPORTED, "%s: model_type %s%s%s is not cohere_asr", label,
                    json_is_string(mt) ? "'" : "", json_is_string(mt) ? json_string_value(mt) : "(not a string)",
                    json_is_string(mt) ? "'" : "");
    } else if (json_object_get(root, "encoder_config")) {
        s = parse_transformers(root, label, out);
    } else if (json_object_get(root, "encoder") || json_object_get(root, "transf_decoder")) {
        s = parse_nemo(root, label, out);
    } else {
        s = ct_fail(CT_ERR_FORMAT, "%s: neither encoder_config (transformers) nor encoder/transf_decoder "
                                   "(NeMo) is present: not a Cohere ASR config", label);
    }
    /* Ids written beside the architecture (transformers layout). */
    if (s == CT_OK) s = get_id(root, "pad_token_id", label, &out->pad_id);
    if (s == CT_OK) s = get_id(root, "eos_token_id", label, &out->eos_id);
    if (s == CT_OK) s = get_id(root, "bos_token_id", label, &out->bos_id);
    if (s == CT_OK) s = get_id(root, "decoder_start_token_id", label, &out->decoder_start_id);
    json_decref(root);
    if (s != CT_OK || !gen) return s;

    const char *glabel = gen_label ? gen_label : "generation_config.json";
    json_t *g = load_json(gen, gen_len, glabel, &s);
    if (!g) return s;
    s = get_id(g, "pad_token_id", glabel, &out->pad_id);
    if (s == CT_OK) s = get_id(g, "eos_token_id", glabel, &out->eos_id);
    if (s == CT_OK) s = get_id(g, "bos_token_id", glabel, &out->bos_id);
    if (s == CT_OK) s = get_id(g, "decoder_start_token_id", glabel, &out->decoder_start_id);
    json_decref(g);
    return s;
}

ct_status ct_config_load(const char *dir, ct_model_config *out) {
    char p[PATH_MAX], g[PATH_MAX];
    CT_TRY(ct_path_join(p, sizeof p, dir, "config.json"));
    CT_TRY(ct_path_join(g, sizeof g, dir, "generation_config.json"));
    char *text = NULL, *gtext = NULL;
    size_t n = 0, gn = 0;
    CT_TRY(ct_fs_read_all(p, CONFIG_MAX_BYTES, &text, &n));
    ct_status s = CT_OK;
    /* Optional, but when the name exists it must be a readable regular file:
     * a FIFO or directory there is refused, not silently skipped. */
    struct stat gst;
    if (stat(g, &gst) == 0) s = ct_fs_read_all(g, CONFIG_MAX_BYTES, &gtext, &gn);
    if (s == CT_OK) s = ct_config_parse(text, n, p, gtext, gn, g, out);
    free(text);
    free(gtext);
    return s;
}

int ct_config_language_index(const ct_model_config *cfg, const char *lang) {
    for (int i = 0; i < cfg->n_languages; i++)
        if (strcmp(cfg->languages[i], lang) == 0) return i;
    return -1;
}

/* ---- writing (transformers layout) -------------------------------------- */

ct_status ct_config_write_json(const char *dir, const char *name, json_t *j) {
    char p[PATH_MAX];
    ct_status s = ct_path_join(p, sizeof p, dir, name);
    char *text = s == CT_OK && j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    if (s != CT_OK) return s;
    if (!text) return ct_fail(CT_ERR_OOM, "%s: cannot serialise", p);
    size_t n = strlen(text);
    char *t2 = realloc(text, n + 2);
    if (!t2) {
        free(text);
        return ct_fail(CT_ERR_OOM, "%s: out of memory", p);
    }
    t2[n] = '\n';
    t2[n + 1] = '\0';
    s = ct_fs_write_atomic(p, t2, n + 1);
    free(t2);
    return s;
}

#define SETI(o, k, v) json_object_set_new(o, k, json_integer(v))
#define SETB(o, k, v) json_object_set_new(o, k, json_boolean(v))
#define SETS(o, k, v) json_object_set_new(o, k, json_string(v))
#define SETR(o, k, v) json_object_set_new(o, k, json_real(v))

ct_status ct_config_write_generation(const ct_model_config *c, const char *dir) {
    json_t *g = json_object();
    if (c->bos_id >= 0) SETI(g, "bos_token_id", c->bos_id);
    if (c->decoder_start_id >= 0) SETI(g, "decoder_start_token_id", c->decoder_start_id);
    if (c->eos_id >= 0) SETI(g, "eos_token_id", c->eos_id);
    if (c->pad_id >= 0) SETI(g, "pad_token_id", c->pad_id);
    SETS(g, "transformers_version", "5.17.0");
    return ct_config_write_json(dir, "generation_config.json", g);
}

ct_status ct_config_write_transformers(const ct_model_config *c, const char *dtype_name, const char *dir) {
    const int need[] = {c->enc_layers, c->enc_d_model, c->enc_heads, c->enc_ff, c->enc_conv_kernel,
                        c->subsampling_channels, c->n_mels, c->dec_layers, c->dec_d_model, c->dec_heads,
                        c->dec_ff, c->dec_max_positions, c->vocab_size};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (need[i] <= 0) return ct_fail(CT_ERR_INVALID_ARG, "%s: config.json: a size is unknown", dir);
    json_t *e = json_object();
    SETR(e, "activation_dropout", 0.0);
    SETB(e, "attention_bias", 1);
    SETR(e, "attention_dropout", 0.0);
    SETI(e, "conv_kernel_size", c->enc_conv_kernel);
    SETB(e, "convolution_bias", 1);
    SETR(e, "dropout", 0.0);
    SETR(e, "dropout_positions", 0.0);
    SETS(e, "hidden_act", "silu");
    SETI(e, "hidden_size", c->enc_d_model);
    SETR(e, "initializer_range", 0.02);
    SETI(e, "intermediate_size", c->enc_ff);
    SETR(e, "layerdrop", 0.0);
    SETI(e, "max_position_embeddings", c->enc_max_positions > 0 ? c->enc_max_positions : 5000);
    SETS(e, "model_type", "parakeet_encoder");
    SETI(e, "num_attention_heads", c->enc_heads);
    SETI(e, "num_hidden_layers", c->enc_layers);
    SETI(e, "num_key_value_heads", c->enc_heads);
    SETI(e, "num_mel_bins", c->n_mels);
    SETB(e, "scale_input", c->enc_scale_input);
    SETI(e, "subsampling_conv_channels", c->subsampling_channels);
    SETI(e, "subsampling_conv_kernel_size", 3);
    SETI(e, "subsampling_conv_stride", 2);
    SETI(e, "subsampling_factor", 8);
    json_t *j = json_object();
    json_t *arch = json_array();
    json_array_append_new(arch, json_string("CohereAsrForConditionalGeneration"));
    json_object_set_new(j, "architectures", arch);
    SETB(j, "attention_bias", 1);
    SETR(j, "attention_dropout", 0.0);
    if (c->bos_id >= 0) SETI(j, "bos_token_id", c->bos_id);
    if (c->decoder_start_id >= 0) SETI(j, "decoder_start_token_id", c->decoder_start_id);
    SETS(j, "dtype", dtype_name);
    json_object_set_new(j, "encoder_config", e);
    if (c->eos_id >= 0) SETI(j, "eos_token_id", c->eos_id);
    SETI(j, "head_dim", c->dec_d_model / c->dec_heads);
    SETS(j, "hidden_act", "relu");
    SETI(j, "hidden_size", c->dec_d_model);
    SETR(j, "initializer_range", 0.02);
    SETI(j, "intermediate_size", c->dec_ff);
    SETB(j, "is_encoder_decoder", 1);
    SETI(j, "max_position_embeddings", c->dec_max_positions);
    SETS(j, "model_type", "cohere_asr");
    SETI(j, "num_attention_heads", c->dec_heads);
    SETI(j, "num_hidden_layers", c->dec_layers);
    SETI(j, "num_key_value_heads", c->dec_heads);
    if (c->pad_id >= 0) SETI(j, "pad_token_id", c->pad_id);
    SETB(j, "tie_word_embeddings", 0);
    SETS(j, "transformers_version", "5.17.0");
    SETB(j, "use_cache", 1);
    SETI(j, "vocab_size", c->vocab_size);
    CT_TRY(ct_config_write_json(dir, "config.json", j));
    return ct_config_write_generation(c, dir);
}
