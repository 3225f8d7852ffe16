/* convert.c — safetensors directory ↔ GGUF; see convert.h. Float tensors
 * convert exactly when widening (f16/bf16 → f32) and round to nearest even
 * when narrowing; I64 BatchNorm counters are not carried into GGUF (CrispASR
 * drops them) and are written back as zeros.
 */
#include "model/convert.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "core/log.h"
#include "model/checkpoint.h"
#include "model/gguf.h"
#include "model/safetensors.h"
#include "model/tokjson.h"

#define KEY(k) "cohere_transcribe." k

static int is_float(ct_dtype d) { return d == CT_DTYPE_F32 || d == CT_DTYPE_F16 || d == CT_DTYPE_BF16; }

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Convert n elements of src (dtype from) into dst (dtype to). */
static void convert_elems(void *dst, ct_dtype to, const void *src, ct_dtype from, size_t n) {
    const uint8_t *s = src;
    uint8_t *d = dst;
    if (from == to) {
        memcpy(dst, src, n * ct_dtype_size(from));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float f;
        uint16_t h;
        if (from == CT_DTYPE_F32) memcpy(&f, s + 4 * i, 4);
        else {
            memcpy(&h, s + 2 * i, 2);
            f = from == CT_DTYPE_BF16 ? ct_bf16_to_f32(h) : ct_f16_to_f32(h);
        }
        if (to == CT_DTYPE_F32) memcpy(d + 4 * i, &f, 4);
        else {
            h = to == CT_DTYPE_BF16 ? ct_f32_to_bf16(f) : ct_f32_to_f16(f);
            memcpy(d + 2 * i, &h, 2);
        }
    }
}

/* ---- tokenizer.json → token arrays (for the GGUF) ----------------------- */

typedef struct tokens {
    char **piece;
    float *score;
    int32_t *type; /* llama.cpp token types: 1 normal, 3 control, 6 byte */
    int n;
} tokens;

static void tokens_free(tokens *t) {
    for (int i = 0; t->piece && i < t->n; i++) free(t->piece[i]);
    free(t->piece);
    free(t->score);
    free(t->type);
    memset(t, 0, sizeof *t);
}

static int is_byte_piece(const char *p) {
    return strlen(p) == 6 && !strncmp(p, "<0x", 3) && p[5] == '>';
}

/* Reads a Unigram tokenizer.json (vocab as [piece, score] pairs). Absent
 * file: t->n = 0 and CT_OK. */
static ct_status read_tokenizer(const char *dir, tokens *t) {
    memset(t, 0, sizeof *t);
    char p[PATH_MAX];
    CT_TRY(ct_path_join(p, sizeof p, dir, "tokenizer.json"));
    if (!ct_fs_is_file(p)) {
        ct_log(CT_LOG_WARN, "%s: no tokenizer.json: the GGUF will carry no vocabulary", dir);
        return CT_OK;
    }
    char *text;
    size_t len;
    CT_TRY(ct_fs_read_all(p, (size_t)256 << 20, &text, &len));
    json_error_t e;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
    free(text);
    if (!root) return ct_fail(CT_ERR_FORMAT, "%s: not valid JSON: %s", p, e.text);
    ct_status s = CT_OK;
    json_t *model = json_object_get(root, "model"), *vocab = json_object_get(model, "vocab");
    json_t *type = json_object_get(model, "type");
    if (!json_is_string(type) || strcmp(json_string_value(type), "Unigram") != 0 || !json_is_array(vocab)) {
        s = ct_fail(CT_ERR_UNSUPPORTED, "%s: only a Unigram model with a vocab list can be embedded", p);
        goto done;
    }
    int n = (int)json_array_size(vocab);
    t->piece = calloc((size_t)n + 1, sizeof *t->piece);
    t->score = calloc((size_t)n + 1, sizeof *t->score);
    t->type = calloc((size_t)n + 1, sizeof *t->type);
    if (!t->piece || !t->score || !t->type) {
        s = ct_fail(CT_ERR_OOM, "%s: out of memory", p);
        goto done;
    }
    t->n = n;
    for (int i = 0; i < n; i++) {
        json_t *e2 = json_array_get(vocab, (size_t)i);
        json_t *pc = json_array_get(e2, 0), *sc = json_array_get(e2, 1);
        if (!json_is_string(pc) || !json_is_number(sc)) {
            s = ct_fail(CT_ERR_FORMAT, "%s: vocab entry %d is not [piece, score]", p, i);
            goto done;
        }
        if (!(t->piece[i] = strdup(json_string_value(pc)))) {
            s = ct_fail(CT_ERR_OOM, "%s: out of memory", p);
            goto done;
        }
        t->score[i] = (float)json_number_value(sc);
        t->type[i] = is_byte_piece(t->piece[i]) ? 6 : 1;
    }
    json_t *added = json_object_get(root, "added_tokens");
    size_t k;
    json_t *a;
    json_array_foreach(added, k, a) {
        json_t *id = json_object_get(a, "id"), *sp = json_object_get(a, "special");
        if (json_is_integer(id) && json_is_true(sp) && json_integer_value(id) >= 0 && json_integer_value(id) < n)
            t->type[json_integer_value(id)] = 3;
    }
done:
    json_decref(root);
    if (s != CT_OK) tokens_free(t);
    return s;
}

