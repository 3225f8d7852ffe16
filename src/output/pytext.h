/* pytext.h — Python's str semantics on UTF-8 text, as the original uses
 * them (PRODUCT-DETAILS conventions): whitespace is exactly str.isspace()
 * (U+0009–000D, U+001C–0020, U+0085, U+00A0, U+1680, U+2000–200A, U+2028,
 * U+2029, U+202F, U+205F, U+3000); strip, split (runs, empties dropped),
 * length in code points. A malformed UTF-8 byte counts as one
 * non-space code point.
 */
#ifndef CT_OUTPUT_PYTEXT_H
#define CT_OUTPUT_PYTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

int ct_py_isspace(uint32_t cp);

/* Decode one code point at s[0..n) (n > 0); returns the bytes used (>= 1). */
size_t ct_utf8_next(const char *s, size_t n, uint32_t *cp);

/* Number of code points. */
size_t ct_py_len(const char *s, size_t n);

/* The stripped range of s[0..n): *off and *len. */
void ct_py_strip_range(const char *s, size_t n, size_t *off, size_t *len);

/* A malloc'd stripped copy. */
CT_NODISCARD ct_status ct_py_strip(const char *s, char **out);

/* The last code point of s (0 if empty). */
uint32_t ct_py_last_char(const char *s, size_t n);

/* split(): fields as (offset, length) pairs into *fields (malloc'd, caller
 * frees); *count fields. */
typedef struct ct_py_field {
    size_t off, len;
} ct_py_field;
CT_NODISCARD ct_status ct_py_split(const char *s, size_t n, ct_py_field **fields, size_t *count);

#endif
