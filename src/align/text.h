/* text.h — the aligner's text side (PRODUCT-DETAILS §9.1–9.5): MMS
 * normalisation, uroman-compatible romanisation from the generated table,
 * the 31-class character vocabulary plus <star>, and a segment's words turned
 * into CTC targets. The Python twin is the oracle (tests/unit/test_align_text.c,
 * fixtures from tools/reference/make_align_cases.py); docs/ALIGNMENT.md. */
#ifndef CT_ALIGN_TEXT_H
#define CT_ALIGN_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* The uroman language code the twin passes (ISO3 of the ASR language): it
 * selects the few language-limited rules. */
typedef enum ct_align_lang { CT_ALIGN_LANG_OTHER = 0, CT_ALIGN_LANG_ARA = 1, CT_ALIGN_LANG_ENG = 2 } ct_align_lang;

/* "ar"/"ara" → ARA, "en"/"eng" → ENG, anything else (NULL too) → OTHER. */
ct_align_lang ct_align_lang_from_code(const char *code);

/* §9.1 normalize(text) over UTF-8: NFKC + lowercase (utf8proc), parenthesised
 * digit groups, HTML entities, apostrophes, Arabic letter mapping, tatweel and
 * maddah, hamza marks, MMS punctuation → space, deletions, digit words, collapse.
 * *out is malloc'd, NUL-terminated. Invalid UTF-8 → CT_ERR_INVALID_ARG. */
ct_status ct_align_normalize(const char *text, size_t len, char **out);

/* §9.3 romanize(word): normalize, transliterate, then the aligner's token form:
 * kept characters [a-z'] separated by one space ("العالم" → "a l ' a l m"),
 * possibly "". *out is malloc'd. */
ct_status ct_align_romanize(const char *word, size_t len, ct_align_lang lang, char **out);

/* Membership tests used by normalize (exposed for the tests). */
int ct_align_is_mms_punct(uint32_t cp); /* §9.2, as the twin's regex class */
int ct_align_is_pyspace(uint32_t cp);   /* Python str.isspace / regex \s */

/* ---- vocabulary (§9.5) -------------------------------------------------- */
#define CT_ALIGN_MAX_CLASSES 256
typedef struct ct_align_vocab {
    int n_model;               /* emission columns from the model (31) */
    int n_classes;             /* n_model + 1: the <star> column is the last */
    int blank;                 /* 0 */
    int star;                  /* n_model */
    int letter_id[128];        /* ASCII letter / "'" → column, -1 when absent */
    char label[CT_ALIGN_MAX_CLASSES][12]; /* column → token text ("<blank>", "a", "<star>") */
} ct_align_vocab;

/* The MMS-300M forced aligner's vocabulary of §9.5. */
void ct_align_vocab_default(ct_align_vocab *v);
/* From tokens in column order (a vocab.json sorted by id), lowercased as the
 * twin does; blank = "<blank>" else pad_id. Refuses more than
 * CT_ALIGN_MAX_CLASSES − 1 tokens or a blank outside them. */
ct_status ct_align_vocab_from_tokens(ct_align_vocab *v, const char *const *tokens, int n, int pad_id);

/* ---- a segment's text → targets (§9.7 steps 2–3) ------------------------ */
typedef struct ct_align_text {
    size_t n_words;
    char **words;      /* Python split() of the text, malloc'd copies */
    char **tokens;     /* romanize(word) per word ("l a" or "") */
    int32_t *targets;  /* star, letters of word 0, star, letters of word 1, and so on */
    size_t n_targets;  /* letters absent from the vocabulary are left out, as in the twin */
} ct_align_text;

ct_status ct_align_text_prepare(const char *text, ct_align_lang lang, const ct_align_vocab *v,
                                ct_align_text *out);
void ct_align_text_free(ct_align_text *t);

/* Python str.split() of UTF-8 text: starts and lens are malloc arrays of byte offsets. */
ct_status ct_align_split_words(const char *text, size_t len, size_t **starts, size_t **lens, size_t *n);

#endif