/* ---- safetensors directory → GGUF --------------------------------------- */

static ct_status put_meta(ct_gguf_writer *w, const ct_model_config *c, const tokens *tk) {
    CT_TRY(ct_gguf_writer_set_str(w, "general.architecture", "cohere-transcribe"));
    CT_TRY(ct_gguf_writer_set_str(w, "general.name", "cohere-transcribe"));
    struct {
        const char *k;
        int v;
    } u[] = {
        {KEY("vocab_size"), c->vocab_size},      {KEY("encoder.n_layers"), c->enc_layers},
        {KEY("encoder.d_model"), c->enc_d_model}, {KEY("encoder.n_heads"), c->enc_heads},
        {KEY("encoder.head_dim"), c->enc_d_model / c->enc_heads}, {KEY("encoder.ffn_dim"), c->enc_ff},
        {KEY("encoder.conv_kernel"), c->enc_conv_kernel}, {KEY("decoder.n_layers"), c->dec_layers},
        {KEY("decoder.d_model"), c->dec_d_model}, {KEY("decoder.n_heads"), c->dec_heads},
        {KEY("decoder.head_dim"), c->dec_d_model / c->dec_heads}, {KEY("decoder.ffn_dim"), c->dec_ff},
        {KEY("decoder.max_ctx"), c->dec_max_positions}, {KEY("audio.sample_rate"), c->sample_rate},
        {KEY("audio.n_mels"), c->n_mels},         {KEY("audio.n_fft"), c->n_fft},
        {KEY("audio.hop_length"), c->hop_length}, {KEY("audio.win_length"), c->win_length},
    };
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) CT_TRY(ct_gguf_writer_set_u32(w, u[i].k, (uint32_t)u[i].v));
    if (c->max_audio_clip_s > 0) CT_TRY(ct_gguf_writer_set_f32(w, KEY("audio.max_clip_s"), (float)c->max_audio_clip_s));
    if (c->n_languages > 0) {
        const char *l[CT_CONFIG_MAX_LANGS];
        for (int i = 0; i < c->n_languages; i++) l[i] = c->languages[i];
        CT_TRY(ct_gguf_writer_set_str_array(w, KEY("supported_languages"), l, (size_t)c->n_languages));
    }
    if (c->decoder_start_id >= 0) CT_TRY(ct_gguf_writer_set_u32(w, KEY("decoder_start_token_id"), (uint32_t)c->decoder_start_id));
    if (c->bos_id >= 0) CT_TRY(ct_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)c->bos_id));
    if (c->eos_id >= 0) CT_TRY(ct_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)c->eos_id));
    if (c->pad_id >= 0) CT_TRY(ct_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)c->pad_id));
    if (tk->n > 0) {
        CT_TRY(ct_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama"));
        CT_TRY(ct_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", (const char *const *)tk->piece, (size_t)tk->n));
        CT_TRY(ct_gguf_writer_set_f32_array(w, "tokenizer.ggml.scores", tk->score, (size_t)tk->n));
        CT_TRY(ct_gguf_writer_set_i32_array(w, "tokenizer.ggml.token_type", tk->type, (size_t)tk->n));
        CT_TRY(ct_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0));
    }
    return CT_OK;
}

/* Stream every tensor of ck through a declare/convert/write cycle. */
typedef ct_status (*declare_fn)(void *w, const char *name, ct_dtype dt, int ndim, const int64_t *shape);
typedef ct_status (*write_fn)(void *w, const void *data);

