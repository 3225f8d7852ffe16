/* gguf_checkpoint.c — open a GGUF file (CrispASR's Cohere Transcribe names and
 * metadata keys, docs/GGUF.md) as a ct_checkpoint: metadata becomes the
 * config, tensor names are mapped back to the NeMo names, and the common
 * derivation and verification of checkpoint.c runs on top.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "model/checkpoint_internal.h"
#include "model/gguf.h"

#define KEY(k) "cohere_transcribe." k

static ct_status opt_int(const ct_gguf *g, const char *key, int *dst) {
    int64_t v;
    ct_status s = ct_gguf_get_int(g, key, 1, 1 << 24, &v);
    if (s == CT_ERR_NOT_FOUND) return CT_OK; /* stays -1 or its default */
    if (s != CT_OK) return s;
    *dst = (int)v;
    return CT_OK;
}

static int token_id(const ct_gguf *g, const char *piece) {
    const ct_gguf_value *t = ct_gguf_find(g, "tokenizer.ggml.tokens");
    if (!t || t->type != CT_GGUF_ARRAY || t->arr.elem != CT_GGUF_STRING) return -1;
    for (uint64_t i = 0; i < t->arr.n && i < (1u << 24); i++)
        if (strcmp(t->arr.items[i].str.s, piece) == 0) return (int)i;
    return -1;
}

/* A special id from its llama.cpp-style key, else by looking its token up. */
static ct_status special_id(const ct_gguf *g, const char *key, const char *piece, int *dst) {
    int64_t v;
    ct_status s = ct_gguf_get_int(g, key, 0, (1 << 24) - 1, &v);
    if (s == CT_OK) {
        *dst = (int)v;
        return CT_OK;
    }
    if (s != CT_ERR_NOT_FOUND) return s;
    *dst = token_id(g, piece);
    return CT_OK;
}

static ct_status read_config(const ct_gguf *g, const char *path, ct_model_config *c) {
    const char *arch;
    ct_status s = ct_gguf_get_str(g, "general.architecture", &arch);
    if (s != CT_OK) return s;
    if (strcmp(arch, "cohere-transcribe") != 0)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: general.architecture '%s' is not cohere-transcribe", path, arch);
    memset(c, 0, sizeof *c);
    c->layout = CT_CONFIG_GGUF;
    int *unknown[] = {&c->enc_layers, &c->enc_d_model, &c->enc_heads, &c->enc_ff, &c->enc_conv_kernel,
                      &c->subsampling_factor, &c->subsampling_channels, &c->enc_max_positions, &c->dec_layers,
                      &c->dec_d_model, &c->dec_heads, &c->dec_ff, &c->dec_max_positions, &c->vocab_size,
                      &c->n_mels, &c->pad_id, &c->eos_id, &c->bos_id, &c->decoder_start_id};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) *unknown[i] = -1;
    c->sample_rate = 16000, c->n_fft = 512, c->hop_length = 160, c->win_length = 400;
    c->max_audio_clip_s = -1, c->overlap_chunk_s = -1;
    struct {
        const char *key;
        int *dst;
    } ints[] = {
        {KEY("vocab_size"), &c->vocab_size},           {KEY("encoder.n_layers"), &c->enc_layers},
        {KEY("encoder.d_model"), &c->enc_d_model},     {KEY("encoder.n_heads"), &c->enc_heads},
        {KEY("encoder.ffn_dim"), &c->enc_ff},          {KEY("encoder.conv_kernel"), &c->enc_conv_kernel},
        {KEY("decoder.n_layers"), &c->dec_layers},     {KEY("decoder.d_model"), &c->dec_d_model},
        {KEY("decoder.n_heads"), &c->dec_heads},       {KEY("decoder.ffn_dim"), &c->dec_ff},
        {KEY("decoder.max_ctx"), &c->dec_max_positions}, {KEY("audio.sample_rate"), &c->sample_rate},
        {KEY("audio.n_mels"), &c->n_mels},             {KEY("audio.n_fft"), &c->n_fft},
        {KEY("audio.hop_length"), &c->hop_length},     {KEY("audio.win_length"), &c->win_length},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) CT_TRY(opt_int(g, ints[i].key, ints[i].dst));
    /* head_dim must agree with d_model / heads where both are given */
    int hd = -1;
    CT_TRY(opt_int(g, KEY("encoder.head_dim"), &hd));
    if (hd > 0 && c->enc_heads > 0 && c->enc_d_model > 0 && hd * c->enc_heads != c->enc_d_model)
        return ct_fail(CT_ERR_FORMAT, "%s: encoder head_dim %d × %d heads != d_model %d", path, hd, c->enc_heads,
                       c->enc_d_model);
    hd = -1;
    CT_TRY(opt_int(g, KEY("decoder.head_dim"), &hd));
    if (hd > 0 && c->dec_heads > 0 && c->dec_d_model > 0 && hd * c->dec_heads != c->dec_d_model)
        return ct_fail(CT_ERR_FORMAT, "%s: decoder head_dim %d × %d heads != d_model %d", path, hd, c->dec_heads,
                       c->dec_d_model);
    CT_TRY(special_id(g, "tokenizer.ggml.padding_token_id", "<pad>", &c->pad_id));
    CT_TRY(special_id(g, "tokenizer.ggml.eos_token_id", "<|endoftext|>", &c->eos_id));
    CT_TRY(special_id(g, "tokenizer.ggml.bos_token_id", "<|startoftranscript|>", &c->bos_id));
    CT_TRY(special_id(g, KEY("decoder_start_token_id"), "\xe2\x96\x81", &c->decoder_start_id));
    const ct_gguf_value *langs = ct_gguf_find(g, KEY("supported_languages"));
    if (langs) {
        if (langs->type != CT_GGUF_ARRAY || langs->arr.elem != CT_GGUF_STRING)
            return ct_fail(CT_ERR_FORMAT, "%s: " KEY("supported_languages") " is not a string array", path);
        if (langs->arr.n > CT_CONFIG_MAX_LANGS)
            return ct_fail(CT_ERR_LIMIT, "%s: more than %d supported languages", path, CT_CONFIG_MAX_LANGS);
        for (uint64_t i = 0; i < langs->arr.n; i++) {
            const ct_gguf_value *l = &langs->arr.items[i];
            if (l->str.len == 0 || l->str.len >= sizeof c->languages[0] || strlen(l->str.s) != l->str.len)
                return ct_fail(CT_ERR_FORMAT, "%s: supported language %llu is not a short string", path,
                               (unsigned long long)i);
            strcpy(c->languages[c->n_languages++], l->str.s);
        }
    }
    double clip;
    s = ct_gguf_get_float(g, KEY("audio.max_clip_s"), &clip);
    if (s == CT_OK) c->max_audio_clip_s = clip;
    else if (s != CT_ERR_NOT_FOUND) return s;
    return CT_OK;
}

