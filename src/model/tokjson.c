/* tokjson.c — tokenizer.json writer; see tokjson.h. */
#include "model/tokjson.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"

#define SETI(o, k, v) json_object_set_new(o, k, json_integer(v))
#define SETB(o, k, v) json_object_set_new(o, k, json_boolean(v))
#define SETS(o, k, v) json_object_set_new(o, k, json_string(v))

static json_t *decoder_chain(void) {
    json_t *decs = json_array(), *d;
    d = json_object();
    SETS(d, "type", "Replace");
    json_t *pat = json_object();
    SETS(pat, "String", "\xe2\x96\x81");
    json_object_set_new(d, "pattern", pat);
    SETS(d, "content", " ");
    json_array_append_new(decs, d);
    d = json_object();
    SETS(d, "type", "ByteFallback");
    json_array_append_new(decs, d);
    d = json_object();
    SETS(d, "type", "Fuse");
    json_array_append_new(decs, d);
    d = json_object();
    SETS(d, "type", "Strip");
    SETS(d, "content", " ");
    SETI(d, "start", 1);
    SETI(d, "stop", 0);
    json_array_append_new(decs, d);
    json_t *dec = json_object();
    SETS(dec, "type", "Sequence");
    json_object_set_new(dec, "decoders", decs);
    return dec;
}

ct_status ct_tokjson_dump(const char *path, const char *const *pieces, const float *scores,
                          const unsigned char *special, int n, char **out) {
    *out = NULL;
    json_t *vv = json_array(), *added = json_array();
    ct_status s = CT_OK;
    for (int id = 0; id < n && s == CT_OK; id++) {
        json_t *piece = json_string(pieces[id]);
        if (!piece) {
            s = ct_fail(CT_ERR_INVALID_ARG, "%s: token %d is not valid UTF-8", path, id);
            break;
        }
        json_t *e = json_array();
        json_array_append_new(e, piece);
        json_array_append_new(e, json_real(scores ? scores[id] : 0.0));
        json_array_append_new(vv, e);
        if (special && special[id]) {
            json_t *a = json_object();
            SETI(a, "id", id);
            SETS(a, "content", pieces[id]);
            SETB(a, "single_word", 0);
            SETB(a, "lstrip", 0);
            SETB(a, "rstrip", 0);
            SETB(a, "normalized", 0);
            SETB(a, "special", 1);
            json_array_append_new(added, a);
        }
    }
    json_t *model = json_object();
    SETS(model, "type", "Unigram");
    SETI(model, "unk_id", 0);
    json_object_set_new(model, "vocab", vv);
    SETB(model, "byte_fallback", 1);
    json_t *pre = json_object();
    SETS(pre, "type", "Metaspace");
    SETS(pre, "replacement", "\xe2\x96\x81");
    SETS(pre, "prepend_scheme", "always");
    SETB(pre, "split", 1);
    json_t *t = json_object();
    SETS(t, "version", "1.0");
    json_object_set_new(t, "truncation", json_null());
    json_object_set_new(t, "padding", json_null());
    json_object_set_new(t, "added_tokens", added);
    json_object_set_new(t, "normalizer", json_null());
    json_object_set_new(t, "pre_tokenizer", pre);
    json_object_set_new(t, "post_processor", json_null());
    json_object_set_new(t, "decoder", decoder_chain());
    json_object_set_new(t, "model", model);
    char *text = s == CT_OK ? json_dumps(t, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(t);
    if (s != CT_OK) return s;
    if (!text) return ct_fail(CT_ERR_OOM, "%s: cannot serialise", path);
    *out = text;
    return CT_OK;
}

ct_status ct_tokjson_write(const char *path, const char *const *pieces, const float *scores,
                           const unsigned char *special, int n) {
    char *text;
    CT_TRY(ct_tokjson_dump(path, pieces, scores, special, n, &text));
    ct_status s = ct_fs_write_atomic(path, text, strlen(text));
    free(text);
    return s;
}
