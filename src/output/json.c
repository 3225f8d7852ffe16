/* json.c — the original's JSON text over jansson trees (json.h): pretty and
 * canonical writers, the json 2.18 float layout, and the parser front end.
 * Written here rather than with json_dumps because jansson's float text
 * ("%.17g") and its string escaping differ from Ruby's.
 */
#include "output/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/digest.h"

void ct_jbuf_free(ct_jbuf *b) {
    if (!b) return;
    free(b->data);
    memset(b, 0, sizeof *b);
}

ct_status ct_jbuf_put(ct_jbuf *b, const void *p, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) {
            if (cap > ((size_t)-1) / 2) return ct_fail(CT_ERR_OOM, "json: output too large");
            cap *= 2;
        }
        char *d = realloc(b->data, cap);
        if (!d) return ct_fail(CT_ERR_OOM, "json: out of memory (%zu bytes)", cap);
        b->data = d;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return CT_OK;
}

ct_status ct_jbuf_puts(ct_jbuf *b, const char *s) { return ct_jbuf_put(b, s, strlen(s)); }

char *ct_jbuf_take(ct_jbuf *b, size_t *len) {
    char *d = b->data;
    if (len) *len = b->len;
    if (!d) d = calloc(1, 1);
    memset(b, 0, sizeof *b);
    return d;
}

/* ---- floats ----------------------------------------------------------- */

/* Shortest digits by trial: "%.{p-1}e" for p = 15, 16, 17 keeps the first
 * that strtod reads back as the same double. For a normal double, any
 * decimal of <= 15 significant digits that reads back as v is what %.15e
 * prints (DBL_DIG), so p = 15 with trailing zeros removed is the shortest
 * when one of <= 15 digits exists; otherwise the correctly rounded 16- or
 * 17-digit string is both shortest and closest (Python repr's choice).
 * Subnormals carry fewer digits, so they are tried from p = 1. The
 * original's Grisu2 gives the same digits except for a tiny fraction of
 * doubles where it emits a longer (still round-trip) string; those are
 * not reproduced (docs/OUTPUTS.md). */
void ct_json_shortest_digits(double v, char digits[24], int *K) {
    double a = fabs(v);
    char buf[48];
    int p0 = a < 2.2250738585072014e-308 ? 1 : 15;
    for (int p = p0; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, a);
        if (strtod(buf, NULL) == a) break;
    }
    /* buf: d[.ddd]e[+-]xx */
    int n = 0, e10 = 0;
    const char *q = buf;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9') digits[n++] = *q;
    if (*q == 'e') e10 = atoi(q + 1);
    while (n > 1 && digits[n - 1] == '0') n--;
    digits[n] = '\0';
    *K = e10 - (n - 1);
}

ct_status ct_json_format_double(double v, char out[32], size_t *len) {
    if (!isfinite(v)) return ct_fail(CT_ERR_INVALID_ARG, "NaN not allowed in JSON");
    char *w = out;
    if (signbit(v)) *w++ = '-';
    if (v == 0) {
        memcpy(w, "0.0", 4);
        *len = (size_t)(w + 3 - out);
        return CT_OK;
    }
    char d[24];
    int K;
    ct_json_shortest_digits(v, d, &K);
    int n = (int)strlen(d);
    int E = K + n - 1;
    if (K >= 0 && abs(E) < 15) {
        memcpy(w, d, (size_t)n);
        w += n;
        for (int i = 0; i < K; i++) *w++ = '0';
        memcpy(w, ".0", 2);
        w += 2;
    } else if (K < 0 && (K > -7 || abs(E) < 10)) {
        int point = n + K; /* digits before the decimal point */
        if (point > 0) {
            memcpy(w, d, (size_t)point);
            w += point;
            *w++ = '.';
            memcpy(w, d + point, (size_t)(n - point));
            w += n - point;
        } else {
            *w++ = '0';
            *w++ = '.';
            for (int i = 0; i < -point; i++) *w++ = '0';
            memcpy(w, d, (size_t)n);
            w += n;
        }
    } else {
        *w++ = d[0];
        if (n > 1) {
            *w++ = '.';
            memcpy(w, d + 1, (size_t)(n - 1));
            w += n - 1;
        }
        w += snprintf(w, 8, "e%c%d", E < 0 ? '-' : '+', abs(E));
    }
    *w = '\0';
    *len = (size_t)(w - out);
    return CT_OK;
}

