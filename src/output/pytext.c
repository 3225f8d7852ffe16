/* pytext.c — Python str.isspace/strip/split/len over UTF-8 (pytext.h), the
 * text rules the original's timing, cues and transcripts are built on.
 */
#include "output/pytext.h"

#include <stdlib.h>
#include <string.h>

int ct_py_isspace(uint32_t c) {
    if (c <= 0x20) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C);
    if (c < 0x85) return 0;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t ct_utf8_next(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[0];
    size_t need;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xE0) == 0xC0) {
        need = 2, v = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        need = 3, v = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        need = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = 0xFFFD;
        return 1;
    }
    if (need > n) {
        *cp = 0xFFFD;
        return 1;
    }
    for (size_t i = 1; i < need; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        v = (v << 6) | (u[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = 0xFFFD;
        return 1;
    }
    *cp = v;
    return need;
}

size_t ct_py_len(const char *s, size_t n) {
    size_t count = 0;
    uint32_t cp;
    for (size_t i = 0; i < n; count++) i += ct_utf8_next(s + i, n - i, &cp);
    return count;
}

void ct_py_strip_range(const char *s, size_t n, size_t *off, size_t *len) {
    size_t i = 0, end = 0;
    int seen = 0;
    uint32_t cp;
    size_t start = n;
    while (i < n) {
        size_t k = ct_utf8_next(s + i, n - i, &cp);
        if (!ct_py_isspace(cp)) {
            if (!seen) start = i, seen = 1;
            end = i + k;
        }
        i += k;
    }
    *off = seen ? start : 0;
    *len = seen ? end - start : 0;
}

ct_status ct_py_strip(const char *s, char **out) {
    size_t off, len;
    ct_py_strip_range(s, strlen(s), &off, &len);
    char *r = malloc(len + 1);
    if (!r) return ct_fail(CT_ERR_OOM, "text: out of memory");
    memcpy(r, s + off, len);
    r[len] = '\0';
    *out = r;
    return CT_OK;
}

uint32_t ct_py_last_char(const char *s, size_t n) {
    uint32_t cp = 0;
    for (size_t i = 0; i < n;) i += ct_utf8_next(s + i, n - i, &cp);
    return cp;
}

ct_status ct_py_split(const char *s, size_t n, ct_py_field **fields, size_t *count) {
    *fields = NULL;
    *count = 0;
    size_t cap = 0, cnt = 0;
    ct_py_field *f = NULL;
    size_t i = 0;
    int in = 0;
    size_t start = 0;
    uint32_t cp;
    while (i <= n) {
        size_t k = 1;
        int space = 1; /* the end acts as a separator */
        if (i < n) {
            k = ct_utf8_next(s + i, n - i, &cp);
            space = ct_py_isspace(cp);
        }
        if (!space && !in) in = 1, start = i;
        if (space && in) {
            if (cnt == cap) {
                cap = cap ? cap * 2 : 8;
                ct_py_field *g = realloc(f, cap * sizeof *g);
                if (!g) {
                    free(f);
                    return ct_fail(CT_ERR_OOM, "text: out of memory");
                }
                f = g;
            }
            f[cnt].off = start;
            f[cnt].len = i - start;
            cnt++;
            in = 0;
        }
        i += k;
    }
    *fields = f;
    *count = cnt;
    return CT_OK;
}
