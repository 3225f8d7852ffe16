/* test_tokenizer.c — tokenizer.json reader against the Hugging Face tokenizers
 * library: prompt ids and decoded texts from tests/fixtures/tokenizer_cases.json
 * (made by tools/reference/make_fixtures.py), for both decoder flavours, plus
 * a corpus of malformed files that must each fail with a specific error. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "model/tokenizer.h"
#include "testutil.h"

#define HINT "HINT: fixtures out of date? Regenerate with tools/reference/make_fixtures.py (tests/fixtures/README.md)"

static json_t *load_json(const char *path) {
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fail_msg("%s: %s\n" HINT, path, err.text);
    return j;
}

static ct_tokenizer *load_tok(const char *rel) {
    ct_tokenizer *t = NULL;
    CT_ASSERT_OK(ct_tokenizer_load(CT_FIXTURE(rel), &t));
    return t;
}

static int ids_of(json_t *arr, int32_t *ids, int cap) {
    int n = (int)json_array_size(arr);
    if (n > cap) fail_msg("case longer than %d ids", cap);
    for (int i = 0; i < n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, (size_t)i));
    return n;
}

static void test_tables(void **state) {
    (void)state;
    ct_tokenizer *t = load_tok("tokenizer.json");
    json_t *j = load_json(CT_FIXTURE("tokenizer.json"));
    json_t *vocab = json_object_get(json_object_get(j, "model"), "vocab");
    assert_int_equal(ct_tokenizer_vocab_size(t), (int)json_array_size(vocab));
    /* every id maps to the file's piece and back (the fixture has no duplicates) */
    for (size_t i = 0; i < json_array_size(vocab); i++) {
        const char *p = json_string_value(json_array_get(json_array_get(vocab, i), 0));
        assert_string_equal(ct_tokenizer_piece(t, (int32_t)i), p);
        assert_int_equal(ct_tokenizer_id(t, p), (int)i);
    }
    json_t *added = json_object_get(j, "added_tokens");
    int nspecial = 0;
    for (size_t i = 0; i < json_array_size(added); i++) {
        json_t *a = json_array_get(added, i);
        int id = (int)json_integer_value(json_object_get(a, "id"));
        assert_int_equal(ct_tokenizer_is_special(t, id), json_is_true(json_object_get(a, "special")));
        nspecial += json_is_true(json_object_get(a, "special"));
    }
    int counted = 0;
    for (int i = 0; i < ct_tokenizer_vocab_size(t); i++) counted += ct_tokenizer_is_special(t, i);
    assert_int_equal(counted, nspecial);
    assert_int_equal(ct_tokenizer_id(t, "<|endoftext|>"), 3);
    assert_int_equal(ct_tokenizer_id(t, "no such piece"), -1);
    assert_null(ct_tokenizer_piece(t, -1));
    assert_null(ct_tokenizer_piece(t, ct_tokenizer_vocab_size(t)));
    assert_int_equal(ct_tokenizer_is_special(t, 100000), 0);
    json_decref(j);
    ct_tokenizer_free(t);
}

