/* romanize.c — §9.3 romanize(word) over the table generated from uroman
 * 1.3.1.1 (uroman_table.c), the §9.5 vocabulary, and a segment's words →
 * CTC targets with <star> before each word (§9.7 steps 2–3). The lattice of
 * uroman is reduced to what Latin/Arabic text needs: longest rule first with
 * its word-position conditions, else the character's own letters. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "align/text.h"
#include "align/text_internal.h"
#include "align/uroman_table.h"

ct_align_lang ct_align_lang_from_code(const char *code) {
    if (!code) return CT_ALIGN_LANG_OTHER;
    if (!strcmp(code, "ar") || !strcmp(code, "ara")) return CT_ALIGN_LANG_ARA;
    if (!strcmp(code, "en") || !strcmp(code, "eng")) return CT_ALIGN_LANG_ENG;
    return CT_ALIGN_LANG_OTHER;
}

static const char *single_letters(uint32_t cp) {
    for (size_t i = 0; i < ct_uroman_n_blocks && cp >= ct_uroman_blocks[i].first; i++)
        if (cp <= ct_uroman_blocks[i].last) return ct_uroman_blocks[i].letters[cp - ct_uroman_blocks[i].first];
    return "";
}

/* Python str.isalpha for one code point: L* categories. */
static int py_isalpha(uint32_t c) {
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT ||
           k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_LO;
}

static int letters_alpha_last(const char *s) {
    size_t n = strlen(s);
    return n > 0 && s[n - 1] != '\'';
}

typedef struct ctx {
    const uint32_t *v;
    size_t n;
    unsigned lang_bit;
    const char *prev_out; /* letters of the edge that ended at the current position */
} ctx;

/* uroman's is_at_start_of_word: no letter just before, in the text or in the
 * romanisation of what ends here. */
static int at_start(const ctx *c, size_t p) {
    if (p == 0) return 1;
    if (py_isalpha(c->v[p - 1])) return 0;
    return !(c->prev_out && letters_alpha_last(c->prev_out));
}

/* uroman's is_at_end_of_word: the next character is no letter and no rule
 * starting there (other than start-only ones) gives letters. */
static int at_end(const ctx *c, size_t q) {
    if (q >= c->n) return 1;
    if (py_isalpha(c->v[q])) return 0;
    if (*single_letters(c->v[q])) return 0;
    for (size_t r = 0; r < ct_uroman_n_rules; r++) {
        const ct_uroman_rule *u = &ct_uroman_rules[r];
        if (u->s[0] == c->v[q] && !(u->flags & CT_UR_START_ONLY) && u->letters[0]) return 0;
    }
    return 1;
}

static int rule_matches(const ct_uroman_rule *u, const ctx *c, size_t p) {
    if (p + (size_t)u->len > c->n) return 0;
    for (int k = 0; k < u->len; k++)
        if (u->s[k] != c->v[p + (size_t)k]) return 0;
    return 1;
}

static int rule_valid(const ct_uroman_rule *u, const ctx *c, size_t p) {
    size_t e = p + (size_t)u->len;
    if ((u->flags & CT_UR_NOT_START) && at_start(c, p)) return 0;
    if ((u->flags & CT_UR_START_ONLY) && !at_start(c, p)) return 0;
    if ((u->flags & CT_UR_NOT_END) && at_end(c, e)) return 0;
    if ((u->flags & CT_UR_END_ONLY) && !at_end(c, e)) return 0;
    if ((u->flags & CT_UR_WHOLE_WORD) && !(at_start(c, p) && at_end(c, e))) return 0;
    if (u->langs && !(u->langs & c->lang_bit)) return 0;
    return 1;
}

/* The longest source string with a rule at p; among its rules the valid one
 * with the highest n_restr (the first on a tie). *has_rules says whether any
 * rule had that source (then an invalid-only set gives no letters). */
static const ct_uroman_rule *pick_rule(const ctx *c, size_t p, int *matched_len) {
    *matched_len = 0;
    for (int len = CT_UROMAN_MAX_RULE; len >= 1; len--) {
        const ct_uroman_rule *best = NULL;
        int any = 0;
        for (size_t r = 0; r < ct_uroman_n_rules; r++) {
            const ct_uroman_rule *u = &ct_uroman_rules[r];
            if (u->len != len || !rule_matches(u, c, p)) continue;
            any = 1;
            if (rule_valid(u, c, p) && (!best || u->n_restr > best->n_restr)) best = u;
        }
        if (best) {
            *matched_len = len;
            return best;
        }
        if (any && len == 1) {
            *matched_len = 1; /* conditional single with no valid rule: uroman keeps the raw character */
            return NULL;
        }
    }
    return NULL;
}

