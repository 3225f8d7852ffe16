/* convert_tokenizer.c — the vocabulary side of GGUF conversion (docs/GGUF.md):
 * a tokenizer.json (Unigram or BPE) is validated exactly as the engine
 * validates it (ct_tokenizer_load + ct_tokenizer_check_model) before anything
 * is written, then embedded as tokenizer.ggml.* arrays (what CrispASR reads)
 * plus the file verbatim (tokenizer.huggingface.json, so it comes back byte
 * for byte); and a GGUF's vocabulary is read back as a tokenizer.
 */
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "core/str.h"
#include "model/convert.h"
#include "model/convert_internal.h"
#include "model/gguf.h"
#include "model/tokenizer.h"
#include "model/tokjson.h"

#define HF_JSON_KEY "tokenizer.huggingface.json"

void ct_convert_vocab_free(ct_convert_vocab *v) {
    free(v->piece);
    free(v->score);
    free(v->type);
    free(v->json);
    ct_tokenizer_free(v->tok);
    memset(v, 0, sizeof *v);
}

static int is_byte_piece(const char *p) { return strlen(p) == 6 && !strncmp(p, "<0x", 3) && p[5] == '>'; }

/* Unigram scores by id from the JSON (0 past model.vocab and for other models). */
static ct_status read_scores(const char *path, const char *text, size_t len, float *score, int n) {
    json_error_t e;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
    if (!root) return ct_fail(CT_ERR_FORMAT, "%s: not valid JSON: %s", path, e.text); /* the loader took it */
    json_t *model = json_object_get(root, "model"), *vocab = json_object_get(model, "vocab");
    const char *type = json_string_value(json_object_get(model, "type"));
    if (type && strcmp(type, "Unigram") == 0 && json_is_array(vocab))
        for (size_t i = 0; i < json_array_size(vocab) && i < (size_t)n; i++) {
            json_t *sc = json_array_get(json_array_get(vocab, i), 1);
            score[i] = json_is_number(sc) ? (float)json_number_value(sc) : 0.0f;
        }
    json_decref(root);
    return CT_OK;
}

ct_status ct_convert_vocab_read(const char *dir, const ct_model_config *c, ct_convert_vocab *v) {
    memset(v, 0, sizeof *v);
    char p[PATH_MAX];
    CT_TRY(ct_path_join(p, sizeof p, dir, "tokenizer.json"));
    if (!ct_fs_exists(p)) /* absent; a FIFO, device or folder under the name is refused by the read, by kind */
        return ct_fail(CT_ERR_NOT_FOUND, "%s: no tokenizer.json: the engine cannot run a model without one, so no "
                                         "GGUF is written", dir);
    CT_TRY(ct_fs_read_all(p, CT_TOKENIZER_MAX_BYTES, &v->json, &v->json_len));
    ct_status s = ct_tokenizer_load_buffer(v->json, v->json_len, p, &v->tok);
    if (s == CT_OK) s = ct_tokenizer_check_model(v->tok, c->vocab_size, c->eos_id, p, NULL);
    int n = s == CT_OK ? ct_tokenizer_vocab_size(v->tok) : 0;
    if (s == CT_OK) {
        v->piece = calloc((size_t)n, sizeof *v->piece);
        v->score = calloc((size_t)n, sizeof *v->score);
        v->type = calloc((size_t)n, sizeof *v->type);
        if (!v->piece || !v->score || !v->type) s = ct_fail(CT_ERR_OOM, "%s: out of memory", p);
    }
    if (s == CT_OK) s = read_scores(p, v->json, v->json_len, v->score, n);
    for (int i = 0; s == CT_OK && i < n; i++) {
        v->piece[i] = ct_tokenizer_piece(v->tok, i);
        /* llama.cpp token types: 1 normal, 3 control, 6 byte */
        v->type[i] = ct_tokenizer_is_special(v->tok, i) ? 3 : is_byte_piece(v->piece[i]) ? 6 : 1;
    }
    if (s != CT_OK) {
        ct_convert_vocab_free(v);
        return s;
    }
    v->n = n;
    return CT_OK;
}

