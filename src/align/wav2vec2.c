/* wav2vec2.c — the aligner's wav2vec2 CTC network over compute/backend.h
 * (conv feature encoder with per-layer channel LayerNorm + GELU, feature
 * projection, grouped positional conv, pre-LN transformer, final LayerNorm,
 * lm_head), weights from safetensors with sizes from config.json, and the
 * file's emissions in 34 s windows exactly as the Python twin assembles them
 * (cohere_transcribe/alignment/runtime.py, _compute_emissions_streaming). */
#include "align/wav2vec2.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/wav2vec2_internal.h"
#include "compute/ops.h"
#include "model/safetensors.h"

ct_w2v2_options ct_w2v2_default_options(void) {
    ct_w2v2_options o = {.weight_dtype = CT_DTYPE_F32};
    return o;
}

const ct_w2v2_config *ct_w2v2_get_config(const ct_w2v2 *m) { return &m->cfg; }

/* ---- config.json ---------------------------------------------------------- */

static ct_status cfg_int(json_t *j, const char *key, int *out, const char *path) {
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v)) return ct_fail(CT_ERR_FORMAT, "%s: \"%s\" missing or not an integer", path, key);
    if (json_integer_value(v) <= 0 || json_integer_value(v) > (1 << 30))
        return ct_fail(CT_ERR_FORMAT, "%s: \"%s\" = %lld out of range", path, key, (long long)json_integer_value(v));
    *out = (int)json_integer_value(v);
    return CT_OK;
}

static ct_status cfg_ints(json_t *j, const char *key, int *out, int *n, const char *path) {
    json_t *a = json_object_get(j, key);
    if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > CT_W2V2_MAX_CONV)
        return ct_fail(CT_ERR_FORMAT, "%s: \"%s\" must be a list of 1..%d integers", path, key, CT_W2V2_MAX_CONV);
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > (1 << 20))
            return ct_fail(CT_ERR_FORMAT, "%s: \"%s\"[%zu] is not a positive integer", path, key, i);
        out[i] = (int)json_integer_value(v);
    }
    *n = (int)json_array_size(a);
    return CT_OK;
}

static ct_status cfg_str_is(json_t *j, const char *key, const char *want, const char *path) {
    const char *v = json_string_value(json_object_get(j, key));
    if (!v || strcmp(v, want))
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: \"%s\" is %s%s%s; the aligner supports \"%s\"", path, key, v ? "\"" : "",
                       v ? v : "missing", v ? "\"" : "", want);
    return CT_OK;
}

static ct_status parse_config(const char *path, ct_w2v2_config *c) {
    memset(c, 0, sizeof *c);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) return ct_fail(CT_ERR_FORMAT, "%s: %s (line %d)", path, err.text, err.line);
    ct_status st = CT_OK;
    int nk = 0, ns = 0;
    if (!json_is_object(j)) st = ct_fail(CT_ERR_FORMAT, "%s: not a JSON object", path);
    if (st == CT_OK) st = cfg_ints(j, "conv_dim", c->conv_dim, &c->n_conv, path);
    if (st == CT_OK) st = cfg_ints(j, "conv_kernel", c->conv_kernel, &nk, path);
    if (st == CT_OK) st = cfg_ints(j, "conv_stride", c->conv_stride, &ns, path);
    if (st == CT_OK && (nk != c->n_conv || ns != c->n_conv))
        st = ct_fail(CT_ERR_FORMAT, "%s: conv_dim, conv_kernel and conv_stride differ in length (%d, %d, %d)", path,
                     c->n_conv, nk, ns);
    if (st == CT_OK) st = cfg_int(j, "hidden_size", &c->hidden, path);
    if (st == CT_OK) st = cfg_int(j, "num_hidden_layers", &c->layers, path);
    if (st == CT_OK) st = cfg_int(j, "num_attention_heads", &c->heads, path);
    if (st == CT_OK) st = cfg_int(j, "intermediate_size", &c->ffn, path);
    if (st == CT_OK) st = cfg_int(j, "vocab_size", &c->vocab, path);
    if (st == CT_OK) st = cfg_int(j, "num_conv_pos_embeddings", &c->pos_kernel, path);
    if (st == CT_OK) st = cfg_int(j, "num_conv_pos_embedding_groups", &c->pos_groups, path);
    if (st == CT_OK) st = cfg_str_is(j, "feat_extract_norm", "layer", path);
    if (st == CT_OK) st = cfg_str_is(j, "hidden_act", "gelu", path);
    if (st == CT_OK) st = cfg_str_is(j, "feat_extract_activation", "gelu", path);
    if (st == CT_OK && !json_is_true(json_object_get(j, "do_stable_layer_norm")))
        st = ct_fail(CT_ERR_UNSUPPORTED, "%s: the aligner needs do_stable_layer_norm = true", path);
    if (st == CT_OK) {
        json_t *ad = json_object_get(j, "adapter_attn_dim");
        if ((ad && !json_is_null(ad)) || json_is_true(json_object_get(j, "add_adapter")))
            st = ct_fail(CT_ERR_UNSUPPORTED, "%s: wav2vec2 adapters are not supported", path);
    }
    if (st == CT_OK) {
        c->conv_bias = json_is_true(json_object_get(j, "conv_bias"));
        json_t *e = json_object_get(j, "layer_norm_eps");
        c->eps = json_is_number(e) ? (float)json_number_value(e) : 1e-5f;
        if (c->hidden % c->heads || c->hidden % c->pos_groups)
            st = ct_fail(CT_ERR_FORMAT, "%s: hidden_size %d not divisible by %d heads / %d positional groups", path,
                         c->hidden, c->heads, c->pos_groups);
        c->ratio = 1;
        for (int i = 0; i < c->n_conv && st == CT_OK; i++) {
            if (c->ratio > (1 << 20) / c->conv_stride[i]) st = ct_fail(CT_ERR_FORMAT, "%s: conv strides too large", path);
            else c->ratio *= c->conv_stride[i];
        }
    }
    json_decref(j);
    return st;
}

