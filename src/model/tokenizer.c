/* tokenizer.c — reads a Hugging Face tokenizer.json (Unigram or BPE model,
 * added tokens, decoder chain) into id <-> piece tables, builds the Cohere
 * decoder prompt by token string, and decodes ids to text the way the
 * `tokenizers` library does (decode_chain of each decoder, then concatenation).
 * It does not encode text, and it ignores normalizer/pre-tokenizer sections.
 */
#include "model/tokenizer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"

#define MAX_VOCAB (1 << 22)   /* ids; the release has 16384 */
#define MAX_STEPS 32          /* decoder steps after flattening Sequences */
#define MAX_DEPTH 8           /* nesting of Sequence decoders */
#define MAX_STRIP (1 << 20)   /* Strip start/stop counts */

typedef enum { DEC_REPLACE, DEC_BYTE_FALLBACK, DEC_FUSE, DEC_STRIP, DEC_METASPACE } dec_kind;

typedef struct {
    dec_kind kind;
    char *a;          /* Replace: pattern; Strip: content char; Metaspace: replacement char */
    char *b;          /* Replace: content */
    size_t start, stop; /* Strip */
    int drop_first;   /* Metaspace: prepend_scheme != never: token 0 loses every replacement char */
} dec_step;

struct ct_tokenizer {
    int n;            /* vocabulary size: ids 0..n-1 */
    char **piece;     /* (n) NUL-terminated UTF-8 */
    size_t *len;      /* (n) byte lengths */
    uint8_t *special; /* (n) dropped by skip_special_tokens */
    int32_t *slot;    /* (cap) hash table of ids keyed by piece, -1 empty */
    size_t cap;
    int has_decoder;  /* 0: tokens are joined with spaces (tokenizers' default) */
    int nsteps;
    dec_step steps[MAX_STEPS];
};

/* ---- piece hash ------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

/* Slot for piece s: the one holding it, or the empty one where it would go. */
static size_t find_slot(const ct_tokenizer *t, const char *s, size_t n) {
    size_t i = hash_bytes(s, n) & (t->cap - 1);
    for (;;) {
        int32_t id = t->slot[i];
        if (id < 0 || (t->len[id] == n && memcmp(t->piece[id], s, n) == 0)) return i;
        i = (i + 1) & (t->cap - 1);
    }
}

int32_t ct_tokenizer_id(const ct_tokenizer *t, const char *piece) {
    if (!t || !piece) return -1;
    return t->slot[find_slot(t, piece, strlen(piece))];
}

int ct_tokenizer_vocab_size(const ct_tokenizer *t) { return t ? t->n : 0; }

const char *ct_tokenizer_piece(const ct_tokenizer *t, int32_t id) {
    return (t && id >= 0 && id < t->n) ? t->piece[id] : NULL;
}

int ct_tokenizer_is_special(const ct_tokenizer *t, int32_t id) {
    return (t && id >= 0 && id < t->n) ? t->special[id] : 0;
}

void ct_tokenizer_free(ct_tokenizer *t) {
    if (!t) return;
    if (t->piece)
        for (int i = 0; i < t->n; i++) free(t->piece[i]);
    free(t->piece);
    free(t->len);
    free(t->special);
    free(t->slot);
    for (int i = 0; i < t->nsteps; i++) {
        free(t->steps[i].a);
        free(t->steps[i].b);
    }
    free(t);
}

/* ---- loading ------------------------------------------------------------ */

/* Number of UTF-8 characters in a valid UTF-8 string. */
static size_t utf8_chars(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((uint8_t)s[i] & 0xC0) != 0x80;
    return c;
}

/* A JSON string member that must hold exactly one character (Rust `char`). */
static ct_status get_char(const char *name, json_t *obj, const char *key, const char *what, char **out) {
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v))
        return ct_fail(CT_ERR_FORMAT, "%s: decoder %s: \"%s\" must be a string", name, what, key);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (utf8_chars(s, n) != 1)
        return ct_fail(CT_ERR_FORMAT, "%s: decoder %s: \"%s\" must be one character", name, what, key);
    if (!(*out = strdup(s))) return ct_fail(CT_ERR_OOM, "%s: out of memory", name);
    return CT_OK;
}

