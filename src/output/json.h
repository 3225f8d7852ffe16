/* json.h — the original's JSON text (PRODUCT-DETAILS §1.1, §3.2): a writer
 * over jansson value trees in two forms, and a parser front end.
 *
 *  - pretty: Ruby json's pretty_generate (two-space indent, "key": value,
 *    [] and {} when empty), keys in insertion order, plus a final "\n";
 *  - canonical: compact, every object's keys sorted by UTF-8 bytes (the
 *    text that payload_sha256 and the contract keys hash).
 * Strings are raw UTF-8 with minimal escaping; floats use the json 2.18
 * fpconv layout of the shortest round-trip digits (ct_json_format_double);
 * NaN and infinities are refused ("NaN not allowed in JSON").
 *
 * jansson keeps object keys in insertion order, so a tree built with
 * json_object_set_new in the documented order prints in that order.
 */
#ifndef CT_OUTPUT_JSON_H
#define CT_OUTPUT_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

/* A growable byte buffer (the rendered bytes handed to publication). */
typedef struct ct_jbuf {
    char *data; /* NUL-terminated when len > 0 or after any append */
    size_t len, cap;
} ct_jbuf;

void ct_jbuf_free(ct_jbuf *b);
CT_NODISCARD ct_status ct_jbuf_put(ct_jbuf *b, const void *p, size_t n);
CT_NODISCARD ct_status ct_jbuf_puts(ct_jbuf *b, const char *s);
/* Give the bytes away (caller frees); the buffer is left empty. */
char *ct_jbuf_take(ct_jbuf *b, size_t *len);

/* The json 2.18 text of a finite double into out (room for 32 bytes);
 * returns its length. CT_ERR_INVALID_ARG for NaN/Inf. */
CT_NODISCARD ct_status ct_json_format_double(double v, char out[32], size_t *len);

/* The shortest decimal digits that read back as |v| (finite, non-zero):
 * digits (no leading/trailing zeros, NUL-terminated, at most 17) and the
 * exponent K with |v| == digits × 10^K. Exposed for tests. */
void ct_json_shortest_digits(double v, char digits[24], int *K);

/* Append a JSON string literal (quotes included) of s[0..n). */
CT_NODISCARD ct_status ct_json_put_string(ct_jbuf *b, const char *s, size_t n);

/* Pretty form + "\n" of v appended to out. */
CT_NODISCARD ct_status ct_json_dump_pretty(const json_t *v, ct_jbuf *out);
/* Canonical compact sorted-key form of v appended to out (no newline). */
CT_NODISCARD ct_status ct_json_dump_canonical(const json_t *v, ct_jbuf *out);
/* sha256 hex of the canonical form (the "fingerprint" of §3.6). */
CT_NODISCARD ct_status ct_json_fingerprint(const json_t *v, char hex[65]);

/* Parse a complete document (any root, NUL characters allowed, duplicate
 * keys: the last wins as in Ruby). On failure returns CT_ERR_FORMAT with
 * "JSON::ParserError: <where>: <why>" as the message. */
CT_NODISCARD ct_status ct_json_parse(const char *data, size_t len, json_t **out);

/* Builder helpers: each records a failure (allocation, NULL value, a
 * non-finite real) in *ok and steals the reference to v either way. */
void ct_jset(json_t *obj, const char *key, json_t *v, int *ok);
void ct_japp(json_t *arr, json_t *v, int *ok);
/* json_string(s), or json_null() for NULL. */
json_t *ct_jstr_or_null(const char *s);
/* json_real(v) (NULL for a non-finite v, which ct_jset reports). */
json_t *ct_jreal(double v);

#endif