/* ---- weights ------------------------------------------------------------- */

static ct_status keep_owned(ct_w2v2 *m, void *p) {
    if (m->n_owned == m->cap_owned) {
        size_t cap = m->cap_owned ? 2 * m->cap_owned : 64;
        void **q = realloc(m->owned, cap * sizeof *q);
        if (!q) {
            m->be->ops->free(m->be, p);
            return ct_fail(CT_ERR_OOM, "aligner weights");
        }
        m->owned = q;
        m->cap_owned = cap;
    }
    m->owned[m->n_owned++] = p;
    return CT_OK;
}

/* The tensor `name` as host float32 (malloc'd) after checking its shape. */
static ct_status read_f32(const ct_safetensors *st, const char *name, int ndim, const int64_t *shape, float **out) {
    *out = NULL;
    const ct_st_tensor *t = ct_st_find(st, name);
    if (!t) return ct_fail(CT_ERR_NOT_FOUND, "aligner weights: tensor %s is missing", name);
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == shape[i];
    if (!ok) {
        char got[96] = "", want[96] = "";
        for (int i = 0; i < t->ndim && i < 8; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? "," : "", (long long)t->shape[i]);
        for (int i = 0; i < ndim; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "," : "", (long long)shape[i]);
        return ct_fail(CT_ERR_FORMAT, "aligner weights: %s has shape (%s), the config implies (%s)", name, got, want);
    }
    float *h = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    if (!h) return ct_fail(CT_ERR_OOM, "aligner weights: %s", name);
    ct_status s = ct_st_tensor_to_f32(t, h, (size_t)t->numel);
    if (s != CT_OK) {
        free(h);
        return ct_fail_wrap(s, "aligner weights: %s", name);
    }
    *out = h;
    return CT_OK;
}

static ct_status upload_vec(ct_w2v2 *m, const float *h, size_t n, float **out) {
    void *p = NULL;
    CT_TRY(m->be->ops->alloc(m->be, n * sizeof(float), &p));
    CT_TRY(keep_owned(m, p));
    CT_TRY(m->be->ops->to_device(m->be, p, h, n * sizeof(float)));
    *out = p;
    return CT_OK;
}

static ct_status load_vec(ct_w2v2 *m, const ct_safetensors *st, const char *name, int64_t n, float **out) {
    float *h;
    CT_TRY(read_f32(st, name, 1, &n, &h));
    ct_status s = upload_vec(m, h, (size_t)n, out);
    free(h);
    return s;
}

static ct_status load_mat(ct_w2v2 *m, const ct_safetensors *st, const char *name, int ndim, const int64_t *shape,
                          ct_dtype dt, ct_tensor *out) {
    float *h;
    CT_TRY(read_f32(st, name, ndim, shape, &h));
    ct_status s = ct_tensor_upload(m->be, dt, h, CT_DTYPE_F32, ndim, shape, out);
    free(h);
    return s;
}

/* The positional conv's weight: g·v/‖v‖ with the norm over every axis but the
 * kernel one (torch weight_norm dim=2), from either spelling. */