static void test_prompts(void **state) {
    (void)state;
    ct_tokenizer *t = load_tok("tokenizer.json");
    json_t *cases = load_json(CT_FIXTURE("tokenizer_cases.json"));
    json_t *prompts = json_object_get(cases, "prompts");
    assert_true(json_array_size(prompts) >= 4);
    for (size_t i = 0; i < json_array_size(prompts); i++) {
        json_t *c = json_array_get(prompts, i);
        const char *lang = json_string_value(json_object_get(c, "language"));
        int pnc = json_is_true(json_object_get(c, "punctuation"));
        int32_t want[16], got[16];
        int nw = ids_of(json_object_get(c, "ids"), want, 16), ng = -1;
        CT_ASSERT_OK(ct_tokenizer_prompt(t, lang, pnc, got, 16, &ng));
        assert_int_equal(ng, nw);
        for (int k = 0; k < nw; k++)
            if (got[k] != want[k]) fail_msg("prompt %s pnc=%d id %d: %d, want %d\n" HINT, lang, pnc, k, got[k], want[k]);
    }
    int32_t ids[16];
    int n = 5;
    CT_ASSERT_STATUS(ct_tokenizer_prompt(t, "xx", 1, ids, 16, &n), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("unsupported language \"xx\"");
    CT_ASSERT_ERROR_HAS("ar,");
    CT_ASSERT_ERROR_HAS(",en,");
    assert_int_equal(n, 0);
    CT_ASSERT_STATUS(ct_tokenizer_prompt(t, "en", 1, ids, 9, &n), CT_ERR_INVALID_ARG);
    CT_ASSERT_STATUS(ct_tokenizer_prompt(t, "e", 1, ids, 16, &n), CT_ERR_INVALID_ARG);
    CT_ASSERT_STATUS(ct_tokenizer_prompt(t, "a-very-long-code", 1, ids, 16, &n), CT_ERR_INVALID_ARG);
    json_decref(cases);
    ct_tokenizer_free(t);
}

/* Every case of tokenizer_cases.json through one tokenizer; field names the expected text. */
static void check_decode(const char *tok_rel, const char *field, int skip_special) {
    ct_tokenizer *t = load_tok(tok_rel);
    json_t *cases = load_json(CT_FIXTURE("tokenizer_cases.json"));
    json_t *dec = json_object_get(cases, "decode");
    assert_true(json_array_size(dec) >= 20);
    for (size_t i = 0; i < json_array_size(dec); i++) {
        json_t *c = json_array_get(dec, i);
        int32_t ids[256];
        int n = ids_of(json_object_get(c, "ids"), ids, 256);
        const char *want = json_string_value(json_object_get(c, field));
        assert_non_null(want);
        char *got = NULL;
        CT_ASSERT_OK(ct_tokenizer_decode_ex(t, ids, n, skip_special, &got));
        if (strcmp(got, want) != 0)
            fail_msg("%s case %s (%s): got \"%s\", want \"%s\"\n" HINT, tok_rel,
                     json_string_value(json_object_get(c, "name")), field, got, want);
        free(got);
    }
    json_decref(cases);
    ct_tokenizer_free(t);
}

static void test_decode_main(void **state) {
    (void)state;
    check_decode("tokenizer.json", "text", 1);
}

static void test_decode_metaspace(void **state) {
    (void)state;
    check_decode("tokenizer_metaspace.json", "text_metaspace", 1);
}

static void test_decode_with_specials(void **state) {
    (void)state;
    check_decode("tokenizer.json", "text_with_specials", 0);
}

/* The same vocabulary with other decoder chains (decoder_variants). Cases where
 * tokenizers itself panics (Strip cuts that cross) have text null: skipped. */
static void test_decoder_variants(void **state) {
    (void)state;
    json_t *base = load_json(CT_FIXTURE("tokenizer.json"));
    json_t *cases = load_json(CT_FIXTURE("tokenizer_cases.json"));
    json_t *vars = json_object_get(cases, "decoder_variants");
    assert_true(json_array_size(vars) >= 6);
    int checked = 0;
    for (size_t v = 0; v < json_array_size(vars); v++) {
        json_t *var = json_array_get(vars, v);
        json_t *r = json_deep_copy(base);
        json_object_set(r, "decoder", json_object_get(var, "decoder"));
        char *txt = json_dumps(r, 0);
        ct_tokenizer *t = NULL;
        CT_ASSERT_OK(ct_tokenizer_load_buffer(txt, strlen(txt), "variant.json", &t));
        json_t *rows = json_object_get(var, "cases");
        for (size_t i = 0; i < json_array_size(rows); i++) {
            json_t *c = json_array_get(rows, i);
            json_t *want = json_object_get(c, "text");
            if (json_is_null(want)) continue;
            int32_t ids[256];
            int n = ids_of(json_object_get(c, "ids"), ids, 256);
            char *got = NULL;
            CT_ASSERT_OK(ct_tokenizer_decode(t, ids, n, &got));
            if (strcmp(got, json_string_value(want)) != 0) {
                char *dj = json_dumps(json_object_get(var, "decoder"), 0);
                fail_msg("decoder %s case %s: got \"%s\", want \"%s\"\n" HINT, dj,
                         json_string_value(json_object_get(c, "name")), got, json_string_value(want));
            }
            free(got);
            checked++;
        }
        ct_tokenizer_free(t);
        free(txt);
        json_decref(r);
    }
    assert_true(checked >= 200);
    json_decref(cases);
    json_decref(base);
}

/* ByteFallback parsing quirks, duplicate pieces (last wins), specials by string. */
static void test_quirks(void **state) {
    (void)state;
    json_t *cases = load_json(CT_FIXTURE("tokenizer_cases.json"));
    json_t *q = json_object_get(cases, "quirks");
    char *txt = json_dumps(json_object_get(q, "tokenizer"), 0);
    assert_non_null(txt);
    ct_tokenizer *t = NULL;
    CT_ASSERT_OK(ct_tokenizer_load_buffer(txt, strlen(txt), "quirks.json", &t));
    assert_int_equal(ct_tokenizer_id(t, "▁"), json_integer_value(json_object_get(q, "id_of_space")));
    json_t *rows = json_object_get(q, "cases");
    assert_true(json_array_size(rows) >= 8);
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *c = json_array_get(rows, i);
        int32_t ids[64];
        int n = ids_of(json_object_get(c, "ids"), ids, 64);
        char *got = NULL;
        CT_ASSERT_OK(ct_tokenizer_decode(t, ids, n, &got));
        const char *want = json_string_value(json_object_get(c, "text"));
        if (strcmp(got, want) != 0)
            fail_msg("quirk %s: got \"%s\", want \"%s\"\n" HINT, json_string_value(json_object_get(c, "name")), got,
                     want);
        free(got);
    }
    ct_tokenizer_free(t);
    free(txt);
    json_decref(cases);
}