static ct_status get_count(const char *name, json_t *obj, const char *key, size_t *out) {
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > MAX_STRIP)
        return ct_fail(CT_ERR_FORMAT, "%s: decoder Strip: \"%s\" must be an integer in 0..%d", name, key,
                       MAX_STRIP);
    *out = (size_t)json_integer_value(v);
    return CT_OK;
}

static ct_status parse_decoder(ct_tokenizer *t, const char *name, json_t *d, int depth) {
    if (depth > MAX_DEPTH) return ct_fail(CT_ERR_FORMAT, "%s: decoder nested too deeply", name);
    if (!json_is_object(d)) return ct_fail(CT_ERR_FORMAT, "%s: decoder must be an object", name);
    const char *type = json_string_value(json_object_get(d, "type"));
    if (!type) return ct_fail(CT_ERR_FORMAT, "%s: decoder without a \"type\"", name);
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(d, "decoders");
        if (!json_is_array(list))
            return ct_fail(CT_ERR_FORMAT, "%s: decoder Sequence without a \"decoders\" array", name);
        for (size_t i = 0; i < json_array_size(list); i++)
            CT_TRY(parse_decoder(t, name, json_array_get(list, i), depth + 1));
        return CT_OK;
    }
    if (t->nsteps == MAX_STEPS) return ct_fail(CT_ERR_FORMAT, "%s: more than %d decoder steps", name, MAX_STEPS);
    dec_step *s = &t->steps[t->nsteps];
    memset(s, 0, sizeof *s);
    if (strcmp(type, "ByteFallback") == 0) {
        s->kind = DEC_BYTE_FALLBACK;
    } else if (strcmp(type, "Fuse") == 0) {
        s->kind = DEC_FUSE;
    } else if (strcmp(type, "Replace") == 0) {
        s->kind = DEC_REPLACE;
        json_t *pat = json_object_get(d, "pattern");
        json_t *str = json_object_get(pat, "String");
        json_t *content = json_object_get(d, "content");
        if (json_object_get(pat, "Regex"))
            return ct_fail(CT_ERR_UNSUPPORTED, "%s: decoder Replace with a Regex pattern is not supported", name);
        if (!json_is_string(str) || json_string_length(str) == 0 || !json_is_string(content))
            return ct_fail(CT_ERR_FORMAT, "%s: decoder Replace needs pattern.String (non-empty) and content",
                           name);
        s->a = strdup(json_string_value(str));
        s->b = strdup(json_string_value(content));
        if (!s->a || !s->b) {
            free(s->a);
            free(s->b);
            return ct_fail(CT_ERR_OOM, "%s: out of memory", name);
        }
    } else if (strcmp(type, "Strip") == 0) {
        s->kind = DEC_STRIP;
        CT_TRY(get_count(name, d, "start", &s->start));
        CT_TRY(get_count(name, d, "stop", &s->stop));
        CT_TRY(get_char(name, d, "content", "Strip", &s->a));
    } else if (strcmp(type, "Metaspace") == 0) {
        s->kind = DEC_METASPACE;
        json_t *ps = json_object_get(d, "prepend_scheme");
        json_t *aps = json_object_get(d, "add_prefix_space");
        if (json_is_string(ps)) {
            const char *v = json_string_value(ps);
            if (strcmp(v, "always") && strcmp(v, "first") && strcmp(v, "never"))
                return ct_fail(CT_ERR_FORMAT, "%s: decoder Metaspace: unknown prepend_scheme \"%s\"", name, v);
            s->drop_first = strcmp(v, "never") != 0;
        } else if (ps && !json_is_null(ps)) {
            return ct_fail(CT_ERR_FORMAT, "%s: decoder Metaspace: prepend_scheme must be a string", name);
        } else if (json_is_boolean(aps)) {
            s->drop_first = json_is_true(aps); /* files older than prepend_scheme */
        } else {
            s->drop_first = 1; /* tokenizers' default scheme is "always" */
        }
        CT_TRY(get_char(name, d, "replacement", "Metaspace", &s->a));
    } else {
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: decoder type \"%s\" is not supported", name, type);
    }
    t->nsteps++;
    return CT_OK;
}