static ct_status load_pos_conv(ct_w2v2 *m, const ct_safetensors *st) {
    const int C = m->cfg.hidden, Cg = C / m->cfg.pos_groups, K = m->cfg.pos_kernel;
    const char *gn = "wav2vec2.encoder.pos_conv_embed.conv.parametrizations.weight.original0";
    const char *vn = "wav2vec2.encoder.pos_conv_embed.conv.parametrizations.weight.original1";
    if (!ct_st_find(st, gn)) {
        gn = "wav2vec2.encoder.pos_conv_embed.conv.weight_g";
        vn = "wav2vec2.encoder.pos_conv_embed.conv.weight_v";
    }
    const int64_t gs[3] = {1, 1, K}, vs[3] = {C, Cg, K};
    float *g = NULL, *v = NULL;
    ct_status s = read_f32(st, gn, 3, gs, &g);
    if (s == CT_OK) s = read_f32(st, vn, 3, vs, &v);
    if (s == CT_OK) {
        for (int k = 0; k < K; k++) {
            double ss = 0;
            for (size_t r = 0; r < (size_t)C * Cg; r++) ss += (double)v[r * K + k] * v[r * K + k];
            double scale = ss > 0 ? g[k] / sqrt(ss) : 0.0;
            for (size_t r = 0; r < (size_t)C * Cg; r++) v[r * K + k] = (float)(v[r * K + k] * scale);
        }
        s = upload_vec(m, v, (size_t)C * Cg * K, &m->pos_w);
    }
    free(g);
    free(v);
    if (s == CT_OK) s = load_vec(m, st, "wav2vec2.encoder.pos_conv_embed.conv.bias", C, &m->pos_b);
    return s;
}

static ct_status load_weights(ct_w2v2 *m, const ct_safetensors *st, ct_dtype dt) {
    const ct_w2v2_config *c = &m->cfg;
    char n[160];
    int cin = 1;
    for (int i = 0; i < c->n_conv; i++) {
        const int64_t ws[3] = {c->conv_dim[i], cin, c->conv_kernel[i]};
        snprintf(n, sizeof n, "wav2vec2.feature_extractor.conv_layers.%d.conv.weight", i);
        CT_TRY(load_mat(m, st, n, 3, ws, cin * c->conv_kernel[i] >= 64 ? dt : CT_DTYPE_F32, &m->conv_w[i]));
        if (c->conv_bias) {
            snprintf(n, sizeof n, "wav2vec2.feature_extractor.conv_layers.%d.conv.bias", i);
            CT_TRY(load_vec(m, st, n, c->conv_dim[i], &m->conv_b[i]));
        }
        snprintf(n, sizeof n, "wav2vec2.feature_extractor.conv_layers.%d.layer_norm.weight", i);
        CT_TRY(load_vec(m, st, n, c->conv_dim[i], &m->conv_ln_g[i]));
        snprintf(n, sizeof n, "wav2vec2.feature_extractor.conv_layers.%d.layer_norm.bias", i);
        CT_TRY(load_vec(m, st, n, c->conv_dim[i], &m->conv_ln_b[i]));
        cin = c->conv_dim[i];
    }
    const int H = c->hidden;
    CT_TRY(load_vec(m, st, "wav2vec2.feature_projection.layer_norm.weight", cin, &m->fp_ln_g));
    CT_TRY(load_vec(m, st, "wav2vec2.feature_projection.layer_norm.bias", cin, &m->fp_ln_b));
    CT_TRY(load_mat(m, st, "wav2vec2.feature_projection.projection.weight", 2, (int64_t[]){H, cin}, dt, &m->fp_w));
    CT_TRY(load_vec(m, st, "wav2vec2.feature_projection.projection.bias", H, &m->fp_b));
    CT_TRY(load_pos_conv(m, st));
    m->layer = calloc((size_t)c->layers, sizeof *m->layer);
    if (!m->layer) return ct_fail(CT_ERR_OOM, "aligner layers");
    for (int l = 0; l < c->layers; l++) {
        w2v2_layer *L = &m->layer[l];
        const char *p = "wav2vec2.encoder.layers";
        struct {
            const char *what;
            ct_tensor *w;
            float **b;
            int64_t rows, cols;
        } mats[] = {
            {"attention.q_proj", &L->q, &L->bq, H, H},
            {"attention.k_proj", &L->k, &L->bk, H, H},
            {"attention.v_proj", &L->v, &L->bv, H, H},
            {"attention.out_proj", &L->o, &L->bo, H, H},
            {"feed_forward.intermediate_dense", &L->ff1, &L->bff1, c->ffn, H},
            {"feed_forward.output_dense", &L->ff2, &L->bff2, H, c->ffn},
        };
        for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
            snprintf(n, sizeof n, "%s.%d.%s.weight", p, l, mats[k].what);
            CT_TRY(load_mat(m, st, n, 2, (int64_t[]){mats[k].rows, mats[k].cols}, dt, mats[k].w));
            snprintf(n, sizeof n, "%s.%d.%s.bias", p, l, mats[k].what);
            CT_TRY(load_vec(m, st, n, mats[k].rows, mats[k].b));
        }
        snprintf(n, sizeof n, "%s.%d.layer_norm.weight", p, l);
        CT_TRY(load_vec(m, st, n, H, &L->ln1_g));
        snprintf(n, sizeof n, "%s.%d.layer_norm.bias", p, l);
        CT_TRY(load_vec(m, st, n, H, &L->ln1_b));
        snprintf(n, sizeof n, "%s.%d.final_layer_norm.weight", p, l);
        CT_TRY(load_vec(m, st, n, H, &L->ln2_g));
        snprintf(n, sizeof n, "%s.%d.final_layer_norm.bias", p, l);
        CT_TRY(load_vec(m, st, n, H, &L->ln2_b));
    }
    snprintf(n, sizeof n, "wav2vec2.encoder.layers.%d.layer_norm.weight", c->layers);
    if (ct_st_find(st, n))
        return ct_fail(CT_ERR_FORMAT, "aligner weights: %s exists but num_hidden_layers is %d", n, c->layers);
    CT_TRY(load_vec(m, st, "wav2vec2.encoder.layer_norm.weight", H, &m->enc_ln_g));
    CT_TRY(load_vec(m, st, "wav2vec2.encoder.layer_norm.bias", H, &m->enc_ln_b));
    /* the head stays float32 where the backend multiplies float32 matrices
     * (the CPU); CUDA multiplies only its activation type */
    const ct_dtype head_dt = m->be->ops->supports_weight(m->be, CT_DTYPE_F32) ? CT_DTYPE_F32 : dt;
    CT_TRY(load_mat(m, st, "lm_head.weight", 2, (int64_t[]){c->vocab, H}, head_dt, &m->head_w));
    CT_TRY(load_vec(m, st, "lm_head.bias", c->vocab, &m->head_b));
    return CT_OK;
}