static void test_decode_errors(void **state) {
    (void)state;
    ct_tokenizer *t = load_tok("tokenizer.json");
    char *s = NULL;
    int32_t bad[2] = {5, 495};
    CT_ASSERT_STATUS(ct_tokenizer_decode(t, bad, 2, &s), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("id 495 at position 1");
    assert_null(s);
    int32_t neg = -1;
    CT_ASSERT_STATUS(ct_tokenizer_decode(t, &neg, 1, &s), CT_ERR_INVALID_ARG);
    CT_ASSERT_OK(ct_tokenizer_decode(t, NULL, 0, &s));
    assert_string_equal(s, "");
    free(s);
    /* the tokenizer's own prompt decodes to nothing once specials are skipped */
    int32_t p[CT_TOKENIZER_PROMPT_LEN];
    int n;
    CT_ASSERT_OK(ct_tokenizer_prompt(t, "en", 0, p, CT_TOKENIZER_PROMPT_LEN, &n));
    CT_ASSERT_OK(ct_tokenizer_decode(t, p, n, &s));
    assert_string_equal(s, "");
    free(s);
    ct_tokenizer_free(t);
}

/* ---- malformed files ------------------------------------------------------ */

typedef void (*mutator)(json_t *root);

static json_t *vocab_of(json_t *root) { return json_object_get(json_object_get(root, "model"), "vocab"); }

static void m_no_model(json_t *r) { json_object_del(r, "model"); }
static void m_no_vocab(json_t *r) { json_object_del(json_object_get(r, "model"), "vocab"); }
static void m_model_type(json_t *r) { json_object_set_new(json_object_get(r, "model"), "type", json_string("Nope")); }
static void m_vocab_not_pair(json_t *r) { json_array_set_new(vocab_of(r), 7, json_integer(3)); }
static void m_added_mismatch(json_t *r) {
    json_object_set_new(json_array_get(json_object_get(r, "added_tokens"), 3), "content", json_string("<|eot|>"));
}
static void m_added_gap(json_t *r) {
    json_t *a = json_array_get(json_object_get(r, "added_tokens"), 0);
    json_object_set_new(a, "id", json_integer(600));
}
static void m_added_negative(json_t *r) {
    json_object_set_new(json_array_get(json_object_get(r, "added_tokens"), 0), "id", json_integer(-4));
}
static void m_added_not_array(json_t *r) { json_object_set_new(r, "added_tokens", json_string("x")); }
static void m_missing_prompt_token(json_t *r) {
    /* rename <|notimestamp|> (id 11) everywhere */
    json_array_set_new(json_array_get(vocab_of(r), 11), 0, json_string("<|nostamp|>"));
    json_t *added = json_object_get(r, "added_tokens");
    for (size_t i = 0; i < json_array_size(added); i++) {
        json_t *a = json_array_get(added, i);
        if (json_integer_value(json_object_get(a, "id")) == 11) json_object_set_new(a, "content", json_string("<|nostamp|>"));
    }
}
static void m_missing_space_piece(json_t *r) {
    json_t *v = vocab_of(r);
    for (size_t i = 0; i < json_array_size(v); i++)
        if (strcmp(json_string_value(json_array_get(json_array_get(v, i), 0)), "▁") == 0)
            json_array_set_new(json_array_get(v, i), 0, json_string("__"));
}
static void m_decoder_type(json_t *r) { json_object_set_new(r, "decoder", json_pack("{s:s}", "type", "WordPiece")); }
static void m_decoder_regex(json_t *r) {
    json_object_set_new(r, "decoder", json_pack("{s:s,s:{s:s},s:s}", "type", "Replace", "pattern", "Regex", "a+",
                                                 "content", "b"));
}
static void m_strip_two_chars(json_t *r) {
    json_object_set_new(r, "decoder", json_pack("{s:s,s:s,s:i,s:i}", "type", "Strip", "content", "ab", "start", 1,
                                                "stop", 0));
}
static void m_strip_negative(json_t *r) {
    json_object_set_new(r, "decoder", json_pack("{s:s,s:s,s:i,s:i}", "type", "Strip", "content", " ", "start", -1,
                                                "stop", 0));
}
static void m_metaspace_scheme(json_t *r) {
    json_object_set_new(r, "decoder", json_pack("{s:s,s:s,s:s}", "type", "Metaspace", "replacement", "▁",
                                                "prepend_scheme", "sometimes"));
}
static void m_sequence_no_list(json_t *r) { json_object_set_new(r, "decoder", json_pack("{s:s}", "type", "Sequence")); }
static void m_deep_sequence(json_t *r) {
    json_t *d = json_pack("{s:s}", "type", "Fuse");
    for (int i = 0; i < 12; i++) d = json_pack("{s:s,s:[o]}", "type", "Sequence", "decoders", d);
    json_object_set_new(r, "decoder", d);
}
/* BPE layout: vocab object piece -> id */
static void to_bpe(json_t *r) {
    json_t *v = vocab_of(r), *o = json_object();
    for (size_t i = 0; i < json_array_size(v); i++)
        json_object_set_new(o, json_string_value(json_array_get(json_array_get(v, i), 0)), json_integer((json_int_t)i));
    json_t *m = json_pack("{s:s,s:o,s:[],s:b}", "type", "BPE", "vocab", o, "merges", "byte_fallback", 1);
    json_object_set_new(r, "model", m);
}
static void m_bpe_dup_id(json_t *r) {
    to_bpe(r);
    json_object_set_new(vocab_of(r), "▁the", json_integer(5));
}
static void m_bpe_id_range(json_t *r) {
    to_bpe(r);
    json_object_set_new(vocab_of(r), "▁the", json_integer(70000));
}

typedef struct {
    const char *what;
    mutator m;
    ct_status want;
    const char *msg;
} mcase;

static void test_malformed(void **state) {
    (void)state;
    static const mcase cases[] = {
        {"no model", m_no_model, CT_ERR_FORMAT, "no \"model\" object"},
        {"no vocab", m_no_vocab, CT_ERR_FORMAT, "model.vocab must be a non-empty array"},
        {"model type", m_model_type, CT_ERR_UNSUPPORTED, "model type \"Nope\""},
        {"vocab entry", m_vocab_not_pair, CT_ERR_FORMAT, "model.vocab[7] is not [piece, score]"},
        {"added mismatch", m_added_mismatch, CT_ERR_FORMAT, "added token id 3 is \"<|eot|>\""},
        {"added gap", m_added_gap, CT_ERR_FORMAT, "added token ids reach 600 but the model has 495 pieces"},
        {"added negative", m_added_negative, CT_ERR_FORMAT, "id -4 out of range"},
        {"added not array", m_added_not_array, CT_ERR_FORMAT, "\"added_tokens\" is not an array"},
        {"missing prompt token", m_missing_prompt_token, CT_ERR_FORMAT, "missing prompt token <|notimestamp|>"},
        {"missing ▁", m_missing_space_piece, CT_ERR_FORMAT, "missing prompt token ▁"},
        {"decoder type", m_decoder_type, CT_ERR_UNSUPPORTED, "decoder type \"WordPiece\""},
        {"decoder regex", m_decoder_regex, CT_ERR_UNSUPPORTED, "Regex pattern"},
        {"strip content", m_strip_two_chars, CT_ERR_FORMAT, "\"content\" must be one character"},
        {"strip count", m_strip_negative, CT_ERR_FORMAT, "\"start\" must be an integer"},
        {"metaspace scheme", m_metaspace_scheme, CT_ERR_FORMAT, "unknown prepend_scheme \"sometimes\""},
        {"sequence", m_sequence_no_list, CT_ERR_FORMAT, "Sequence without a \"decoders\" array"},
        {"deep sequence", m_deep_sequence, CT_ERR_FORMAT, "nested too deeply"},
        {"bpe duplicate id", m_bpe_dup_id, CT_ERR_FORMAT, "duplicate id 5"},
        {"bpe id range", m_bpe_id_range, CT_ERR_FORMAT, "model.vocab[\"▁the\"]: id out of range"},
    };
    json_t *base = load_json(CT_FIXTURE("tokenizer.json"));
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *r = json_deep_copy(base);
        cases[i].m(r);
        char *txt = json_dumps(r, 0);
        ct_tokenizer *t = (ct_tokenizer *)1;
        ct_status s = ct_tokenizer_load_buffer(txt, strlen(txt), "bad.json", &t);
        if (s != cases[i].want || !strstr(ct_last_error(), cases[i].msg))
            fail_msg("%s: got %s \"%s\", want %s \"%s\"", cases[i].what, ct_status_str(s), ct_last_error(),
                     ct_status_str(cases[i].want), cases[i].msg);
        assert_null(t);
        assert_non_null(strstr(ct_last_error(), "bad.json: "));
        free(txt);
        json_decref(r);
    }
    /* the BPE layout itself is fine */
    json_t *r = json_deep_copy(base);
    to_bpe(r);
    char *txt = json_dumps(r, 0);
    ct_tokenizer *t = NULL;
    CT_ASSERT_OK(ct_tokenizer_load_buffer(txt, strlen(txt), "bpe.json", &t));
    assert_int_equal(ct_tokenizer_id(t, "▁the"), ct_tokenizer_id(t, "▁the"));
    assert_int_equal(ct_tokenizer_vocab_size(t), (int)json_array_size(vocab_of(base)));
    ct_tokenizer_free(t);
    free(txt);
    json_decref(r);
    json_decref(base);
}

