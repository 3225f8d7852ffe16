/* test_align_text.c — the aligner's text side against the Python twin:
 * normalize and romanize on every word of tests/fixtures/align/text_cases.json
 * (made by tools/reference/make_align_cases.py with uroman 1.3.1.1 itself),
 * the MMS punctuation set over all code points, segment targets, the
 * PRODUCT-DETAILS §9.3 observed examples and the doctor's smoke. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "align/text.h"
#include "testutil.h"

static json_t *load_cases(void) {
    json_error_t err;
    json_t *j = json_load_file(CT_FIXTURE("align/text_cases.json"), 0, &err);
    if (!j) fail_msg("text_cases.json: %s", err.text);
    return j;
}

static void test_words(void **state) {
    (void)state;
    json_t *j = load_cases();
    json_t *words = json_object_get(j, "words");
    size_t i, bad = 0, n_ar = 0, n_en = 0;
    json_t *w;
    json_array_foreach(words, i, w) {
        const char *lang = json_string_value(json_object_get(w, "lang"));
        const char *word = json_string_value(json_object_get(w, "word"));
        const char *want_norm = json_string_value(json_object_get(w, "normalized"));
        const char *want_tok = json_string_value(json_object_get(w, "token"));
        char *norm = NULL, *tok = NULL;
        CT_ASSERT_OK(ct_align_normalize(word, strlen(word), &norm));
        CT_ASSERT_OK(ct_align_romanize(word, strlen(word), ct_align_lang_from_code(lang), &tok));
        if (strcmp(norm, want_norm) || strcmp(tok, want_tok)) {
            if (bad < 20)
                print_message("word %zu '%s' (%s): normalized '%s' want '%s', token '%s' want '%s'\n", i,
                              word, lang, norm, want_norm, tok, want_tok);
            bad++;
        }
        if (!strcmp(lang, "ar")) n_ar++;
        else n_en++;
        free(norm);
        free(tok);
    }
    assert_true(n_ar >= 500);
    assert_true(n_en >= 200);
    assert_int_equal(bad, 0);
    json_decref(j);
}

static void test_normalize_texts(void **state) {
    (void)state;
    json_t *j = load_cases();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(j, "normalize"), i, c) {
        const char *text = json_string_value(json_object_get(c, "text"));
        const char *want = json_string_value(json_object_get(c, "normalized"));
        char *got = NULL;
        CT_ASSERT_OK(ct_align_normalize(text, strlen(text), &got));
        if (strcmp(got, want)) fail_msg("normalize('%s') = '%s', want '%s'", text, got, want);
        free(got);
    }
    json_decref(j);
}

static void test_punctuation_set(void **state) {
    (void)state;
    json_t *j = load_cases();
    json_t *p = json_object_get(j, "punctuation");
    size_t k = 0, n = json_array_size(p);
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        if (cp >= 0xD800 && cp < 0xE000) continue;
        int want = k < n && (uint32_t)json_integer_value(json_array_get(p, k)) == cp;
        if (want) k++;
        if (ct_align_is_mms_punct(cp) != want) fail_msg("U+%04X: punctuation %d, want %d", cp, !want, want);
    }
    assert_int_equal(k, n);
    assert_int_equal(n, 275);
    json_decref(j);
}

/* tokens_starred of the twin joined and split on spaces = our targets' letters. */
static void test_prepare(void **state) {
    (void)state;
    json_t *j = load_cases();
    ct_align_vocab v;
    ct_align_vocab_default(&v);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(j, "prepare"), i, c) {
        const char *text = json_string_value(json_object_get(c, "text"));
        const char *lang = json_string_value(json_object_get(c, "lang"));
        json_t *ts = json_object_get(c, "tokens_starred");
        ct_align_text t;
        CT_ASSERT_OK(ct_align_text_prepare(text, ct_align_lang_from_code(lang), &v, &t));
        assert_int_equal(t.n_words * 2, json_array_size(ts));
        size_t k = 0;
        for (size_t w = 0; w < t.n_words; w++) {
            assert_string_equal(json_string_value(json_array_get(ts, 2 * w)), "<star>");
            assert_string_equal(json_string_value(json_array_get(ts, 2 * w + 1)), t.tokens[w]);
            assert_int_equal(t.targets[k++], v.star);
            for (const char *q = t.tokens[w]; *q; q++)
                if (*q != ' ') assert_int_equal(t.targets[k++], v.letter_id[(unsigned char)*q]);
        }
        assert_int_equal(k, t.n_targets);
        ct_align_text_free(&t);
    }
    json_decref(j);
}

/* PRODUCT-DETAILS §9.3 observed examples (the doctor's smoke is the first four). */
static void test_observed(void **state) {
    (void)state;
    static const char *const cases[][3] = {
        {"ar", "مرحبا", "m r h b a"},      {"ar", "بكم", "b k m"},
        {"ar", "في", "f y"},              {"ar", "العالم", "a l ' a l m"},
        {"ar", "الإسلامُ", "a l i s l a m"}, {"ar", "مُحَمَّد", "m h m d"},
        {"ar", "إلى", "i l a"},           {"ar", "القاهرة", "a l q a h r a"},
        {"ar", "مؤمن", "m w m n"},        {"ar", "ـــلا", "l a"},
        {"en", "It’s", "i t ' s"},        {"en", "3", ""},
        {"ar", "٣", ""},                  {"en", "Straße", "s t r a s s e"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *tok = NULL;
        CT_ASSERT_OK(ct_align_romanize(cases[i][1], strlen(cases[i][1]), ct_align_lang_from_code(cases[i][0]),
                                       &tok));
        if (strcmp(tok, cases[i][2])) fail_msg("romanize('%s') = '%s', want '%s'", cases[i][1], tok, cases[i][2]);
        free(tok);
    }
    /* the doctor's sentence as one segment */
    ct_align_vocab v;
    ct_align_vocab_default(&v);
    ct_align_text t;
    CT_ASSERT_OK(ct_align_text_prepare("مرحبا بكم في العالم", CT_ALIGN_LANG_ARA, &v, &t));
    assert_int_equal(t.n_words, 4);
    assert_string_equal(t.tokens[3], "a l ' a l m");
    assert_int_equal(t.n_targets, 4 + 5 + 3 + 2 + 6);
    assert_int_equal(t.targets[0], 31);
    assert_int_equal(t.targets[1], 13); /* m */
    ct_align_text_free(&t);
}

static void test_invalid_utf8(void **state) {
    (void)state;
    char *out = NULL;
    CT_ASSERT_STATUS(ct_align_normalize("a\xff", 2, &out), CT_ERR_INVALID_ARG);
    assert_null(out);
    CT_ASSERT_STATUS(ct_align_romanize("\xc3", 1, CT_ALIGN_LANG_ENG, &out), CT_ERR_INVALID_ARG);
    assert_null(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words),       cmocka_unit_test(test_normalize_texts),
        cmocka_unit_test(test_punctuation_set), cmocka_unit_test(test_prepare),
        cmocka_unit_test(test_observed),    cmocka_unit_test(test_invalid_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