static ct_status set_piece(ct_tokenizer *t, const char *name, int id, json_t *str) {
    if (!json_is_string(str)) return ct_fail(CT_ERR_FORMAT, "%s: piece of id %d is not a string", name, id);
    if (t->piece[id]) return ct_fail(CT_ERR_FORMAT, "%s: duplicate id %d in model.vocab", name, id);
    if (!(t->piece[id] = strdup(json_string_value(str)))) return ct_fail(CT_ERR_OOM, "%s: out of memory", name);
    t->len[id] = json_string_length(str);
    return CT_OK;
}

/* The model section: Unigram ([[piece, score], ...], id = index) or BPE/WordPiece
 * ({piece: id}). Fills piece[0..nmodel). */
static ct_status parse_model(ct_tokenizer *t, const char *name, json_t *model, int *nmodel) {
    if (!json_is_object(model)) return ct_fail(CT_ERR_FORMAT, "%s: no \"model\" object", name);
    const char *type = json_string_value(json_object_get(model, "type"));
    json_t *vocab = json_object_get(model, "vocab");
    if (!type) return ct_fail(CT_ERR_FORMAT, "%s: model without a \"type\"", name);
    if (strcmp(type, "Unigram") == 0) {
        if (!json_is_array(vocab) || json_array_size(vocab) == 0)
            return ct_fail(CT_ERR_FORMAT, "%s: model.vocab must be a non-empty array for Unigram", name);
        *nmodel = (int)(json_array_size(vocab) > MAX_VOCAB ? MAX_VOCAB + 1 : json_array_size(vocab));
    } else if (strcmp(type, "BPE") == 0 || strcmp(type, "WordPiece") == 0 || strcmp(type, "WordLevel") == 0) {
        if (!json_is_object(vocab) || json_object_size(vocab) == 0)
            return ct_fail(CT_ERR_FORMAT, "%s: model.vocab must be a non-empty object for %s", name, type);
        *nmodel = (int)(json_object_size(vocab) > MAX_VOCAB ? MAX_VOCAB + 1 : json_object_size(vocab));
    } else {
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: model type \"%s\" is not supported", name, type);
    }
    if (*nmodel > MAX_VOCAB) return ct_fail(CT_ERR_LIMIT, "%s: more than %d pieces", name, MAX_VOCAB);
    return CT_OK;
}

static ct_status fill_model(ct_tokenizer *t, const char *name, json_t *model, int nmodel) {
    json_t *vocab = json_object_get(model, "vocab");
    if (json_is_array(vocab)) {
        for (int i = 0; i < nmodel; i++) {
            json_t *e = json_array_get(vocab, (size_t)i);
            if (!json_is_array(e) || json_array_size(e) < 1)
                return ct_fail(CT_ERR_FORMAT, "%s: model.vocab[%d] is not [piece, score]", name, i);
            CT_TRY(set_piece(t, name, i, json_array_get(e, 0)));
        }
        return CT_OK;
    }
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= nmodel)
            return ct_fail(CT_ERR_FORMAT, "%s: model.vocab[\"%s\"]: id out of range 0..%d", name, key, nmodel - 1);
        int id = (int)json_integer_value(v);
        if (t->piece[id]) return ct_fail(CT_ERR_FORMAT, "%s: duplicate id %d in model.vocab", name, id);
        /* Object keys are NUL-free (jansson refuses \u0000 without JSON_ALLOW_NUL). */
        if (!(t->piece[id] = strdup(key))) return ct_fail(CT_ERR_OOM, "%s: out of memory", name);
        t->len[id] = strlen(key);
    }
    return CT_OK;
}