static void test_malformed_text(void **state) {
    (void)state;
    char *buf;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(CT_FIXTURE("tokenizer.json"), 1 << 26, &buf, &n));
    ct_tokenizer *t = NULL;
    CT_ASSERT_STATUS(ct_tokenizer_load_buffer(buf, n / 2, "half.json", &t), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("half.json: bad JSON");
    CT_ASSERT_STATUS(ct_tokenizer_load_buffer("", 0, "empty.json", &t), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("empty.json: bad JSON");
    CT_ASSERT_STATUS(ct_tokenizer_load_buffer("[1,2]", 5, "arr.json", &t), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("top level is not a JSON object");
    const char *dup = "{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\",0]]},\"model\":{}}";
    CT_ASSERT_STATUS(ct_tokenizer_load_buffer(dup, strlen(dup), "dup.json", &t), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("duplicate");
    const char *nul = "{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\\u0000b\",0]]}}";
    CT_ASSERT_STATUS(ct_tokenizer_load_buffer(nul, strlen(nul), "nul.json", &t), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("nul.json: bad JSON");
    assert_null(t);
    free(buf);
    CT_ASSERT_STATUS(ct_tokenizer_load("/nonexistent/tokenizer.json", &t), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("/nonexistent/tokenizer.json");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables),          cmocka_unit_test(test_prompts),
        cmocka_unit_test(test_decode_main),     cmocka_unit_test(test_decode_metaspace),
        cmocka_unit_test(test_decode_with_specials), cmocka_unit_test(test_decoder_variants),
        cmocka_unit_test(test_quirks),          cmocka_unit_test(test_decode_errors),
        cmocka_unit_test(test_malformed),       cmocka_unit_test(test_malformed_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