ct_status ct_w2v2_open(const char *dir, ct_backend *be, const ct_w2v2_options *opts, ct_w2v2 **out) {
    *out = NULL;
    ct_w2v2_options def = ct_w2v2_default_options();
    if (!opts) opts = &def;
    if (!ct_backend_has_w2v2_ops(be))
        return ct_fail(CT_ERR_UNSUPPORTED, "aligner: backend %s lacks the wav2vec2 ops", be->ops->name);
    if (!be->ops->supports_weight(be, opts->weight_dtype))
        return ct_fail(CT_ERR_UNSUPPORTED, "aligner: backend %s does not take %s weights", be->ops->name,
                       ct_dtype_name(opts->weight_dtype));
    ct_w2v2 *m = calloc(1, sizeof *m);
    if (!m) return ct_fail(CT_ERR_OOM, "aligner");
    m->be = be;
    m->device_reserve = opts->device_reserve_bytes;
    /* bf16 matrices ask for bf16 attention products too (same precision
     * class); f16 and f32 keep float32 attention */
    m->attn_dtype = opts->weight_dtype == CT_DTYPE_BF16 ? CT_DTYPE_BF16 : CT_DTYPE_F32;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    ct_status s = parse_config(path, &m->cfg);
    ct_safetensors *st = NULL;
    if (s == CT_OK) s = ct_st_open(dir, &st);
    if (s == CT_OK) s = load_weights(m, st, opts->weight_dtype);
    if (s != CT_OK && s != CT_ERR_OOM) s = ct_fail_wrap(s, "aligner model %s", dir);
    ct_st_free(st);
    if (s != CT_OK) {
        ct_w2v2_free(m);
        return s;
    }
    *out = m;
    return CT_OK;
}

void ct_w2v2_free(ct_w2v2 *m) {
    if (!m) return;
    ct_w2v2_release_buffers(m);
    for (int i = 0; i < CT_W2V2_MAX_CONV; i++) ct_tensor_release(&m->conv_w[i]);
    ct_tensor_release(&m->fp_w);
    ct_tensor_release(&m->head_w);
    if (m->layer)
        for (int l = 0; l < m->cfg.layers; l++) {
            w2v2_layer *L = &m->layer[l];
            ct_tensor *ts[] = {&L->q, &L->k, &L->v, &L->o, &L->ff1, &L->ff2};
            for (size_t k = 0; k < 6; k++) ct_tensor_release(ts[k]);
        }
    for (size_t i = 0; i < m->n_owned; i++) m->be->ops->free(m->be, m->owned[i]);
    free(m->owned);
    free(m->layer);
    free(m);
}