static void hash_insert(ct_tokenizer *t, int32_t id) {
    size_t i = find_slot(t, t->piece[id], t->len[id]);
    t->slot[i] = id; /* replaces an earlier id with the same piece: last wins */
}

/* Pieces every Cohere prompt needs (language and <|nopnc|> are checked when used). */
static const char *const REQUIRED[] = {"▁", "<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>",
                                       "<|pnc|>", "<|noitn|>", "<|notimestamp|>", "<|nodiarize|>",
                                       "<|endoftext|>"};

static ct_status build(ct_tokenizer *t, const char *name, json_t *root) {
    if (!json_is_object(root)) return ct_fail(CT_ERR_FORMAT, "%s: top level is not a JSON object", name);
    json_t *model = json_object_get(root, "model");
    json_t *added = json_object_get(root, "added_tokens");
    int nmodel = 0;
    CT_TRY(parse_model(t, name, model, &nmodel));
    if (added && !json_is_null(added) && !json_is_array(added))
        return ct_fail(CT_ERR_FORMAT, "%s: \"added_tokens\" is not an array", name);

    /* Added tokens may extend the vocabulary past the model's ids, without gaps. */
    int n = nmodel, extra = 0;
    for (size_t i = 0; i < json_array_size(added); i++) {
        json_t *a = json_array_get(added, i);
        json_t *id = json_object_get(a, "id");
        if (!json_is_object(a) || !json_is_integer(id) || !json_is_string(json_object_get(a, "content")))
            return ct_fail(CT_ERR_FORMAT, "%s: added_tokens[%zu] needs an integer id and a string content", name, i);
        if (json_integer_value(id) < 0 || json_integer_value(id) >= MAX_VOCAB)
            return ct_fail(CT_ERR_FORMAT, "%s: added_tokens[%zu]: id %lld out of range", name, i,
                           (long long)json_integer_value(id));
        if (json_integer_value(id) >= n) n = (int)json_integer_value(id) + 1;
        if (json_integer_value(id) >= nmodel) extra++;
    }
    /* Checked before allocating, so a short file cannot claim millions of ids. */
    if (n - nmodel > extra)
        return ct_fail(CT_ERR_FORMAT,
                       "%s: added token ids reach %d but the model has %d pieces and %d added tokens lie past "
                       "them: ids must be 0..N-1 without gaps",
                       name, n - 1, nmodel, extra);
    t->n = n;
    t->piece = calloc((size_t)n, sizeof *t->piece);
    t->len = calloc((size_t)n, sizeof *t->len);
    t->special = calloc((size_t)n, 1);
    for (t->cap = 16; t->cap < 2 * (size_t)n; t->cap *= 2) {}
    t->slot = malloc(t->cap * sizeof *t->slot);
    if (!t->piece || !t->len || !t->special || !t->slot) return ct_fail(CT_ERR_OOM, "%s: out of memory", name);
    memset(t->slot, 0xff, t->cap * sizeof *t->slot);
    CT_TRY(fill_model(t, name, model, nmodel));
    for (int i = 0; i < nmodel; i++) hash_insert(t, i);

    for (size_t i = 0; i < json_array_size(added); i++) {
        json_t *a = json_array_get(added, i);
        int id = (int)json_integer_value(json_object_get(a, "id"));
        json_t *c = json_object_get(a, "content");
        if (t->piece[id]) {
            if (t->len[id] != json_string_length(c) || memcmp(t->piece[id], json_string_value(c), t->len[id]))
                return ct_fail(CT_ERR_FORMAT, "%s: added token id %d is \"%s\" but the vocabulary has \"%s\"", name,
                               id, json_string_value(c), t->piece[id]);
        } else {
            if (id < nmodel) return ct_fail(CT_ERR_INTERNAL, "%s: model id %d without a piece", name, id);
            CT_TRY(set_piece(t, name, id, c));
        }
        hash_insert(t, id); /* added tokens win over model pieces */
    }
    for (int i = 0; i < n; i++)
        if (!t->piece[i]) return ct_fail(CT_ERR_FORMAT, "%s: id %d has no piece (ids must be 0..%d)", name, i, n - 1);

    /* skip_special_tokens compares token strings with the special added tokens'
     * contents, so every id whose piece equals one is special. Equal strings
     * share one hash slot: flag the slot's id, then look each piece up. */
    uint8_t *flag = calloc((size_t)n, 1);
    if (!flag) return ct_fail(CT_ERR_OOM, "%s: out of memory", name);
    for (size_t i = 0; i < json_array_size(added); i++) {
        json_t *a = json_array_get(added, i);
        if (!json_is_true(json_object_get(a, "special"))) continue;
        int id = (int)json_integer_value(json_object_get(a, "id"));
        flag[t->slot[find_slot(t, t->piece[id], t->len[id])]] = 1;
    }
    for (int j = 0; j < n; j++) t->special[j] = flag[t->slot[find_slot(t, t->piece[j], t->len[j])]];
    free(flag);

    json_t *dec = json_object_get(root, "decoder");
    t->has_decoder = dec && !json_is_null(dec);
    if (t->has_decoder) CT_TRY(parse_decoder(t, name, dec, 0));

    for (size_t i = 0; i < sizeof REQUIRED / sizeof *REQUIRED; i++)
        if (ct_tokenizer_id(t, REQUIRED[i]) < 0)
            return ct_fail(CT_ERR_FORMAT, "%s: missing prompt token %s", name, REQUIRED[i]);
    return CT_OK;
}