ct_status ct_convert_vocab_put(ct_gguf_writer *w, const ct_convert_vocab *v) {
    CT_TRY(ct_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama"));
    CT_TRY(ct_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", v->piece, (size_t)v->n));
    CT_TRY(ct_gguf_writer_set_f32_array(w, "tokenizer.ggml.scores", v->score, (size_t)v->n));
    CT_TRY(ct_gguf_writer_set_i32_array(w, "tokenizer.ggml.token_type", v->type, (size_t)v->n));
    CT_TRY(ct_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0));
    return ct_gguf_writer_set_str(w, HF_JSON_KEY, v->json);
}

/* ---- GGUF → tokenizer ---------------------------------------------------- */

static const ct_gguf_value *token_list(const ct_gguf *g) {
    const ct_gguf_value *t = ct_gguf_find(g, "tokenizer.ggml.tokens");
    return t && t->type == CT_GGUF_ARRAY && t->arr.elem == CT_GGUF_STRING ? t : NULL;
}

/* The embedded tokenizer.json must describe the token list it travels with:
 * a file whose arrays were edited after conversion is refused rather than
 * silently decoded with the other vocabulary. */
static ct_status check_embedded(const char *label, const ct_gguf_value *tok, const char *text, size_t len) {
    ct_tokenizer *t;
    CT_TRY(ct_tokenizer_load_buffer(text, len, label, &t));
    ct_status s = CT_OK;
    if (tok && (uint64_t)ct_tokenizer_vocab_size(t) != tok->arr.n)
        s = ct_fail(CT_ERR_FORMAT, "%s: " HF_JSON_KEY " has %d pieces, tokenizer.ggml.tokens %llu", label,
                    ct_tokenizer_vocab_size(t), (unsigned long long)tok->arr.n);
    for (uint64_t i = 0; s == CT_OK && tok && i < tok->arr.n; i++) {
        const char *p = ct_tokenizer_piece(t, (int32_t)i);
        const ct_gguf_value *q = &tok->arr.items[i];
        if (strlen(p) != q->str.len || memcmp(p, q->str.s, q->str.len) != 0)
            s = ct_fail(CT_ERR_FORMAT, "%s: token %llu is \"%s\" in " HF_JSON_KEY " but \"%s\" in tokenizer.ggml.tokens",
                        label, (unsigned long long)i, p, q->str.s);
    }
    ct_tokenizer_free(t);
    return s;
}

ct_status ct_convert_gguf_tokenizer_text(const ct_gguf *g, const char *label, char **text, size_t *len) {
    *text = NULL;
    const ct_gguf_value *tok = token_list(g), *hf = ct_gguf_find(g, HF_JSON_KEY);
    if (hf) {
        if (hf->type != CT_GGUF_STRING || strlen(hf->str.s) != hf->str.len)
            return ct_fail(CT_ERR_FORMAT, "%s: " HF_JSON_KEY " is not a string without NUL bytes", label);
        CT_TRY(check_embedded(label, tok, hf->str.s, hf->str.len));
        if (!(*text = malloc(hf->str.len + 1))) return ct_fail(CT_ERR_OOM, "%s: out of memory", label);
        memcpy(*text, hf->str.s, hf->str.len + 1);
        *len = hf->str.len;
        return CT_OK;
    }
    if (!tok) return ct_fail(CT_ERR_NOT_FOUND, "%s: no tokenizer.ggml.tokens string array", label);
    const ct_gguf_value *sc = ct_gguf_find(g, "tokenizer.ggml.scores");
    const ct_gguf_value *ty = ct_gguf_find(g, "tokenizer.ggml.token_type");
    if (tok->arr.n > INT_MAX / 2) return ct_fail(CT_ERR_LIMIT, "%s: too many tokens", label);
    int n = (int)tok->arr.n;
    const char **pieces = calloc((size_t)n + 1, sizeof *pieces);
    float *scores = calloc((size_t)n + 1, sizeof *scores);
    unsigned char *special = calloc((size_t)n + 1, 1);
    ct_status s = CT_OK;
    if (!pieces || !scores || !special) s = ct_fail(CT_ERR_OOM, "%s: out of memory", label);
    for (int i = 0; s == CT_OK && i < n; i++) {
        pieces[i] = tok->arr.items[i].str.s;
        if (sc && sc->type == CT_GGUF_ARRAY && sc->arr.raw && (uint64_t)i < sc->arr.n)
            scores[i] = (float)ct_gguf_array_num(sc, (uint64_t)i);
        if (ty && ty->type == CT_GGUF_ARRAY && ty->arr.raw && (uint64_t)i < ty->arr.n)
            special[i] = ct_gguf_array_num(ty, (uint64_t)i) == 3;
    }
    if (s == CT_OK) s = ct_tokjson_dump(label, pieces, scores, special, n, text);
    if (s == CT_OK) *len = strlen(*text);
    free(pieces);
    free(scores);
    free(special);
    return s;
}

ct_status ct_convert_gguf_tokenizer(const char *gguf, const char *path) {
    ct_gguf *g;
    CT_TRY(ct_gguf_open(gguf, &g));
    char *text;
    size_t len;
    ct_status s = ct_convert_gguf_tokenizer_text(g, gguf, &text, &len);
    ct_gguf_free(g);
    if (s != CT_OK) return s;
    s = ct_fs_write_atomic(path, text, len);
    free(text);
    return s;
}

ct_status ct_convert_gguf_vocab_text(const char *gguf, const ct_model_config *c, char **text, size_t *len) {
    *text = NULL;
    ct_gguf *g;
    CT_TRY(ct_gguf_open(gguf, &g));
    ct_status s = ct_convert_gguf_tokenizer_text(g, gguf, text, len);
    ct_gguf_free(g);
    if (s == CT_ERR_NOT_FOUND)
        s = ct_fail(CT_ERR_NOT_FOUND, "%s: the GGUF carries no vocabulary (tokenizer.ggml.tokens): the engine cannot "
                                      "run the model without one", gguf);
    ct_tokenizer *t = NULL;
    if (s == CT_OK) s = ct_tokenizer_load_buffer(*text, *len, gguf, &t);
    if (s == CT_OK) s = ct_tokenizer_check_model(t, c->vocab_size, c->eos_id, gguf, NULL);
    ct_tokenizer_free(t);
    if (s != CT_OK) {
        free(*text);
        *text = NULL;
    }
    return s;
}

ct_status ct_convert_load_tokenizer(const char *model, ct_tokenizer **out) {
    *out = NULL;
    if (!ct_str_ends_with(model, ".gguf")) {
        char p[PATH_MAX];
        CT_TRY(ct_path_join(p, sizeof p, model, "tokenizer.json"));
        return ct_tokenizer_load(p, out);
    }
    ct_gguf *g;
    CT_TRY(ct_gguf_open(model, &g));
    char *text;
    size_t len;
    ct_status s = ct_convert_gguf_tokenizer_text(g, model, &text, &len);
    ct_gguf_free(g);
    if (s != CT_OK) return s;
    s = ct_tokenizer_load_buffer(text, len, model, out);
    free(text);
    return s;
}
