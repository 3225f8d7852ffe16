/* text.c — PRODUCT-DETAILS §9.1 normalize and §9.2 punctuation, over code
 * point arrays: each step in the twin's order (its regexes emulated by plain
 * scans, Python's \s and \d meaning Unicode whitespace and Nd). Romanisation
 * and the vocabulary are in romanize.c. utf8proc (Unicode 13 in Debian 12)
 * does NFKC and lowercase; docs/ALIGNMENT.md lists what differs from Python's. */
#include "align/text.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "align/text_internal.h"

/* §9.2, equal to the twin's regex class over every code point
 * (tools/reference/make_align_cases.py checks it). */
static const uint32_t k_punct[][2] = {
    {0x0008, 0x0008}, {0x001A, 0x001A}, {0x0020, 0x0026}, {0x0028, 0x002C}, {0x002E, 0x002F}, {0x0033,
    0x0033}, {0x0035, 0x0035}, {0x0037, 0x0037}, {0x003A, 0x0043}, {0x0045, 0x0049}, {0x004B, 0x004D},
    {0x0051, 0x0055}, {0x0057, 0x0057}, {0x005B, 0x005B}, {0x005D, 0x005F}, {0x007B, 0x007E}, {0x0081,
    0x0081}, {0x008D, 0x008D}, {0x008F, 0x0090}, {0x0092, 0x0094}, {0x009D, 0x009D}, {0x00A1, 0x00A1},
    {0x00A3, 0x00A3}, {0x00A9, 0x00A9}, {0x00AB, 0x00AC}, {0x00AF, 0x00B0}, {0x00B6, 0x00B7}, {0x00BB,
    0x00BD}, {0x00BF, 0x00BF}, {0x00D7, 0x00D7}, {0x02C7, 0x02C7}, {0x02DC, 0x02DC}, {0x037E, 0x037E},
    {0x0387, 0x0387}, {0x055A, 0x055F}, {0x0589, 0x0589}, {0x05BE, 0x05BE}, {0x060C, 0x060C}, {0x061B,
    0x061B}, {0x061E, 0x061F}, {0x06D4, 0x06D4}, {0x06D6, 0x06D7}, {0x06DA, 0x06DA}, {0x0964, 0x0965},
    {0x09F7, 0x09F7}, {0x0E46, 0x0E46}, {0x0EC6, 0x0EC6}, {0x0F04, 0x0F05}, {0x0F0C, 0x0F0E}, {0x104A,
    0x104F}, {0x109F, 0x109F}, {0x1361, 0x1366}, {0x166D, 0x166E}, {0x17D4, 0x17D7}, {0x17DA, 0x17DA},
    {0x2006, 0x2006}, {0x2015, 0x2015}, {0x2018, 0x2022}, {0x2026, 0x2027}, {0x202F, 0x2030}, {0x2038,
    0x203B}, {0x2044, 0x2044}, {0x2060, 0x2060}, {0x206F, 0x206F}, {0x2071, 0x2071}, {0x207F, 0x207F},
    {0x20AC, 0x20AC}, {0x2153, 0x2153}, {0x215F, 0x215F}, {0x2192, 0x2192}, {0x2212, 0x2212}, {0x226A,
    0x226B}, {0x22EF, 0x22EF}, {0x230A, 0x230B}, {0x231E, 0x231F}, {0x2500, 0x2500}, {0x2D70, 0x2D70},
    {0x3001, 0x3002}, {0x3005, 0x3005}, {0x3008, 0x3011}, {0x3014, 0x3015}, {0x30FB, 0x30FC}, {0xA4FE,
    0xA4FF}, {0xA92E, 0xA92F}, {0xE003, 0xE003}, {0xE013, 0xE013}, {0xE01D, 0xE01D}, {0xE040, 0xE041},
    {0xE043, 0xE043}, {0xE06B, 0xE06B}, {0xE06D, 0xE06D}, {0xE070, 0xE070}, {0xE203, 0xE203}, {0xE231,
    0xE234}, {0xE236, 0xE236}, {0xE290, 0xE296}, {0xE2D9, 0xE2D9}, {0xE2DB, 0xE2DB}, {0xE2DE, 0xE2DE},
    {0xE2F9, 0xE2FC}, {0xE2FE, 0xE2FE}, {0xE313, 0xE313}, {0xE328, 0xE32E}, {0xE492, 0xE493}, {0xE514,
    0xE514}, {0xE516, 0xE518}, {0xEA01, 0xEA01}, {0xEA7B, 0xEA7B}, {0xF171, 0xF173}, {0xF218, 0xF218},
    {0xF21D, 0xF21D}, {0xF50E, 0xF50F}, {0xF511, 0xF511}, {0xF513, 0xF513}, {0xF518, 0xF519}, {0xF521,
    0xF523}, {0xF529, 0xF529}, {0xF52D, 0xF52D}, {0xF62D, 0xF62D}, {0xF7D0, 0xF7D0}, {0xF7E8, 0xF7E8},
    {0xFD3E, 0xFD3F}, {0xFE4F, 0xFE50}, {0xFE55, 0xFE57}, {0xFF01, 0xFF01}, {0xFF08, 0xFF09}, {0xFF0C,
    0xFF0C}, {0xFF0E, 0xFF0F}, {0xFF1A, 0xFF1C}, {0xFF1E, 0xFF1F}, {0xFF3F, 0xFF3F}, {0xFF41, 0xFF44},
    {0xFF5E, 0xFF5E}, {0xFF65, 0xFF65}, {0xFFFD, 0xFFFD}
};