ct_status ct_tokenizer_load_buffer(const char *data, size_t len, const char *name, ct_tokenizer **out) {
    *out = NULL;
    if (!name) name = "tokenizer.json";
    if (!data && len) return ct_fail(CT_ERR_INVALID_ARG, "%s: NULL data", name);
    json_error_t err;
    json_t *root = json_loadb(data ? data : "", len, JSON_REJECT_DUPLICATES, &err);
    if (!root) return ct_fail(CT_ERR_FORMAT, "%s: bad JSON at line %d column %d: %s", name, err.line, err.column,
                              err.text);
    ct_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        json_decref(root);
        return ct_fail(CT_ERR_OOM, "%s: out of memory", name);
    }
    ct_status s = build(t, name, root);
    json_decref(root);
    if (s != CT_OK) {
        ct_tokenizer_free(t);
        return s;
    }
    *out = t;
    return CT_OK;
}

ct_status ct_tokenizer_load(const char *path, ct_tokenizer **out) {
    *out = NULL;
    char *buf;
    size_t n;
    CT_TRY(ct_fs_read_all(path, CT_TOKENIZER_MAX_BYTES, &buf, &n));
    ct_status s = ct_tokenizer_load_buffer(buf, n, path, out);
    free(buf);
    return s;
}

ct_status ct_tokenizer_check_model(const ct_tokenizer *t, int model_vocab, int eos_id, const char *where,
                                   int32_t *eos) {
    if (eos) *eos = -1;
    if (!t || !where) return ct_fail(CT_ERR_INVALID_ARG, "tokenizer check: NULL argument");
    if (model_vocab <= 0) return ct_fail(CT_ERR_FORMAT, "%s: the model has %d output ids", where, model_vocab);
    if (t->n < model_vocab) /* every id the head can pick must decode */
        return ct_fail(CT_ERR_FORMAT, "%s: tokenizer has %d pieces, the model %d", where, t->n, model_vocab);
    int32_t e = eos_id >= 0 ? eos_id : ct_tokenizer_id(t, "<|endoftext|>");
    if (e < 0) return ct_fail(CT_ERR_FORMAT, "%s: no end-of-text id in the config or tokenizer", where);
    if (e >= model_vocab) /* the head could never pick it: generation would never stop */
        return ct_fail(CT_ERR_FORMAT, "%s: end-of-text id %d is outside the model's %d output ids", where, (int)e,
                       model_vocab);
    if (eos) *eos = e;
    return CT_OK;
}