static ct_status stream_tensors(const ct_checkpoint *ck, void *w, declare_fn decl, write_fn wr, int dtype,
                                int to_gguf) {
    size_t n = ct_checkpoint_count(ck), maxb = 0;
    ct_status s = CT_OK;
    for (int pass = 0; pass < 2 && s == CT_OK; pass++) {
        void *tmp = NULL;
        if (pass == 1 && !(tmp = malloc(maxb ? maxb : 1))) return ct_fail(CT_ERR_OOM, "convert: out of memory");
        for (size_t i = 0; i < n && s == CT_OK; i++) {
            const ct_st_tensor *t = ct_checkpoint_at(ck, i);
            char name[300];
            if (to_gguf) {
                if (ends_with(t->name, ".num_batches_tracked")) continue;
                if (ct_gguf_name_from_nemo(t->name, name, sizeof name) != CT_OK) {
                    if (pass == 0) ct_log(CT_LOG_WARN, "convert: tensor '%s' has no GGUF name: skipped", t->name);
                    continue;
                }
            } else {
                if (strncmp(t->name, "preprocessor.", 13) == 0) continue;
                snprintf(name, sizeof name, "%s%s", strncmp(t->name, "log_softmax.", 12) ? "model." : "", t->name);
            }
            ct_dtype dt = (dtype != CT_CONVERT_KEEP_DTYPE && is_float(t->dtype)) ? (ct_dtype)dtype : t->dtype;
            if (pass == 0) {
                s = decl(w, name, dt, t->ndim, t->shape);
                size_t b = (size_t)t->numel * ct_dtype_size(dt);
                if (b > maxb) maxb = b;
            } else {
                if (dt == t->dtype) {
                    s = wr(w, t->data);
                } else {
                    convert_elems(tmp, dt, t->data, t->dtype, (size_t)t->numel);
                    s = wr(w, tmp);
                }
                ct_checkpoint_release(ck, t); /* keep resident memory at about one tensor */
            }
        }
        free(tmp);
        if (pass == 0 && s == CT_OK && !to_gguf) {
            /* the BatchNorm counters transformers expects */
            const ct_model_config *c = ct_checkpoint_config(ck);
            for (int l = 0; l < c->enc_layers && s == CT_OK; l++) {
                char nm[128];
                snprintf(nm, sizeof nm, "model.encoder.layers.%d.conv.batch_norm.num_batches_tracked", l);
                if (ct_checkpoint_tensor(ck, nm + 6)) continue; /* already carried */
                s = decl(w, nm, CT_DTYPE_I64, 0, NULL);
            }
        }
        if (pass == 1 && s == CT_OK && !to_gguf) {
            const ct_model_config *c = ct_checkpoint_config(ck);
            int64_t zero = 0;
            for (int l = 0; l < c->enc_layers && s == CT_OK; l++) {
                char nm[128];
                snprintf(nm, sizeof nm, "encoder.layers.%d.conv.batch_norm.num_batches_tracked", l);
                if (!ct_checkpoint_tensor(ck, nm)) s = wr(w, &zero);
            }
        }
    }
    return s;
}

static ct_status g_decl(void *w, const char *n, ct_dtype d, int nd, const int64_t *sh) {
    return ct_gguf_writer_add_tensor(w, n, d, nd, sh);
}
static ct_status g_write(void *w, const void *d) { return ct_gguf_writer_write(w, d); }
static ct_status s_decl(void *w, const char *n, ct_dtype d, int nd, const int64_t *sh) {
    return ct_st_writer_add(w, n, d, nd, sh);
}
static ct_status s_write(void *w, const void *d) { return ct_st_writer_write(w, d); }

static ct_status check_dtype(int dtype) {
    if (dtype == CT_CONVERT_KEEP_DTYPE || is_float((ct_dtype)dtype)) return CT_OK;
    return ct_fail(CT_ERR_INVALID_ARG, "convert: the target dtype must be f32, f16 or bf16");
}