int ct_align_is_mms_punct(uint32_t cp) {
    size_t lo = 0, hi = sizeof k_punct / sizeof k_punct[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < k_punct[mid][0]) hi = mid;
        else if (cp > k_punct[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

int ct_align_is_pyspace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

static int is_nd(uint32_t c) { return utf8proc_category((utf8proc_int32_t)c) == UTF8PROC_CATEGORY_ND; }

/* Step 9's deletion set. */
static int is_deleted(uint32_t c) {
    return c == 0x200E || c == 0x200C || c == 0x0656 || c == 0x0657 || c == 0x200B ||
           (c >= 0x064B && c <= 0x0652) || c == 0x202C || c == 0x200F || c == 0x202A;
}

/* Step 10's digit set (Arabic-Indic U+0660–0669 is not in it). */
static int is_mms_digit(uint32_t c) {
    return (c >= 0x30 && c <= 0x39) || (c >= 0x9E6 && c <= 0x9EF) || (c >= 0x17E0 && c <= 0x17E9) ||
           (c >= 0x966 && c <= 0x96F) || (c >= 0xB66 && c <= 0xB6F) || (c >= 0x6F0 && c <= 0x6F9) ||
           (c >= 0xA900 && c <= 0xA909) || (c >= 0xFF10 && c <= 0xFF19) || (c >= 0xD66 && c <= 0xD6F) ||
           (c >= 0x1040 && c <= 0x1049) || (c >= 0x2170 && c <= 0x2179) || c == 0x206F;
}

ct_status ct_cps_reserve(ct_cps *s, size_t n) {
    if (n <= s->cap) return CT_OK;
    size_t cap = s->cap ? s->cap : 16;
    while (cap < n) cap *= 2;
    uint32_t *p = realloc(s->v, cap * sizeof *p);
    if (!p) return ct_fail(CT_ERR_OOM, "align text: out of memory");
    s->v = p;
    s->cap = cap;
    return CT_OK;
}

ct_status ct_cps_push(ct_cps *s, uint32_t c) {
    CT_TRY(ct_cps_reserve(s, s->n + 1));
    s->v[s->n++] = c;
    return CT_OK;
}

void ct_cps_free(ct_cps *s) {
    free(s->v);
    memset(s, 0, sizeof *s);
}

ct_status ct_cps_from_utf8(ct_cps *s, const char *text, size_t len) {
    s->n = 0;
    size_t i = 0;
    while (i < len) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &c);
        if (k <= 0 || c < 0) return ct_fail(CT_ERR_INVALID_ARG, "align text: invalid UTF-8 at byte %zu", i);
        CT_TRY(ct_cps_push(s, (uint32_t)c));
        i += (size_t)k;
    }
    return CT_OK;
}

ct_status ct_cps_to_utf8(const ct_cps *s, char **out) {
    *out = NULL;
    char *b = malloc(s->n * 4 + 1);
    if (!b) return ct_fail(CT_ERR_OOM, "align text: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        k += (size_t)utf8proc_encode_char((utf8proc_int32_t)s->v[i], (utf8proc_uint8_t *)b + k);
    b[k] = 0;
    *out = b;
    return CT_OK;
}

/* Python's _PyUnicode_IsCased / IsCaseIgnorable, from categories (the
 * Other_Lowercase/Uppercase and Word_Break extras are left out). */
static int is_cased(uint32_t c) {
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}
static int is_case_ignorable(uint32_t c) {
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
           k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK || c == 0x27 || c == 0x2E || c == 0x3A ||
           c == 0xB7 || c == 0x387 || c == 0x5F4 || c == 0x2018 || c == 0x2019 || c == 0x2024 ||
           c == 0x2027 || c == 0xFE13 || c == 0xFE52 || c == 0xFE55 || c == 0xFF07 || c == 0xFF0E ||
           c == 0xFF1A;
}

/* Python's final-sigma rule for U+03A3 at i. */
static int final_sigma(const ct_cps *s, size_t i) {
    size_t j = i;
    while (j > 0 && is_case_ignorable(s->v[j - 1])) j--;
    if (j == 0 || !is_cased(s->v[j - 1])) return 0;
    j = i + 1;
    while (j < s->n && is_case_ignorable(s->v[j])) j++;
    return j == s->n || !is_cased(s->v[j]);
}

/* Step 1: NFKC, then Python's str.lower (full mapping: U+0130 expands, final sigma). */
static ct_status nfkc_lower(const char *text, size_t len, ct_cps *out) {
    utf8proc_uint8_t *nf = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)len, &nf,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    if (n < 0) return ct_fail(CT_ERR_INVALID_ARG, "align text: %s", utf8proc_errmsg(n));
    ct_status st = ct_cps_from_utf8(out, (const char *)nf, (size_t)n);
    free(nf);
    CT_TRY(st);
    ct_cps low = {0};
    for (size_t i = 0; i < out->n && st == CT_OK; i++) {
        uint32_t c = out->v[i];
        if (c == 0x130) {
            st = ct_cps_push(&low, 'i');
            if (st == CT_OK) st = ct_cps_push(&low, 0x307);
        } else if (c == 0x3A3 && final_sigma(out, i)) {
            st = ct_cps_push(&low, 0x3C2);
        } else {
            st = ct_cps_push(&low, (uint32_t)utf8proc_tolower((utf8proc_int32_t)c));
        }
    }
    if (st != CT_OK) {
        ct_cps_free(&low);
        return st;
    }
    ct_cps_free(out);
    *out = low;
    return CT_OK;
}

/* Step 2: re.sub(r"\([^)]*\d[^)]*\)", " "): from each "(", the group up to the
 * first ")" is replaced when it holds a digit; otherwise the scan moves on by one. */
static ct_status paren_digits(ct_cps *s) {
    ct_cps o = {0};
    size_t i = 0;
    while (i < s->n) {
        if (s->v[i] == '(') {
            size_t j = i + 1;
            int digit = 0;
            while (j < s->n && s->v[j] != ')') digit |= is_nd(s->v[j]), j++;
            if (j < s->n && digit) {
                CT_TRY(ct_cps_push(&o, ' '));
                i = j + 1;
                continue;
            }
        }
        CT_TRY(ct_cps_push(&o, s->v[i]));
        i++;
    }
    ct_cps_free(s);
    *s = o;
    return CT_OK;
}

/* Step 3: delete one literal ASCII string, one left-to-right pass. */
static void delete_literal(ct_cps *s, const char *lit) {
    size_t m = strlen(lit), k = 0, i = 0;
    while (i < s->n) {
        size_t j = 0;
        while (j < m && i + j < s->n && s->v[i + j] == (unsigned char)lit[j]) j++;
        if (j == m) {
            i += m;
            continue;
        }
        s->v[k++] = s->v[i++];
    }
    s->n = k;
}

/* Step 4: re.sub(r"(\S+)[\u201b\u2019\u2018](\S+)", r"\1'\2"): in each run of
 * non-space the greedy first group makes it the LAST such quote with at least
 * one character on each side inside the run. */
static int is_quote(uint32_t c) { return c == 0x201B || c == 0x2019 || c == 0x2018; }
static void apostrophes(ct_cps *s) {
    size_t i = 0;
    while (i < s->n) {
        if (ct_align_is_pyspace(s->v[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < s->n && !ct_align_is_pyspace(s->v[j])) j++;
        for (size_t q = j - 1; q > i; q--) {
            if (q + 1 < j && is_quote(s->v[q])) {
                s->v[q] = '\'';
                break;
            }
        }
        i = j;
    }
}

/* Step 10: digit words → one space. */
static ct_status digit_words(ct_cps *s) {
    ct_cps o = {0};
    size_t i = 0;
    while (i < s->n) {
        int at_start = i == 0, after_space = i > 0 && ct_align_is_pyspace(s->v[i - 1]);
        if ((at_start || after_space) && is_mms_digit(s->v[i])) {
            size_t j = i;
            while (j < s->n && is_mms_digit(s->v[j])) j++;
            int next_space = j < s->n && ct_align_is_pyspace(s->v[j]);
            /* ^d+(?=\s) | (?<=\s)d+(?=\s) | (?<=\s)d+$ */
            if ((at_start && next_space) || (after_space && (next_space || j == s->n))) {
                CT_TRY(ct_cps_push(&o, ' '));
                i = j;
                continue;
            }
            /* no match here: copy the run (a match cannot start inside it) */
            while (i < j) CT_TRY(ct_cps_push(&o, s->v[i++]));
            continue;
        }
        CT_TRY(ct_cps_push(&o, s->v[i]));
        i++;
    }
    ct_cps_free(s);
    *s = o;
    return CT_OK;
}

/* Step 11: runs of whitespace → one space, strip. */
static void collapse(ct_cps *s) {
    size_t k = 0;
    int pending = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (ct_align_is_pyspace(s->v[i])) {
            pending = 1;
            continue;
        }
        if (pending && k > 0) s->v[k++] = ' ';
        pending = 0;
        s->v[k++] = s->v[i];
    }
    s->n = k;
}

ct_status ct_align_normalize_cps(const char *text, size_t len, ct_cps *s) {
    CT_TRY(nfkc_lower(text, len, s));
    CT_TRY(paren_digits(s));
    delete_literal(s, "&lt;");
    delete_literal(s, "&gt;");
    delete_literal(s, "&nbsp");
    apostrophes(s);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint32_t c = s->v[i];
        if (c == 0x0671 || c == 0x0670) c = 0x0627;    /* step 5 */
        else if (c == 0x06E5) c = 0x0648;
        else if (c == 0x06E6) c = 0x064A;
        else if (c == 0x0640 || c == 0x0653) continue; /* step 6 */
        else if (c == 0x0655 || c == 0x0654) c = 0x0621; /* step 7 */
        if (ct_align_is_mms_punct(c)) c = ' ';          /* step 8 */
        else if (is_deleted(c)) continue;               /* step 9 */
        s->v[k++] = c;
    }
    s->n = k;
    CT_TRY(digit_words(s));
    collapse(s);
    return CT_OK;
}

ct_status ct_align_normalize(const char *text, size_t len, char **out) {
    *out = NULL;
    ct_cps s = {0};
    ct_status st = ct_align_normalize_cps(text, len, &s);
    if (st == CT_OK) st = ct_cps_to_utf8(&s, out);
    ct_cps_free(&s);
    return st;
}

ct_status ct_align_split_words(const char *text, size_t len, size_t **starts, size_t **lens, size_t *n) {
    *starts = NULL;
    *lens = NULL;
    *n = 0;
    size_t cap = 0, i = 0, cnt = 0;
    size_t *st = NULL, *ln = NULL;
    int in_word = 0;
    size_t w0 = 0;
    while (i <= len) {
        utf8proc_int32_t c = ' ';
        utf8proc_ssize_t k = 1;
        if (i < len) {
            k = utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &c);
            if (k <= 0 || c < 0) {
                free(st);
                free(ln);
                return ct_fail(CT_ERR_INVALID_ARG, "align text: invalid UTF-8 at byte %zu", i);
            }
        }
        int sp = ct_align_is_pyspace((uint32_t)c);
        if (!sp && !in_word) {
            in_word = 1;
            w0 = i;
        } else if (sp && in_word) {
            in_word = 0;
            if (cnt == cap) {
                cap = cap ? cap * 2 : 16;
                size_t *a = realloc(st, cap * sizeof *a), *b = a ? realloc(ln, cap * sizeof *b) : NULL;
                if (a) st = a;
                if (!a || !b) {
                    free(st);
                    free(b ? b : ln);
                    return ct_fail(CT_ERR_OOM, "align text: out of memory");
                }
                ln = b;
            }
            st[cnt] = w0;
            ln[cnt] = i - w0;
            cnt++;
        }
        i += (size_t)k;
    }
    *starts = st;
    *lens = ln;
    *n = cnt;
    return CT_OK;
}