/* ---- prompt --------------------------------------------------------------- */

static int is_lang_piece(const char *p, size_t n) {
    return n == 6 && memcmp(p, "<|", 2) == 0 && memcmp(p + 4, "|>", 2) == 0 && p[2] >= 'a' && p[2] <= 'z' &&
           p[3] >= 'a' && p[3] <= 'z';
}

void ct_tokenizer_languages(const ct_tokenizer *t, char *buf, size_t cap) {
    if (!cap) return;
    buf[0] = 0;
    size_t used = 0;
    for (int i = 0; t && i < t->n; i++) {
        if (!is_lang_piece(t->piece[i], t->len[i]) || ct_tokenizer_id(t, t->piece[i]) != i) continue;
        if (used + 4 >= cap) break;
        if (used) buf[used++] = ',';
        buf[used++] = t->piece[i][2];
        buf[used++] = t->piece[i][3];
        buf[used] = 0;
    }
}

int ct_tokenizer_is_language(const ct_tokenizer *t, const char *lang) {
    if (!t || !lang || strlen(lang) != 2) return 0;
    char piece[8];
    snprintf(piece, sizeof piece, "<|%s|>", lang);
    return is_lang_piece(piece, 6) && ct_tokenizer_id(t, piece) >= 0;
}

ct_status ct_tokenizer_prompt(const ct_tokenizer *t, const char *lang, int punctuation, int32_t *ids, int cap,
                              int *n) {
    if (n) *n = 0;
    if (!t || !lang || !ids || !n) return ct_fail(CT_ERR_INVALID_ARG, "tokenizer prompt: NULL argument");
    if (cap < CT_TOKENIZER_PROMPT_LEN)
        return ct_fail(CT_ERR_INVALID_ARG, "tokenizer prompt: room for %d ids, need %d", cap, CT_TOKENIZER_PROMPT_LEN);
    char ltok[16];
    size_t ll = strlen(lang);
    if (ll < 2 || ll > 8) return ct_fail(CT_ERR_INVALID_ARG, "tokenizer prompt: bad language code \"%.16s\"", lang);
    snprintf(ltok, sizeof ltok, "<|%s|>", lang);
    const char *toks[CT_TOKENIZER_PROMPT_LEN] = {
        "▁", "<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>", ltok, ltok,
        punctuation ? "<|pnc|>" : "<|nopnc|>", "<|noitn|>", "<|notimestamp|>", "<|nodiarize|>"};
    for (int i = 0; i < CT_TOKENIZER_PROMPT_LEN; i++) {
        int32_t id = ct_tokenizer_id(t, toks[i]);
        if (id < 0 && toks[i] == ltok) {
            char langs[1024];
            ct_tokenizer_languages(t, langs, sizeof langs);
            return ct_fail(CT_ERR_NOT_FOUND, "unsupported language \"%s\": the tokenizer has no %s (available: %s)",
                           lang, ltok, langs[0] ? langs : "none");
        }
        if (id < 0) return ct_fail(CT_ERR_NOT_FOUND, "tokenizer has no prompt token %s", toks[i]);
        ids[i] = id;
    }
    *n = CT_TOKENIZER_PROMPT_LEN;
    return CT_OK;
}

/* ---- decoding ---------------------------------------------------------- */

#define MAX_TEXT (16u << 20) /* bytes a decode may produce at any step */

typedef struct {
    char **s;
    size_t *n;
    int count, cap;
    size_t total;
} toklist;

static void tl_free(toklist *l) {
    for (int i = 0; i < l->count; i++) free(l->s[i]);
    free(l->s);
    free(l->n);
    memset(l, 0, sizeof *l);
}