static int is_small_y(uint32_t c) {
    return c == 0x3083 || c == 0x3085 || c == 0x3087 || c == 0x30E3 || c == 0x30E5 || c == 0x30E7;
}
static int kana_script(uint32_t c) { return c >= 0x3040 && c <= 0x309F ? 1 : c >= 0x30A0 && c <= 0x30FF ? 2 : 0; }
static int consonant(char ch) { return ch && strchr("bcdfghjklmnpqrstvwxyz", ch) != NULL; }

/* The edge uroman picks at p: the longest valid rule, else the character's
 * own letters; then its Japanese small-y expansion (き + ゃ → kya). Letters go
 * to buf (≥ 32 bytes); returns the source length. */
static int edge_at(const ctx *c, size_t p, char *buf) {
    int mlen = 0;
    const ct_uroman_rule *u = pick_rule(c, p, &mlen);
    const char *letters = mlen > 0 ? (u ? u->letters : "") : single_letters(c->v[p]);
    if (mlen == 0) mlen = 1;
    size_t k = strlen(letters);
    if (k > 24) k = 24;
    memcpy(buf, letters, k);
    buf[k] = 0;
    size_t q = p + (size_t)mlen;
    if (q < c->n && is_small_y(c->v[q]) && kana_script(c->v[q - 1]) == kana_script(c->v[q]) && k >= 2 &&
        buf[k - 1] == 'i' && consonant(buf[k - 2])) {
        const char *y = single_letters(c->v[q]);
        size_t ky = strlen(y);
        if (ky < 8) {
            memcpy(buf + k - 1, y, ky + 1);
            mlen++;
        }
    }
    return mlen;
}

/* Japanese small tsu before a consonant doubles it (っか → kka, っち → tchi). */
static int is_small_tsu(uint32_t c) { return c == 0x3063 || c == 0x30C3; }

ct_status ct_align_romanize(const char *word, size_t len, ct_align_lang lang, char **out) {
    *out = NULL;
    ct_cps s = {0};
    ct_status st = ct_align_normalize_cps(word, len, &s);
    char *buf = NULL;
    if (st == CT_OK) {
        /* Every value is at most a few letters; the output puts a space after each. */
        size_t cap = 16;
        for (size_t i = 0; i < s.n; i++) cap += 2 * (strlen(single_letters(s.v[i])) + 8);
        buf = malloc(cap);
        if (!buf) st = ct_fail(CT_ERR_OOM, "align romanize: out of memory");
    }
    if (st == CT_OK) {
        ctx c = {.v = s.v, .n = s.n, .lang_bit = lang == CT_ALIGN_LANG_ARA ? CT_UR_LANG_ARA
                                               : lang == CT_ALIGN_LANG_ENG ? CT_UR_LANG_ENG : 0u};
        size_t k = 0, p = 0;
        char e[40], prev[40] = "";
        while (p < s.n) {
            int mlen = 0;
            if (is_small_tsu(s.v[p]) && p + 1 < s.n) {
                char nx[32];
                int m2 = edge_at(&c, p + 1, nx);
                if (consonant(nx[0]) && nx[0] != 'v' && nx[0] != 'x' && nx[0] != 'y') {
                    e[0] = (nx[0] == 'c' && nx[1] == 'h') ? 't' : nx[0];
                    memcpy(e + 1, nx, strlen(nx) + 1);
                    mlen = 1 + m2;
                }
            }
            if (mlen == 0) mlen = edge_at(&c, p, e);
            p += (size_t)mlen;
            for (const char *q = e; *q; q++) {
                if (k > 0) buf[k++] = ' ';
                buf[k++] = *q;
            }
            memcpy(prev, e, sizeof prev);
            c.prev_out = prev;
        }
        buf[k] = 0;
        *out = buf;
    }
    ct_cps_free(&s);
    return st;
}

/* ---- vocabulary ---------------------------------------------------------- */

static const char *const k_default_vocab[31] = {
    "<blank>", "<pad>", "</s>", "<unk>", "a", "i", "e", "n", "o", "u", "t", "s", "r", "m", "k", "l",
    "d",       "g",     "h",    "y",     "b", "p", "w", "c", "v", "j", "z", "f", "'", "q", "x"};