/* ---- strings ---------------------------------------------------------- */

ct_status ct_json_put_string(ct_jbuf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    CT_TRY(ct_jbuf_put(b, "\"", 1));
    size_t run = 0; /* start of the pending raw run */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        CT_TRY(ct_jbuf_put(b, s + run, i - run));
        run = i + 1;
        char esc[8];
        size_t el = 2;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            el = 6;
        }
        CT_TRY(ct_jbuf_put(b, esc, el));
    }
    CT_TRY(ct_jbuf_put(b, s + run, n - run));
    return ct_jbuf_put(b, "\"", 1);
}

/* ---- values ----------------------------------------------------------- */

static ct_status put_scalar(ct_jbuf *b, const json_t *v) {
    char tmp[40];
    size_t n;
    switch (json_typeof(v)) {
    case JSON_NULL: return ct_jbuf_put(b, "null", 4);
    case JSON_TRUE: return ct_jbuf_put(b, "true", 4);
    case JSON_FALSE: return ct_jbuf_put(b, "false", 5);
    case JSON_INTEGER:
        n = (size_t)snprintf(tmp, sizeof tmp, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return ct_jbuf_put(b, tmp, n);
    case JSON_REAL:
        CT_TRY(ct_json_format_double(json_real_value(v), tmp, &n));
        return ct_jbuf_put(b, tmp, n);
    case JSON_STRING: return ct_json_put_string(b, json_string_value(v), json_string_length(v));
    default: return ct_fail(CT_ERR_INTERNAL, "json: not a scalar");
    }
}

static ct_status indent(ct_jbuf *b, int depth) {
    static const char sp[] = "                                ";
    size_t want = (size_t)depth * 2;
    while (want) {
        size_t k = want < sizeof sp - 1 ? want : sizeof sp - 1;
        CT_TRY(ct_jbuf_put(b, sp, k));
        want -= k;
    }
    return CT_OK;
}

static ct_status pretty(ct_jbuf *b, const json_t *v, int depth) {
    if (depth > 10000) return ct_fail(CT_ERR_LIMIT, "json: nesting too deep");
    if (json_is_object(v)) {
        if (json_object_size(v) == 0) return ct_jbuf_put(b, "{}", 2);
        CT_TRY(ct_jbuf_put(b, "{\n", 2));
        const char *key;
        size_t klen;
        json_t *val;
        size_t i = 0, count = json_object_size(v);
        json_object_keylen_foreach((json_t *)v, key, klen, val) {
            CT_TRY(indent(b, depth + 1));
            CT_TRY(ct_json_put_string(b, key, klen));
            CT_TRY(ct_jbuf_put(b, ": ", 2));
            CT_TRY(pretty(b, val, depth + 1));
            i++;
            CT_TRY(ct_jbuf_put(b, i < count ? ",\n" : "\n", i < count ? 2 : 1));
        }
        CT_TRY(indent(b, depth));
        return ct_jbuf_put(b, "}", 1);
    }
    if (json_is_array(v)) {
        size_t count = json_array_size(v);
        if (count == 0) return ct_jbuf_put(b, "[]", 2);
        CT_TRY(ct_jbuf_put(b, "[\n", 2));
        for (size_t i = 0; i < count; i++) {
            CT_TRY(indent(b, depth + 1));
            CT_TRY(pretty(b, json_array_get(v, i), depth + 1));
            CT_TRY(ct_jbuf_put(b, i + 1 < count ? ",\n" : "\n", i + 1 < count ? 2 : 1));
        }
        CT_TRY(indent(b, depth));
        return ct_jbuf_put(b, "]", 1);
    }
    return put_scalar(b, v);
}

ct_status ct_json_dump_pretty(const json_t *v, ct_jbuf *out) {
    if (!v) return ct_fail(CT_ERR_INVALID_ARG, "json: no value");
    CT_TRY(pretty(out, v, 0));
    return ct_jbuf_put(out, "\n", 1);
}

typedef struct kv {
    const char *key;
    size_t klen;
    json_t *val;
} kv;

static int kv_cmp(const void *a, const void *b) {
    const kv *x = a, *y = b;
    size_t m = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, m);
    if (c) return c;
    return (x->klen > y->klen) - (x->klen < y->klen);
}