static ct_status tl_push(toklist *l, const char *p, size_t n) {
    if (n > MAX_TEXT || l->total + n > MAX_TEXT)
        return ct_fail(CT_ERR_LIMIT, "tokenizer decode: text longer than %u bytes", MAX_TEXT);
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **s = realloc(l->s, (size_t)cap * sizeof *s);
        if (s) l->s = s;
        size_t *nn = realloc(l->n, (size_t)cap * sizeof *nn);
        if (nn) l->n = nn;
        if (!s || !nn) return ct_fail(CT_ERR_OOM, "tokenizer decode: out of memory");
        l->cap = cap;
    }
    char *c = malloc(n + 1);
    if (!c) return ct_fail(CT_ERR_OOM, "tokenizer decode: out of memory");
    if (n) memcpy(c, p, n);
    c[n] = 0;
    l->s[l->count] = c;
    l->n[l->count++] = n;
    l->total += n;
    return CT_OK;
}

/* A growable byte buffer for building one token. */
typedef struct {
    char *p;
    size_t n, cap;
} sbuf;

static ct_status sb_add(sbuf *b, const char *p, size_t n) {
    if (n > MAX_TEXT || b->n + n > MAX_TEXT)
        return ct_fail(CT_ERR_LIMIT, "tokenizer decode: text longer than %u bytes", MAX_TEXT);
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) return ct_fail(CT_ERR_OOM, "tokenizer decode: out of memory");
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
    return CT_OK;
}

/* Strict UTF-8 (what Rust's String::from_utf8 accepts): no overlongs, no
 * surrogates, nothing above U+10FFFF. */
static int utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            return 0;
        }
        if (n - i - 1 < k) return 0;
        if (s[i + 1] < lo || s[i + 1] > hi) return 0;
        for (size_t j = 2; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return 0;
        i += k + 1;
    }
    return 1;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "<0xNN>" -> 0..255, else -1. The two characters are parsed like Rust's
 * u8::from_str_radix(_, 16), which also takes a '+' sign: "<0x+A>" is 0x0A. */
static int byte_piece(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int a = hexval(s[3]), b = hexval(s[4]);
    if (s[3] == '+' && b >= 0) return b;
    return (a >= 0 && b >= 0) ? a * 16 + b : -1;
}

static ct_status flush_bytes(toklist *out, sbuf *bytes) {
    if (!bytes->n) return CT_OK;
    ct_status s;
    if (utf8_valid((const uint8_t *)bytes->p, bytes->n)) {
        s = tl_push(out, bytes->p, bytes->n);
    } else {
        /* tokenizers replaces the whole run, one U+FFFD per byte. */
        sbuf r = {0};
        s = CT_OK;
        for (size_t i = 0; i < bytes->n && s == CT_OK; i++) s = sb_add(&r, "\xEF\xBF\xBD", 3);
        if (s == CT_OK) s = tl_push(out, r.p ? r.p : "", r.n);
        free(r.p);
    }
    bytes->n = 0;
    return s;
}

static ct_status step_byte_fallback(const toklist *in, toklist *out) {
    sbuf bytes = {0};
    ct_status s = CT_OK;
    for (int i = 0; i < in->count && s == CT_OK; i++) {
        int b = byte_piece(in->s[i], in->n[i]);
        if (b >= 0) {
            char c = (char)b;
            s = sb_add(&bytes, &c, 1);
        } else {
            s = flush_bytes(out, &bytes);
            if (s == CT_OK) s = tl_push(out, in->s[i], in->n[i]);
        }
    }
    if (s == CT_OK) s = flush_bytes(out, &bytes);
    free(bytes.p);
    return s;
}

static ct_status step_fuse(const toklist *in, toklist *out) {
    sbuf b = {0};
    ct_status s = CT_OK;
    for (int i = 0; i < in->count && s == CT_OK; i++) s = sb_add(&b, in->s[i], in->n[i]);
    if (s == CT_OK) s = tl_push(out, b.p ? b.p : "", b.n);
    free(b.p);
    return s;
}

/* Replace every non-overlapping occurrence of `a`, left to right, by `b`;
 * with drop_first (Metaspace), token 0 drops them instead. */