void ct_align_vocab_default(ct_align_vocab *v) {
    ct_status st = ct_align_vocab_from_tokens(v, k_default_vocab, 31, 1);
    (void)st; /* cannot fail on the built-in list */
}

ct_status ct_align_vocab_from_tokens(ct_align_vocab *v, const char *const *tokens, int n, int pad_id) {
    memset(v, 0, sizeof *v);
    if (n < 1 || n >= CT_ALIGN_MAX_CLASSES)
        return ct_fail(CT_ERR_INVALID_ARG, "aligner vocabulary: %d tokens (1..%d)", n, CT_ALIGN_MAX_CLASSES - 1);
    for (int i = 0; i < 128; i++) v->letter_id[i] = -1;
    v->n_model = n;
    v->n_classes = n + 1;
    v->star = n;
    v->blank = -1;
    for (int i = 0; i < n; i++) {
        char low[12];
        size_t m = strlen(tokens[i]);
        if (m >= sizeof low) m = sizeof low - 1; /* longer tokens are never letters */
        for (size_t j = 0; j < m; j++) {
            char ch = tokens[i][j];
            low[j] = (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
        }
        low[m] = 0;
        memcpy(v->label[i], low, m + 1);
        if (!strcmp(low, "<star>"))
            return ct_fail(CT_ERR_INVALID_ARG, "aligner vocabulary: <star> collides with token %d", i);
        if (!strcmp(low, "<blank>")) v->blank = i;
        if (m == 1 && (unsigned char)low[0] < 128) v->letter_id[(unsigned char)low[0]] = i;
    }
    memcpy(v->label[n], "<star>", 7);
    if (v->blank < 0) v->blank = pad_id;
    if (v->blank < 0 || v->blank >= v->n_classes)
        return ct_fail(CT_ERR_INVALID_ARG, "aligner vocabulary: blank %d outside the %d columns", v->blank,
                       v->n_classes);
    return CT_OK;
}

/* ---- words → targets ------------------------------------------------------ */

void ct_align_text_free(ct_align_text *t) {
    if (!t) return;
    for (size_t i = 0; i < t->n_words; i++) {
        if (t->words) free(t->words[i]);
        if (t->tokens) free(t->tokens[i]);
    }
    free(t->words);
    free(t->tokens);
    free(t->targets);
    memset(t, 0, sizeof *t);
}

ct_status ct_align_text_prepare(const char *text, ct_align_lang lang, const ct_align_vocab *v,
                                ct_align_text *out) {
    memset(out, 0, sizeof *out);
    size_t *starts = NULL, *lens = NULL, n = 0;
    CT_TRY(ct_align_split_words(text, strlen(text), &starts, &lens, &n));
    ct_status st = CT_OK;
    out->words = calloc(n ? n : 1, sizeof *out->words);
    out->tokens = calloc(n ? n : 1, sizeof *out->tokens);
    if (!out->words || !out->tokens) st = ct_fail(CT_ERR_OOM, "align text: out of memory");
    size_t n_letters = 0;
    for (size_t i = 0; i < n && st == CT_OK; i++) {
        out->n_words = i + 1;
        out->words[i] = malloc(lens[i] + 1);
        if (!out->words[i]) {
            st = ct_fail(CT_ERR_OOM, "align text: out of memory");
            break;
        }
        memcpy(out->words[i], text + starts[i], lens[i]);
        out->words[i][lens[i]] = 0;
        st = ct_align_romanize(text + starts[i], lens[i], lang, &out->tokens[i]);
        if (st == CT_OK) n_letters += strlen(out->tokens[i]);
    }
    if (st == CT_OK) {
        out->targets = malloc((n + n_letters + 1) * sizeof *out->targets);
        if (!out->targets) st = ct_fail(CT_ERR_OOM, "align text: out of memory");
    }
    for (size_t i = 0; i < n && st == CT_OK; i++) {
        out->targets[out->n_targets++] = v->star;
        for (const char *q = out->tokens[i]; *q; q++) {
            if (*q == ' ') continue;
            int id = v->letter_id[(unsigned char)*q & 0x7F];
            if (id >= 0) out->targets[out->n_targets++] = id;
        }
    }
    free(starts);
    free(lens);
    if (st != CT_OK) ct_align_text_free(out);
    return st;
}