static void free_gguf(void *p) { ct_gguf_free(p); }

typedef struct mapped {
    const char *nemo, *gguf;
} mapped;

static int cmp_mapped(const void *a, const void *b) {
    const mapped *x = a, *y = b;
    int c = strcmp(x->nemo, y->nemo);
    return c ? c : strcmp(x->gguf, y->gguf);
}

/* Two GGUF tensors whose names map to one NeMo name ("enc.blk.07.…" and
 * "enc.blk.7.…") would make one shadow the other: refuse, naming both. */
static ct_status refuse_collisions(const char *path, const ct_gguf *g, char *const *names, size_t n) {
    mapped *m = malloc((n ? n : 1) * sizeof *m);
    if (!m) return ct_fail(CT_ERR_OOM, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++) m[i] = (mapped){names[i], ct_gguf_tensor_at(g, i)->name};
    qsort(m, n, sizeof *m, cmp_mapped);
    ct_status s = CT_OK;
    for (size_t i = 1; i < n && s == CT_OK; i++)
        if (strcmp(m[i].nemo, m[i - 1].nemo) == 0)
            s = ct_fail(CT_ERR_FORMAT, "%s: tensors '%s' and '%s' both map to '%s'", path, m[i - 1].gguf, m[i].gguf,
                        m[i].nemo);
    free(m);
    return s;
}

ct_status ct_checkpoint_open_gguf(const char *path, ct_checkpoint **out) {
    *out = NULL;
    ct_gguf *g;
    CT_TRY(ct_gguf_open(path, &g));
    ct_checkpoint *ck;
    ct_status s = ct_checkpoint_new(path, &ck);
    if (s != CT_OK) {
        ct_gguf_free(g);
        return s;
    }
    ct_checkpoint_set_source(ck, g, free_gguf);
    ct_checkpoint_set_file_backed(ck);
    s = read_config(g, path, ct_checkpoint_config_mut(ck));
    size_t n = ct_gguf_tensor_count(g);
    ct_st_tensor *renamed = calloc(n ? n : 1, sizeof *renamed);
    const ct_st_tensor **src = calloc(n ? n : 1, sizeof *src);
    char **names = calloc(n ? n : 1, sizeof *names);
    if (s == CT_OK && (!renamed || !src || !names)) s = ct_fail(CT_ERR_OOM, "%s: out of memory", path);
    for (size_t i = 0; s == CT_OK && i < n; i++) {
        const ct_st_tensor *t = ct_gguf_tensor_at(g, i);
        char nm[256];
        renamed[i] = *t;
        if (ct_gguf_name_to_nemo(t->name, nm, sizeof nm) == CT_OK) {
            names[i] = strdup(nm);
        } else {
            ct_log(CT_LOG_DEBUG, "%s: tensor '%s' has no NeMo name; kept as is", path, t->name);
            names[i] = strdup(t->name);
        }
        if (!names[i]) s = ct_fail(CT_ERR_OOM, "%s: out of memory", path);
        renamed[i].name = names[i];
        src[i] = &renamed[i];
    }
    if (s == CT_OK) s = refuse_collisions(path, g, names, n);
    if (s == CT_OK) s = ct_checkpoint_build(ck, src, n, 0);
    for (size_t i = 0; names && i < n; i++) free(names[i]);
    free(names);
    free(src);
    free(renamed);
    if (s == CT_OK) s = ct_checkpoint_finish(ck);
    if (s != CT_OK) {
        ct_checkpoint_free(ck);
        return s;
    }
    *out = ck;
    return CT_OK;
}