static ct_status step_replace(const toklist *in, toklist *out, const char *a, const char *b, int drop_first) {
    size_t na = strlen(a), nb = strlen(b);
    ct_status s = CT_OK;
    sbuf t = {0};
    for (int i = 0; i < in->count && s == CT_OK; i++) {
        const char *p = in->s[i], *end = p + in->n[i];
        t.n = 0;
        while (s == CT_OK && p < end) {
            if ((size_t)(end - p) >= na && memcmp(p, a, na) == 0) {
                if (!(drop_first && i == 0)) s = sb_add(&t, b, nb);
                p += na;
            } else {
                s = sb_add(&t, p, 1);
                p++;
            }
        }
        if (s == CT_OK) s = tl_push(out, t.p ? t.p : "", t.n);
    }
    free(t.p);
    return s;
}

/* Per token: drop up to `start` leading and `stop` trailing `content` chars. */
static ct_status step_strip(const toklist *in, toklist *out, const dec_step *d) {
    size_t nc = strlen(d->a);
    ct_status s = CT_OK;
    for (int i = 0; i < in->count && s == CT_OK; i++) {
        const char *p = in->s[i];
        size_t lo = 0, hi = in->n[i];
        for (size_t k = 0; k < d->start && hi - lo >= nc && memcmp(p + lo, d->a, nc) == 0; k++) lo += nc;
        /* The trailing cut is taken on the whole token, as tokenizers does; where the
         * two cuts cross (tokenizers would panic) the result is empty. */
        size_t end = in->n[i];
        for (size_t k = 0; k < d->stop && end >= nc && memcmp(p + end - nc, d->a, nc) == 0; k++) end -= nc;
        hi = end;
        s = tl_push(out, p + lo, hi > lo ? hi - lo : 0);
    }
    return s;
}

ct_status ct_tokenizer_decode_ex(const ct_tokenizer *t, const int32_t *ids, int n, int skip_special, char **text) {
    if (text) *text = NULL;
    if (!t || !text || (n > 0 && !ids) || n < 0) return ct_fail(CT_ERR_INVALID_ARG, "tokenizer decode: bad argument");
    toklist cur = {0}, next = {0};
    ct_status s = CT_OK;
    for (int i = 0; i < n && s == CT_OK; i++) {
        if (ids[i] < 0 || ids[i] >= t->n) {
            s = ct_fail(CT_ERR_INVALID_ARG, "tokenizer decode: id %d at position %d is outside 0..%d", (int)ids[i],
                        i, t->n - 1);
            break;
        }
        if (skip_special && t->special[ids[i]]) continue;
        s = tl_push(&cur, t->piece[ids[i]], t->len[ids[i]]);
    }
    for (int k = 0; k < t->nsteps && s == CT_OK; k++) {
        const dec_step *d = &t->steps[k];
        switch (d->kind) {
        case DEC_BYTE_FALLBACK: s = step_byte_fallback(&cur, &next); break;
        case DEC_FUSE: s = step_fuse(&cur, &next); break;
        case DEC_REPLACE: s = step_replace(&cur, &next, d->a, d->b, 0); break;
        case DEC_METASPACE: s = step_replace(&cur, &next, d->a, " ", d->drop_first); break;
        case DEC_STRIP: s = step_strip(&cur, &next, d); break;
        }
        tl_free(&cur);
        cur = next;
        memset(&next, 0, sizeof next);
    }
    sbuf out = {0};
    for (int i = 0; i < cur.count && s == CT_OK; i++) {
        if (i && !t->has_decoder) s = sb_add(&out, " ", 1); /* tokenizers' default: join with spaces */
        if (s == CT_OK) s = sb_add(&out, cur.s[i], cur.n[i]);
    }
    if (s == CT_OK) s = sb_add(&out, "", 1); /* NUL; also makes the empty text a buffer */
    tl_free(&cur);
    if (s != CT_OK) {
        free(out.p);
        return s;
    }
    *text = out.p;
    return CT_OK;
}

ct_status ct_tokenizer_decode(const ct_tokenizer *t, const int32_t *ids, int n, char **text) {
    return ct_tokenizer_decode_ex(t, ids, n, 1, text);
}