static ct_status canonical(ct_jbuf *b, const json_t *v, int depth) {
    if (depth > 10000) return ct_fail(CT_ERR_LIMIT, "json: nesting too deep");
    if (json_is_object(v)) {
        size_t count = json_object_size(v);
        kv *items = count ? malloc(count * sizeof *items) : NULL;
        if (count && !items) return ct_fail(CT_ERR_OOM, "json: out of memory");
        size_t i = 0;
        const char *key;
        size_t klen;
        json_t *val;
        json_object_keylen_foreach((json_t *)v, key, klen, val) {
            items[i].key = key;
            items[i].klen = klen;
            items[i].val = val;
            i++;
        }
        if (count > 1) qsort(items, count, sizeof *items, kv_cmp);
        ct_status st = ct_jbuf_put(b, "{", 1);
        for (i = 0; st == CT_OK && i < count; i++) {
            if (i) st = ct_jbuf_put(b, ",", 1);
            if (st == CT_OK) st = ct_json_put_string(b, items[i].key, items[i].klen);
            if (st == CT_OK) st = ct_jbuf_put(b, ":", 1);
            if (st == CT_OK) st = canonical(b, items[i].val, depth + 1);
        }
        free(items);
        CT_TRY(st);
        return ct_jbuf_put(b, "}", 1);
    }
    if (json_is_array(v)) {
        CT_TRY(ct_jbuf_put(b, "[", 1));
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) CT_TRY(ct_jbuf_put(b, ",", 1));
            CT_TRY(canonical(b, json_array_get(v, i), depth + 1));
        }
        return ct_jbuf_put(b, "]", 1);
    }
    return put_scalar(b, v);
}

ct_status ct_json_dump_canonical(const json_t *v, ct_jbuf *out) {
    if (!v) return ct_fail(CT_ERR_INVALID_ARG, "json: no value");
    return canonical(out, v, 0);
}

ct_status ct_json_fingerprint(const json_t *v, char hex[65]) {
    ct_jbuf b = {0};
    ct_status st = ct_json_dump_canonical(v, &b);
    if (st == CT_OK) st = ct_sha256_hex(b.data ? b.data : "", b.len, hex);
    ct_jbuf_free(&b);
    return st;
}

ct_status ct_json_parse(const char *data, size_t len, json_t **out) {
    *out = NULL;
    json_error_t err;
    json_t *v = json_loadb(data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (!v)
        return ct_fail(CT_ERR_FORMAT, "JSON::ParserError: line %d column %d: %s", err.line, err.column,
                       err.text);
    *out = v;
    return CT_OK;
}

/* ---- builders --------------------------------------------------------- */

void ct_jset(json_t *obj, const char *key, json_t *v, int *ok) {
    if (!v) {
        *ok = 0;
        return;
    }
    if (json_object_set_new(obj, key, v) != 0) *ok = 0;
}

void ct_japp(json_t *arr, json_t *v, int *ok) {
    if (!v) {
        *ok = 0;
        return;
    }
    if (json_array_append_new(arr, v) != 0) *ok = 0;
}

json_t *ct_jstr_or_null(const char *s) { return s ? json_string(s) : json_null(); }

json_t *ct_jreal(double v) { return isfinite(v) ? json_real(v) : NULL; }