ct_status ct_convert_to_gguf(const char *dir, const char *out, int dtype) {
    CT_TRY(check_dtype(dtype));
    ct_checkpoint *ck;
    CT_TRY(ct_checkpoint_open(dir, &ck));
    tokens tk;
    ct_status s = read_tokenizer(ct_checkpoint_dir(ck), &tk);
    ct_gguf_writer *w = NULL;
    if (s == CT_OK) s = ct_gguf_writer_create(out, &w);
    if (s == CT_OK) s = put_meta(w, ct_checkpoint_config(ck), &tk);
    if (s == CT_OK) s = stream_tensors(ck, w, g_decl, g_write, dtype, 1);
    if (s == CT_OK) s = ct_gguf_writer_finish(w);
    ct_gguf_writer_free(w);
    tokens_free(&tk);
    ct_checkpoint_free(ck);
    return s;
}

/* ---- GGUF → safetensors directory --------------------------------------- */

ct_status ct_convert_gguf_tokenizer(const char *gguf, const char *path) {
    ct_gguf *g;
    CT_TRY(ct_gguf_open(gguf, &g));
    const ct_gguf_value *tok = ct_gguf_find(g, "tokenizer.ggml.tokens");
    const ct_gguf_value *sc = ct_gguf_find(g, "tokenizer.ggml.scores");
    const ct_gguf_value *ty = ct_gguf_find(g, "tokenizer.ggml.token_type");
    ct_status s = CT_OK;
    if (!tok || tok->type != CT_GGUF_ARRAY || tok->arr.elem != CT_GGUF_STRING) {
        ct_gguf_free(g);
        return ct_fail(CT_ERR_NOT_FOUND, "%s: no tokenizer.ggml.tokens string array", gguf);
    }
    int n = (int)tok->arr.n;
    const char **pieces = calloc((size_t)n + 1, sizeof *pieces);
    float *scores = calloc((size_t)n + 1, sizeof *scores);
    unsigned char *special = calloc((size_t)n + 1, 1);
    if (!pieces || !scores || !special) s = ct_fail(CT_ERR_OOM, "%s: out of memory", gguf);
    for (int i = 0; s == CT_OK && i < n; i++) {
        pieces[i] = tok->arr.items[i].str.s;
        if (sc && sc->type == CT_GGUF_ARRAY && sc->arr.raw && (uint64_t)i < sc->arr.n)
            scores[i] = (float)ct_gguf_array_num(sc, (uint64_t)i);
        if (ty && ty->type == CT_GGUF_ARRAY && ty->arr.raw && (uint64_t)i < ty->arr.n)
            special[i] = ct_gguf_array_num(ty, (uint64_t)i) == 3;
    }
    if (s == CT_OK) s = ct_tokjson_write(path, pieces, scores, special, n);
    free(pieces);
    free(scores);
    free(special);
    ct_gguf_free(g);
    return s;
}

ct_status ct_convert_from_gguf(const char *gguf, const char *outdir, int dtype) {
    CT_TRY(check_dtype(dtype));
    ct_checkpoint *ck;
    CT_TRY(ct_checkpoint_open(gguf, &ck));
    if (dtype == CT_CONVERT_KEEP_DTYPE)
        dtype = (int)ct_checkpoint_tensor(ck, "transf_decoder._embedding.token_embedding.weight")->dtype;
    ct_status s = ct_fs_mkdirs(outdir);
    char p[PATH_MAX];
    ct_st_writer *w = NULL;
    if (s == CT_OK) s = ct_path_join(p, sizeof p, outdir, "model.safetensors");
    if (s == CT_OK) s = ct_st_writer_create(p, &w);
    if (s == CT_OK) s = ct_st_writer_set_metadata(w, "format", "pt");
    if (s == CT_OK) s = stream_tensors(ck, w, s_decl, s_write, dtype, 0);
    if (s == CT_OK) s = ct_st_writer_finish(w);
    ct_st_writer_free(w);
    const char *dn = dtype == CT_DTYPE_F32 ? "float32" : dtype == CT_DTYPE_BF16 ? "bfloat16" : "float16";
    if (s == CT_OK) s = ct_config_write_transformers(ct_checkpoint_config(ck), dn, outdir);
    if (s == CT_OK) {
        s = ct_path_join(p, sizeof p, outdir, "tokenizer.json");
        if (s == CT_OK) s = ct_convert_gguf_tokenizer(gguf, p);
        if (s == CT_ERR_NOT_FOUND) {
            ct_log(CT_LOG_WARN, "%s: no vocabulary in the GGUF: no tokenizer.json written", gguf);
            s = CT_OK;
        }
    }
    ct_checkpoint_free(ck);
    return s;
}
